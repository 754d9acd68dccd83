"""Issue 29's page (research/quickstart-lift/README.md): every generated block, written from the committed summaries.

    python3 research/quickstart-lift/report.py           # rewrite the page's blocks
    python3 research/quickstart-lift/report.py --check   # exit 1, naming the stale blocks, if the page differs

The study is finished. Its rounds ran at commit f38078c, where each round's driver made the runs, summarised them
into data/ and wrote its own blocks; the page names those commands. What main keeps is the record: this writes
every block between ``<!-- BEGIN name -->`` and ``<!-- END name -->`` from data/ (and the first round's confirmation
in research/reading-search/data/), each verdict by its round's rule (``rules.py``), and the outcome table at the top.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rules  # noqa: E402
from rules import FIRST, IDLE, TARGET, TIME_LIMIT, confirmation, lifted, seeds, summary  # noqa: E402

PAGE = rules.HERE / "README.md"


def pct(x: float) -> str:
    return f"{x:.1%}"


def final(x: float) -> str:
    """A final accuracy, in italics below the target."""
    return pct(x) if x >= TARGET else f"*{pct(x)}*"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table."""
    return "\n".join(["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
                     + ["| " + " | ".join(row) + " |" for row in rows])


# -- a round's study: its arms, then seed by seed ---------------------------------------------------------------

def ratio(key: str):
    return lambda name, a: f"{a[key]:.2f}x"


def mean(key: str, places: int = 2):
    return lambda name, a: f"{a['mean_' + key]:.{places}f}"


def rl_seconds(name: str, a: dict) -> str:
    """The new arms ran side by side; base's RL seconds come from earlier sessions, under another load."""
    return "(earlier sessions)" if name == "base" else f"{a['median_rl_seconds']:.0f}"


RESPONSES = ("sampled responses vs `base`", ratio("cost_ratio"))
RL_SECONDS = ("RL seconds (median)", rl_seconds)
LATER = (RESPONSES, ("sampled entropy, 20%-40% of the run", mean("entropy_20_40")),
         ("share of groups trained, last fifth", mean("groups_share_last_fifth")), RL_SECONDS)
"""The arm table's columns from the fifth round on (the fourth round's readouts, read over the same share of a run
whatever its length)."""


def steps(run: dict) -> str:
    return str(run["warm"]["steps"])


def before(run: dict) -> str:
    return pct(run["before"])


def two_digit(run: dict) -> str:
    return pct(run["warm"]["accuracy"].get("level/2", 0))


def after(run: dict) -> str:
    return final(run["after"])


def shared_start(base: str, *leading) -> Callable[[dict], list]:
    """Seed columns where every arm started from ``base``'s warm start: ``leading`` read from it (header, cell of a
    run), then each arm's final."""
    def columns(result):
        return [(header, cell, (base,)) for header, cell in leading] + [(f"`{n}`", after, (n,)) for n in result["arms"]]
    return columns


def own_starts(result: dict) -> list:
    """Seed columns where each arm has its own warm start: steps, accuracy before RL and final, arm by arm."""
    names = tuple(result["arms"])
    return [("warm-start steps (" + " / ".join(f"`{n}`" for n in names) + ")", steps, names),
            ("before", before, names), ("final", after, names)]


def seed_table(result: dict, columns: list) -> str:
    """One row per seed; a column is (header, cell of a run, the arms whose runs it shows, joined by " / ")."""
    runs = result["runs"]
    return table(["seed"] + [header for header, _, _ in columns],
                 [[str(seed)] + [" / ".join(cell(runs[n][i]) for n in arms) for _, cell, arms in columns]
                  for i, seed in enumerate(result["seeds"])])


def sign_notes(result: dict) -> list[str]:
    return [f"* `{name}` against `base`, seed by seed: above on {s['above']}, below on {s['below']}, level on "
            f"{s['level']} (two-sided sign test p = {s['p']:.2g})." for name, s in rules.shifts(result).items()]


def warm_note(result: dict) -> list[str]:
    return ["* Warm starts, median over the seeds: " + "; ".join(
        f"`{n}` {a['median_warm_steps']:.0f} steps ({a['warm_ratio']:.2f}x `base`'s, limit {rules.WARM_LIMIT:.2f}x), "
        f"{pct(a['median_before'])} before RL" for n, a in result["arms"].items()) + "."]


def hole_note(result: dict) -> list[str]:
    return [f"* Hole scores of the warm starts (the look's `H`; a hole: below {rules.HOLE}): " + "; ".join(
        f"`{n}` median {a['median_hole_score']:.2f}, {a['warm_starts_with_a_hole']} of {len(a['hole_scores'])} "
        f"with a hole" for n, a in result["arms"].items()) + "."]


def diagnosis(result: dict) -> list[str]:
    """The first round's diagnosis of arm ``today`` (descriptive), as two paragraphs."""
    d, n = result["diagnosis"], len(result["seeds"])
    return ["Diagnosis, arm `today` (descriptive):", "\n".join([
        f"1. Warm-start quality: Spearman correlation of the final accuracy with the warm start's step count "
        f"{d['spearman_after_vs_warm_steps']}, with its 2-digit accuracy {d['spearman_after_vs_warm_level2']}, "
        f"with its 3-digit accuracy {d['spearman_after_vs_warm_level3']}.",
        "2. The learning rate: the arms above.",
        f"3. The cut-off: {d['rising_at_end']} of {n} runs still rose over their last 50 iterations, "
        f"{d['lagging_rising_at_end']} of the {d['n_lagging']} below 80%.",
        f"4. Evaluation noise: the binomial standard error of a 200-prompt accuracy at the median is "
        f"{d['eval_se_at_median'] * 100:.1f} points; a run's final evaluation is on average "
        f"{-d['last_minus_best'] * 100:.1f} points below its best.",
        f"5. The dynamic-sampling pool: iterations that trained fewer than 32 groups, "
        f"{pct(d['short_batches_lagging'] or 0)} in the runs below 80% against "
        f"{pct(d['short_batches_others'] or 0)} in the others."])]


def replication(result: dict) -> list[str]:
    return [f"Replication of the first round's diagnosis (arm `base`): Spearman correlation of the final accuracy "
            f"with the warm start's step count {result['spearman_after_vs_warm_steps']} (first round: -0.857)."]


SAME_START = ", every arm from the same warm start per seed."


@dataclass(frozen=True)
class Study:
    """How a round's study block reads its summary: the arm table's columns after the four every round has, the
    seed table's columns, and the lines under each table."""
    summary: str
    start: str                           # what the first line says of the warm starts
    columns: tuple
    seed_columns: Callable[[dict], list]
    notes: tuple = ()                    # functions of the summary: lines under the arm table
    tail: Callable[[dict], list] = lambda result: []   # paragraphs after the seed table
    base: str = "base"


STUDIES = {
    1: Study("study.json", SAME_START,
             (("RL seconds vs `today`", ratio("time_ratio")),
              ("iterations with < 32 groups", lambda name, a: pct(a["short_batches"]))),
             shared_start("today", ("warm-start steps", steps), ("warm start 2-digit", two_digit), ("before", before)),
             tail=diagnosis, base="today"),
    2: Study("round2.json", ".", (("warm-start steps vs `base`", ratio("warm_ratio")),
                                   ("RL seconds vs `base`", ratio("rl_ratio"))),
             lambda result: [("warm steps (2e-3 / 3e-3)", steps, ("base", "sft3e-3")),
                             ("before (2e-3 / 3e-3)", before, ("base", "sft3e-3"))]
             + [(f"`{n}`", after, (n,)) for n in result["arms"]],
             tail=replication),
    3: Study("round3.json", SAME_START,
             (RESPONSES, ("sampled entropy, iterations 51-100", mean("entropy_51_100")),
              ("groups trained, last 50 iterations", mean("groups_last50", 1))),
             shared_start("base", ("warm-start steps", steps), ("before", before))),
    4: Study("round4.json", SAME_START,
             (RESPONSES, ("sampled entropy, iterations 51-100", mean("entropy_51_100")),
              ("share of groups trained, last 50 iterations", mean("groups_share_last50")), RL_SECONDS),
             shared_start("base", ("warm-start steps", steps), ("before", before))),
    **{n: Study(f"round{n}.json", SAME_START, LATER, shared_start("base", ("warm-start steps", steps),
                                                                  ("before", before)), (sign_notes,))
       for n in (5, 6, 7)},
    8: Study("round8.json", ", each arm from its own warm start per seed (the same up to the step that reaches 30%).",
             LATER, own_starts, (sign_notes, warm_note)),
    9: Study("round9.json", ", each arm from its own warm start per seed.", LATER, own_starts,
             (sign_notes, warm_note, hole_note)),
}


def mark(name: str, result: dict, base: str) -> str:
    if name != result["pick"]:
        return ""
    return " **(kept)**" if name == base else " **(picked)**"


def study_block(number: int) -> str:
    """A round's study: the seeds, the arm table, its notes, the seed table, and what follows it."""
    spec = STUDIES[number]
    result = summary(spec.summary)
    seeds_ = result["seeds"]
    arms = table(["arm", "seeds at target (<= 40% -> >= 80%)", "median final", "lowest final"]
                 + [header for header, _ in spec.columns],
                 [[f"`{name}`{mark(name, result, spec.base)}", f"{a['met']} of {a['n']}", pct(a["median_after"]),
                   pct(a["min_after"])] + [cell(name, a) for _, cell in spec.columns]
                  for name, a in result["arms"].items()])
    notes = [line for note in spec.notes for line in note(result)]
    parts = [f"Seeds {seeds_[0]}-{seeds_[-1]} ({len(seeds_)} per arm){spec.start}", arms,
             *(["\n".join(notes)] if notes else []), seed_table(result, spec.seed_columns(result)),
             *spec.tail(result)]
    return "\n\n".join(parts)


# -- the README's command on seeds 0-19 ---------------------------------------------------------------------

def command_run(rows: list[dict], ran: str) -> str:
    """A run of the README's command (``ran``: the setting it ran with) against the issue's targets."""
    finals = [r["after"] for r in rows]
    minutes = [r["printed_min"] for r in rows]
    missed = ", ".join(f"{r['seed']} ({pct(r['after'])})" for r in rows if not lifted(r)) or "none"
    default = next(r for r in rows if r["seed"] == 1)
    return "\n".join([
        f"Seeds {rows[0]['seed']}-{rows[-1]['seed']}, the README's command with {ran}:", "",
        f"* **{sum(map(lifted, rows))} of {len(rows)}** seeds went from <= 40% to >= 80% (target: all); below 80%: "
        f"{missed}.",
        f"* Median final accuracy **{pct(statistics.median(finals))}** (target >= 88%); lowest {pct(min(finals))}.",
        f"* Printed totals {min(minutes):.1f}-{max(minutes):.1f} min, median {statistics.median(minutes):.1f} min; the "
        f"default seed (1): {default['printed_min']:.1f} min (targets: <= 2 min for the default seed, <= 2.5 for "
        f"any)."])


def first_lr() -> str:
    """The first round's pick as its confirmation names it ("lr 6e-4")."""
    lr = rules.ARMS[1][summary("study.json")["pick"]]["lr"]
    return f"lr {lr:.0e}".replace("e-0", "e-")


def first_confirmation() -> str:
    return command_run(seeds(FIRST), first_lr())


@dataclass(frozen=True)
class Confirmed:
    """A confirmed pick: what the command ran with, what goes back if it does not hold and which run the README's
    seed table then stays, what the quickstart keeps if it holds (by default what it ran), who "ended higher" (by
    default a seed with the pick), and whether the seed-by-seed split gets its sign test (the eighth round's
    protocol)."""
    ran: str
    back: str
    stays: str = "the idle run of the first round's recipe"
    keeps: str = ""
    mover: str = ""
    sign_test: bool = False

    @property
    def holds(self) -> str:
        return f"the quickstart keeps {self.keeps or self.ran}; the README's seed table is this confirmation."

    @property
    def fails(self) -> str:
        return f"{self.back}, and the README's seed table stays {self.stays}."


CONFIRMED = {
    2: Confirmed("the warm start's peak lr 3e-3 (RL lr 6e-4)", "the quickstart goes back to the warm-start lr 2e-3",
                 "the first round's confirmation", keeps="the warm-start lr 3e-3", mover="the new warm start"),
    4: Confirmed("a KL of 0.04 to the warm start", "the quickstart goes back to no KL",
                 keeps="the KL to the warm start"),
    5: Confirmed("64 prompts x 8 answers with 8 optimizer steps per rollout",
                 "the quickstart goes back to 32 prompts x 8 answers"),
    6: Confirmed("64 prompts x 4 answers with at most 2 extra sampling rounds",
                 "the quickstart goes back to 32 prompts x 8 answers"),
    8: Confirmed("the warm start stopping at 35%", "the warm start goes back to stopping at 30%",
                 "the sixth round's confirmation", sign_test=True),
}
AGAINST = {FIRST: "the first round's confirmation (the quickstart before this round, same seeds, same command)",
           confirmation(6): "the sixth round's confirmation (today's quickstart, same seeds, same command)"}
CLOCKS = {IDLE: "the idle run's ", confirmation(6): ""}


def confirmed_block(number: int) -> str:
    """A round's confirmation, against the one it had to match (and, where the rule has one, its clock), and the
    verdict by the rule. The lettered conditions (a) and (b) of a rule with a clock stand apart by a blank line."""
    spec = CONFIRMED[number]
    against, clock = rules.HELD_AGAINST[number]
    reference, new = seeds(against), seeds(confirmation(number))
    (met0, met1), (median0, median1), up, down = rules.versus(reference, new)
    sign = f" (two-sided sign test p = {rules.sign_test(up, down):.2g})" if spec.sign_test else ""
    lines = [f"* {'(a) ' if clock else ''}Against {AGAINST[against]}: **{met1} of {len(new)} against {met0} of "
             f"{len(reference)}** at target, median {pct(median1)} against {pct(median0)}; "
             f"{spec.mover or f'with {spec.ran} a seed'} ended higher on {up} seeds and lower on {down}{sign}."]
    if clock:
        wall = rules.median_wall(seeds(clock))
        lines.append(f"* (b) Median wall time per seed **{rules.median_wall(new):.1f} s** against {CLOCKS[clock]}"
                     f"{wall:.1f} s (limit {TIME_LIMIT * wall:.1f} s, {TIME_LIMIT:.2f}x).")
    lines.append(f"* **The pick holds**: {spec.holds}" if rules.held(number) else
                 f"* **The pick does not hold**: {spec.fails}")
    return command_run(new, spec.ran) + ("\n\n" if clock else "\n") + "\n".join(lines)


def idle_block() -> str:
    """The idle run of the command with the cheaper settle check: the rule's verdict, and its times."""
    first, idle = seeds(FIRST), seeds(IDLE)
    changed = rules.differing(first, idle)
    minutes = {r["seed"]: r["printed_min"] for r in idle}
    wall = {r["seed"]: r["wall_s"] for r in idle}
    over = [s for s, m in minutes.items() if m > 2.5]
    verdict = ("* **Every seed as in the first round's confirmation** (warm-start steps, accuracy before and after): "
               "the cheaper settle check stays." if not changed else
               f"* **Seeds {', '.join(map(str, changed))} differ from the first round's confirmation**: the cheaper "
               "settle check is reverted.")
    return "\n".join([
        f"Seeds {idle[0]['seed']}-{idle[-1]['seed']}, the README's command, one at a time, nothing else running:", "",
        verdict,
        f"* Printed totals {min(minutes.values()):.1f}-{max(minutes.values()):.1f} min, median "
        f"{statistics.median(minutes.values()):.1f} min; wall time with the interpreter's start "
        f"{min(wall.values()):.1f}-{max(wall.values()):.1f} s. The default seed (1): {minutes[1]:.1f} min "
        f"({wall[1]:.1f} s; target <= 2 min).",
        "* Above 2.5 min: " + (", ".join(f"seed {s} ({minutes[s]:.1f} min)" for s in over) if over else "none")
        + " (target: none).",
        f"* {sum(map(lifted, idle))} of {len(idle)} at target, median "
        f"{pct(statistics.median(r['after'] for r in idle))}."])


# -- the looks ---------------------------------------------------------------------------------------------------

DIGITS = ("ones", "tens", "hundreds", "thousands")
DIGIT_NAMES = {"o": "ones", "t": "tens", "h": "hundreds", "k": "carry out"}   # a class's first letter


def class_name(name: str) -> str:
    """A class of the readings ("t10") in words: the ones digit's class is its own column's sum, the others' the sum
    of the column below with its carry."""
    column = "its column" if name[0] == "o" else "the column below"
    return f"{DIGIT_NAMES[name[0]]}, {column} sums to {name[1:]}"


def holes_block() -> str:
    """The look at the warm starts' hole scores: per seed set, the rule's numbers; its verdict; every warm start."""
    result = summary("holes.json")
    names = {"study": "study 100-119 (one thread)", "confirm": "confirmation 0-19 less 1, 6, 17 (two threads)"}
    sets = table(["seeds", "runs", "failing (< 80%)", "Spearman `H` vs final", "AUC (failing below passing)",
                  "one-sided p", "median `H`, failing / passing", "hole & fail", "hole & pass", "no hole & fail",
                  "no hole & pass"],
                 [[names[which], str(s["n"]), str(s["failing"]), str(s["spearman"]), str(s["auc"]), str(s["auc_p"]),
                   f"{s['median_score_failing']:.2f} / {s['median_score_passing']:.2f}", str(s["hole_fail"]),
                   str(s["hole_pass"]), str(s["whole_fail"]), str(s["whole_pass"])]
                  for which, s in result["sets"].items()])
    verdict = (f"**The reading is {rules.holes_verdict(result['sets'])}** by the rule fixed above (supported: AUC >= "
               f"{rules.SUPPORT} in both sets; contradicted: AUC <= {rules.CONTRADICT} in either).")
    rows = table(["seed", "warm-start steps", "before", "final (today's quickstart)", "`H`", "its class"],
                 [[str(r["seed"]), str(r["steps"]), pct(r["before"]), final(r["after"]), f"{r['hole_score']:.2f}",
                   f"{DIGIT_NAMES[r['worst_class'][0]]}, column below sums to {r['worst_class'][1:]}"]
                  for r in sorted(result["rows"], key=lambda r: r["hole_score"])])
    prompted = "The seeds that prompted the question (not counted above): " + "; ".join(
        f"{r['seed']}: {pct(r['before'])} -> {pct(r['after'])}, `H` {r['hole_score']:.2f}"
        for r in sorted(result["prompted_rows"], key=lambda r: r["seed"])) + "."
    return "\n\n".join([sets, verdict, rows, prompted])


def weak_classes(digits: dict) -> str:
    """A failing run's weak classes, digit by digit: "tens: 0 (32.1%), 10 (13.6%); ..." (or "none")."""
    return "; ".join(f"{name}: " + ", ".join(f"{c['sum']} ({pct(c['accuracy'])})" for c in digits[name]["weak_classes"])
                     for name in DIGITS if digits[name]["weak_classes"]) or "none"


def failing_digits_block() -> str:
    result = summary("failing-digits.json")
    return table(["seed", "final", "prompts with the digit wrong: ones / tens / hundreds / thousands",
                  f"classes below {result['weak_below']:.0%} (digit: sum of the column that decides it, accuracy)"],
                 [[str(r["seed"]), pct(r["final"]), " / ".join(pct(r["digits"][n]["wrong"]) for n in DIGITS),
                   weak_classes(r["digits"])] for r in result["rows"]])


def named_class(p: float, name: str) -> str:
    return f"{p:.2f} ({class_name(name)})"


def hole_path_block() -> str:
    """What a hole is (every class of every warm start read) and whether it closes before 40% (three paths)."""
    result = summary("hole-path.json")
    low, th = result["any_class_below"], result["tens_hundreds_below"]
    counts = "\n".join([
        f"* Warm starts read: {result['warm_starts']} (the look's: seeds 0-19 with the README's command, 100-119 as "
        f"the study made them).",
        f"* With some class of some answer digit below {rules.HOLE} (mean probability of the right digit at T 0.7): "
        f"**{low['n']}**, of which **{low['passed']} passed** today's quickstart.",
        f"* With a tens or hundreds class below {rules.HOLE}: **{th['n']}**, of which {th['passed']} passed; the "
        f"spread of that class (mean total-variation distance of a prompt's digit distribution from the class's "
        f"mean; 0: the same distribution whatever the operands): " + ", ".join(f"{x:.2f}" for x in th["spread"])
        + f". The median spread of all tens and hundreds classes of a warm start, over all warm starts: "
        f"{result['median_spread_all']:.2f}."])
    rows = table(["seed", "final (today's quickstart)", "weakest class of any digit",
                  "weakest tens or hundreds class", "its spread"],
                 [[str(r["seed"]), final(r["after"]), named_class(r["weakest"], r["weakest_class"]),
                   named_class(r["tens_hundreds"], r["tens_hundreds_class"]), f"{r['tens_hundreds_spread']:.2f}"]
                  for r in sorted(result["rows"], key=lambda r: r["tens_hundreds"])])
    paths = table(["seed", "final (today's quickstart)", "same steps to 30% as committed", "at 30%", "at 35%", "at 40%",
                   "last read"],
                  [[str(p["seed"]), pct(p["after"]), "yes" if p["same_path"] else "no",
                    *("-" if v is None else f"{v['weakest']:.2f} ({v['class']}, step {v['step']})"
                      for v in p["at"].values()),
                    f"{p['last']['weakest']:.2f} ({p['last']['class']}, step {p['last']['step']}, "
                    f"{pct(p['last']['accuracy'])})"] for p in result["paths"]])
    paths_intro = ("The same warm start trained on past its stop, to 45% (study seeds; the weakest class of any digit "
                   "when 3-digit accuracy first reads 30%, 35% and 40%, and at the end):")
    return "\n\n".join([counts, rows, paths_intro, paths])


# -- the tenth round ------------------------------------------------------------------------------------------

def short(flat: list[str]) -> str:
    """The check's described classes, short: "tens after 0, 10; hundreds after 10 (spread 0.06-0.16)"."""
    found = [re.match(r"the (\w+) digit after a column summing to (\d+) \(p [\d.]+, spread ([\d.]+)", f).groups()
             for f in flat]
    digits = {d: sorted(int(b) for dd, b, _ in found if dd == d) for d in ("tens", "hundreds")}
    spreads = sorted(float(s) for *_, s in found)
    return ("; ".join(f"{d} after {', '.join(map(str, bs))}" for d, bs in digits.items() if bs)
            + f" (spread {spreads[0]:.2f}-{spreads[-1]:.2f})")


def redraw_study(result: dict) -> list[str]:
    """The scan, the checks, the flat-hole seeds' pairs and the study's rule."""
    scan, check, study = result["scan"], result["same_run_check"], result["study"]
    rows = [[str(r["seed"]),
             short(r["flat"]) if r["flat"] else "(the reading above) tens after 0, 10; hundreds after 10",
             pct(r["base"]["after"]), pct(r["redraw"]["after"]), str(r["redraw"]["warm_draws"]),
             f"{'-' if r['base']['seconds'] is None else r['base']['seconds']} / {r['redraw']['seconds']}"]
            for r in study]
    at = {k: sum(r[k]["after"] >= TARGET for r in study) for k in ("base", "redraw")}
    return ["\n".join([
        f"* **Scan:** {len(scan['seeds'])} new study seeds ({scan['seeds'][0]}-{scan['seeds'][-1]}), warm starts made "
        f"as the study makes them; the check flags " + (", ".join(map(str, scan["flagged"])) or "none") + ".",
        f"* **Checks:** on the 40 committed warm starts the check flags {result['committed_flags']['study']} (study) "
        f"and {result['committed_flags']['confirm']} (0-19), the reading's flat holes. `redraw` on study seed "
        f"{check['seed']}: {check['warm_steps']} warm-start steps, final {pct(check['after'])}; committed "
        f"{check['committed_warm_steps']} steps, {pct(check['committed_after'])}: "
        + ("the same run." if check["same"] else "**not the same run**.")]),
        table(["study seed", "flat classes at the first draw (the column below sums to)", "`base` final",
               "`redraw` final", "warm starts drawn", "`base` / `redraw` seconds (one thread, two jobs at a time)"],
              rows),
        f"**Study: `redraw` puts {at['redraw']} of {len(study)} flat-hole seeds at >= 80% against `base`'s "
        f"{at['base']} of {len(study)}; the rule says: {rules.redraw_rule(study)}.**"]


def redraw_confirmation(c: dict) -> list[str]:
    """The confirmation's seeds that ran with ``--redraw-flat 2``, and its rule's verdict."""
    rows = [[str(r["seed"]), str(r["draws"]), pct(r["before"]), final(r["after"]), final(r["today_after"]),
             f"{r['wall_s']} ({r['today_wall_s']})"] for r in c["rows"] if r["ran"]]
    verdict = (f"**Over 0-19: {c['at_target']} of 20 at >= 80% from <= 40% against today's {c['at_target_today']}; "
               f"median {pct(c['median'])} against {pct(c['median_today'])}; today's passing seeds lost: "
               f"{c['lost'] or 'none'}; seed 1 " + ("is today's run" if c["default_same"] else
                                                    "**differs from today's run**")
               + f". The rule says: {c['verdict']}.**")
    if c["probe_seconds"] is not None:
        verdict += (f"\nThe check itself took {c['probe_seconds']:.2f} s on seed 1's warm start (median of three, two "
                    f"threads, the machine otherwise idle).")
    return ["Confirmation, seeds 0-19 (the README's command with `--redraw-flat 2`, two threads, one at a time; seeds "
            "the check did not flag are today's committed rows, seed 1 run to check it):",
            table(["seed", "warm starts drawn", "before", "final with `redraw`", "final today",
                   "wall seconds (today)"], rows), verdict]


def round10_block() -> str:
    result = summary("round10.json")
    parts = redraw_study(result)
    if "confirmation" in result:   # recomputed from the confirmation's rows, by the rule
        parts += redraw_confirmation(rules.redraw_confirmation(result["confirmation"]["probe_seconds"]))
    return "\n\n".join(parts)


# -- the outcome table at the top -----------------------------------------------------------------------------

QUESTIONS = {
    1: "the RL peak learning rate: `lr6e-4`, `lr8e-4` against `today`'s 4e-4",
    2: "a faster warm start (peak lr 3e-3, `sft3e-3`), a flat RL learning rate (`rl-flat`), or both",
    3: "a higher sampling temperature: `t0.85`, `t1.0` against 0.7",
    4: "bigger groups (16 prompts x 16 answers, `g16`), or a KL of 0.04 to the warm start (`kl0.04`)",
    5: "more prompts per iteration: 64 x 4 answers (`g4`), or 64 x 8 with 8 steps over 125 rollouts (`p64`)",
    6: "groups of 4 at the quickstart's cost: 200 rollouts (`g4-i200`), or at most 2 extra sampling rounds (`g4-r2`)",
    7: "a larger step: peak lr 8e-4 (`lr8e-4`), or a learning-rate floor of 0.3x (`floor0.3`)",
    8: "a warm start that stops at 35% (`settle0.35`)",
    9: "a warm start on 3-digit sums only (`sft-l3`)",
    10: "a warm start with a flat hole drawn again, at most twice (`redraw`, `--redraw-flat 2`)",
}


def arm_result(name: str, a: dict, pick: str) -> str:
    text = f"`{name}` {a['met']}/{a['n']} ({pct(a['median_after'])}" + ("" if a["eligible"] else ", not eligible") + ")"
    return f"**{text}**" if name == pick else text


def study_result(number: int) -> str:
    """Per arm: seeds at target of the seeds read, and the median final; the rule's pick (or kept base) in bold."""
    result = summary(STUDIES[number].summary)
    return (f"{result['seeds'][0]}-{result['seeds'][-1]}: "
            + ", ".join(arm_result(name, a, result["pick"]) for name, a in result["arms"].items()))


def at_target(rows: list[dict]) -> str:
    return f"{sum(map(lifted, rows))}/{len(rows)} ({pct(statistics.median(r['after'] for r in rows))})"


def confirmation_result(number: int) -> str:
    """The confirmation against the one it had to match, and its median wall time against the limit."""
    against, clock = rules.HELD_AGAINST[number]
    new = seeds(confirmation(number))
    text = f"{at_target(new)} against {at_target(seeds(against))}"
    if clock:
        text += (f"; median wall {rules.median_wall(new):.1f} s (limit "
                 f"{TIME_LIMIT * rules.median_wall(seeds(clock)):.1f} s)")
    return text


def round_row(number: int) -> list[str]:
    """A round of the outcome table: its arms, the study, the confirmation and the verdict by its rules."""
    pick = summary(STUDIES[number].summary)["pick"]
    if pick == STUDIES[number].base:
        confirmed, verdict = "not run", f"`{pick}` kept: nothing changes"
    elif number == 1:   # the first round's pick became the default; its confirmation reports, it does not decide
        confirmed, verdict = at_target(seeds(FIRST)), f"**{first_lr()} adopted**; the targets not all met"
    elif rules.held(number):
        confirmed, verdict = confirmation_result(number), "**held**: today's quickstart, the README's seed table"
    else:
        confirmed, verdict = confirmation_result(number), f"not held: {CONFIRMED[number].back}"
    return [str(number), QUESTIONS[number], study_result(number), confirmed, verdict]


def idle_row() -> list[str]:
    same = not rules.differing(seeds(FIRST), seeds(IDLE))
    return ["check, after 3", "the settle check read from one teacher-forced pass (a third of a slow warm start's "
            "time went to greedy checks): the same numbers?", "-",
            ("every seed as in round 1's confirmation" if same else "seeds differ") + f": {at_target(seeds(IDLE))}",
            "the cheaper check stays" if same else "reverted"]


def holes_row() -> list[str]:
    sets = summary("holes.json")["sets"]
    return ["look, after 8", "does a hole in the warm start (a carry digit at chance) mark the seeds that fail?",
            f"AUC {sets['study']['auc']} on 100-119, {sets['confirm']['auc']} on 0-19 less 1, 6, 17 (supported: "
            f">= {rules.SUPPORT} in both)", "-", f"the reading is {rules.holes_verdict(sets)}"]


def failing_digits_row() -> list[str]:
    rows = summary("failing-digits.json")["rows"]

    def weak(r, names):
        return any(r["digits"][n]["weak_classes"] for n in names)
    groups = {"weak tens or hundreds classes": [r for r in rows if weak(r, ("tens", "hundreds"))],
              "weak ones classes only": [r for r in rows if weak(r, ("ones",)) and not weak(r, ("tens", "hundreds"))],
              "no weak class": [r for r in rows if not weak(r, DIGITS)]}
    return ["look, after 9", "where today's failing runs lose their points, digit by digit",
            "; ".join(f"{what}: " + ", ".join(str(r["seed"]) for r in group)
                      for what, group in groups.items() if group),
            "-", "descriptive"]


def hole_path_row() -> list[str]:
    result = summary("hole-path.json")
    low, th = result["any_class_below"], result["tens_hundreds_below"]
    path = result["paths"][0]
    return ["look, after 9", "what a hole is, and whether it closes before 40%",
            f"{low['n']} of {result['warm_starts']} warm starts have a class below {rules.HOLE} ({low['passed']} "
            f"passed); {th['n']} a tens or hundreds class, spreads " + ", ".join(f"{x:.2f}" for x in th["spread"])
            + f"; {path['seed']}'s stays at {path['at']['0.3']['weakest']:.2f} from 30% to "
            f"{pct(path['last']['accuracy'])}", "-", "descriptive"]


def round10_row() -> list[str]:
    result = summary("round10.json")
    study, c = result["study"], rules.redraw_confirmation(result["confirmation"]["probe_seconds"])
    at = {k: sum(r[k]["after"] >= TARGET for r in study) for k in ("base", "redraw")}
    lost = ", ".join(map(str, c["lost"]))
    return ["10", QUESTIONS[10],
            f"{len(study)} flat-hole seeds: **`redraw` {at['redraw']}/{len(study)}**, `base` {at['base']}/{len(study)}",
            f"{c['at_target']}/20 ({pct(c['median'])}) against {c['at_target_today']}/20 ({pct(c['median_today'])})"
            + (f"; lost {lost}" if lost else ""),
            "**adopted**" if c["verdict"] == "adopt" else "not adopted: today's quickstart kept (and the switch "
            "left the package after `f38078c`)"]


def outcomes_block() -> str:
    """One row per round and per descriptive look, in the order they ran."""
    rows = [round_row(n) for n in (1, 2, 3)] + [idle_row()] + [round_row(n) for n in range(4, 9)] + [holes_row()]
    rows += [round_row(9), failing_digits_row(), hole_path_row(), round10_row()]
    return table(["round", "question / arm", "study result", "confirmation on seeds 0-19", "verdict"], rows)


# -- the page ------------------------------------------------------------------------------------------------------

BLOCKS = {
    "outcomes": outcomes_block,
    "study": lambda: study_block(1),
    "confirmation": first_confirmation,
    "round2": lambda: study_block(2),
    "confirmation2": lambda: confirmed_block(2),
    "round3": lambda: study_block(3),
    "idle": idle_block,
    "round4": lambda: study_block(4),
    "confirmation4": lambda: confirmed_block(4),
    "round5": lambda: study_block(5),
    "confirmation5": lambda: confirmed_block(5),
    "round6": lambda: study_block(6),
    "confirmation6": lambda: confirmed_block(6),
    "round7": lambda: study_block(7),
    "round8": lambda: study_block(8),
    "confirmation8": lambda: confirmed_block(8),
    "holes": holes_block,
    "round9": lambda: study_block(9),
    "failing-digits": failing_digits_block,
    "hole-path": hole_path_block,
    "round10": round10_block,
}
"""Every generated block of the page, in the page's order, and what writes it."""


def block(name: str) -> re.Pattern:
    """A block on the page: its BEGIN line, what lies between, its END line (markers on lines of their own)."""
    return re.compile(rf"^(<!-- BEGIN {re.escape(name)} -->\n)(.*?\n)?(<!-- END {re.escape(name)} -->)$", re.S | re.M)


def regenerate(page: str) -> tuple[str, list[str]]:
    """``page`` with every block written from the record, and the names of the blocks that changed. A block on the
    page that nothing writes, or one written here that the page lacks, is an error: it would pass every check
    unseen."""
    found = re.findall(r"^<!-- BEGIN (\S+) -->$", page, re.M)
    if found != list(BLOCKS):
        raise SystemExit(f"{PAGE.name}: its blocks {found} are not the ones report.py writes, in order: {list(BLOCKS)}")
    stale = []
    for name, write in BLOCKS.items():
        old = block(name).search(page)
        if old is None:
            raise SystemExit(f"{PAGE.name}: block '{name}' has no <!-- END {name} --> line")
        text = write() + "\n"
        if old.group(2) != text:
            stale.append(name)
        page = page[:old.start(2) if old.group(2) is not None else old.end(1)] + text + page[old.start(3):]
    return page, stale


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1, naming the stale blocks, if the page differs")
    args = ap.parse_args(argv)
    new, stale = regenerate(PAGE.read_text())
    where = PAGE.relative_to(rules.ROOT) if PAGE.is_relative_to(rules.ROOT) else PAGE
    if args.check:
        if stale:
            print(f"{where}: stale blocks: {', '.join(stale)}; run: python3 research/quickstart-lift/report.py")
        return 1 if stale else 0
    PAGE.write_text(new)
    print(f"{where}: " + (f"rewrote {', '.join(stale)}" if stale else "every block as it was"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
