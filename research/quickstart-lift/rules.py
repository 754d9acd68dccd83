"""Issue 29's rules and verdicts (research/quickstart-lift/README.md), as functions of the committed summaries.

Each round fixed its rule before its runs. The drivers that ran the rounds and applied the rules to their run folders
are at commit f38078c (the page says how to run them); what stays on main is what every verdict on the page follows
from, so that ``report.py`` writes the verdicts from the committed rows and tests/test_quickstart_lift.py checks
them again. Nothing here imports torch or the package: reading the record needs neither.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from itertools import combinations
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = HERE / "data"
sys.path.insert(0, str(HERE))

from quickstart_seeds import TARGET, lifted  # noqa: E402  (one meaning of "at target": the README table's)

FIRST = ROOT / "research" / "reading-search" / "data" / "quickstart-seeds.json"
"""The first round's confirmation (seeds 0-19, the README's command with lr 6e-4): rounds 2-6 were held to it."""
IDLE = DATA / "idle-seeds.json"
"""The same command on seeds 0-19 with nothing else running (after the third round): the clock of rounds 4-6."""

COST_LIMIT = 1.15   # rounds 3-9: an arm is eligible if its median sampled responses are within this of base's
WARM_LIMIT = 1.15   # rounds 8-9: ... and its median warm-start steps
TIME_LIMIT = 1.10   # rounds 4-8: a pick holds only if its median wall time per seed is within this of its clock's


# -- what ran ---------------------------------------------------------------------------------------------------

AS_RAN = {"beta": 0.0, "iterations": 250, "eval_every": 10, "prompts": 32, "group_size": 8, "minibatches": 4,
          "max_resample_rounds": 3}
"""The quickstart's RL settings as every round's runs passed them (rounds 1-6 ran them as they are; from the seventh
round on, ``base`` adds the sixth round's pick). An arm's overrides below go on top."""
WARM_AS_RAN = {"settle_at": 0.30}
"""The quickstart's warm start as every round ran it unless its arm changed it: stop once 3-digit accuracy is 30%."""

G4 = {"prompts": 64, "group_size": 4}
BASE = G4 | {"max_resample_rounds": 2}
"""Today's quickstart on top of ``AS_RAN``: the sixth round's pick, ``base`` of rounds 7-9."""
ARMS = {
    1: {"today": {}, "lr6e-4": {"lr": 6e-4}, "lr8e-4": {"lr": 8e-4}},
    2: {"base": {}, "sft3e-3": {}, "rl-flat": {"min_lr_frac": 1.0}, "sft3e-3+rl-flat": {"min_lr_frac": 1.0}},
    3: {"t0.85": {"temperature": 0.85}, "t1.0": {"temperature": 1.0}},
    4: {"g16": {"prompts": 16, "group_size": 16}, "kl0.04": {"beta": 0.04}},
    5: {"g4": G4, "p64": {"prompts": 64, "minibatches": 8, "iterations": 125, "eval_every": 5}},
    6: {"g4": G4, "g4-i200": G4 | {"iterations": 200}, "g4-r2": BASE},
    7: {"lr8e-4": BASE | {"lr": 8e-4}, "floor0.3": BASE | {"min_lr_frac": 0.3}},
    8: {"settle0.35": BASE},
    9: {"sft-l3": BASE},
}
"""Per round, each arm's RL settings on top of ``AS_RAN`` (rounds 1 and 2: every arm, ``base`` included; later
rounds: the new arms, whose ``base`` rows are earlier runs)."""
WARM_ARMS = {
    2: {"sft3e-3": {"lr": 3e-3}, "sft3e-3+rl-flat": {"lr": 3e-3}},
    8: {"settle0.35": {"settle_at": 0.35}},
    9: {"sft-l3": {"levels": "3"}},
}
"""The arms whose change was the warm start's: its SFTConfig or QuickstartConfig fields."""


def summary(name: str) -> dict:
    """A committed summary of ``data/``."""
    return json.loads((DATA / name).read_text())


def seeds(path: Path) -> list[dict]:
    """The per-seed rows of a run of the README's command (``quickstart_seeds.py --json``)."""
    return json.loads(path.read_text())["seeds"]


def confirmation(number: int) -> Path:
    return DATA / f"confirm-round{number}.json"


# -- the confirmations --------------------------------------------------------------------------------------------

HELD_AGAINST = {2: (FIRST, None), 4: (FIRST, IDLE), 5: (FIRST, IDLE), 6: (FIRST, IDLE),
                8: (confirmation(6), confirmation(6))}
"""Per confirmed round: the confirmation its pick had to match on the rule's ordering, and the run whose median wall
time per seed bounds it (None: no time rule; the second round's rule, added while it ran, had none)."""


def ordering(rows: list[dict]) -> tuple[int, float]:
    """The rules' ordering: seeds at target, then the median final accuracy."""
    return sum(map(lifted, rows)), statistics.median(r["after"] for r in rows)


def median_wall(rows: list[dict]) -> float:
    return statistics.median(r["wall_s"] for r in rows)


def confirmation_holds(reference: list[dict], new: list[dict], clock: list[dict] | None = None) -> bool:
    """A pick stays only if its confirmation ``new`` is at least as good as ``reference`` on the same seeds (the
    ordering above) and, given a ``clock``, its median wall time per seed is at most TIME_LIMIT x the clock's."""
    in_time = clock is None or median_wall(new) <= TIME_LIMIT * median_wall(clock)
    return ordering(new) >= ordering(reference) and in_time


def held(number: int) -> bool:
    """Whether round ``number``'s pick held on seeds 0-19, by its rule."""
    reference, clock = HELD_AGAINST[number]
    return confirmation_holds(seeds(reference), seeds(confirmation(number)), clock and seeds(clock))


def versus(reference: list[dict], new: list[dict]) -> tuple[list[int], list[float], int, int]:
    """Two runs of the command on the same seeds: seeds at target and median of each, and on how many seeds the
    second ended higher and lower."""
    assert [r["seed"] for r in reference] == [r["seed"] for r in new]
    (met0, med0), (met1, med1) = ordering(reference), ordering(new)
    up = sum(b["after"] > a["after"] for a, b in zip(reference, new))
    down = sum(b["after"] < a["after"] for a, b in zip(reference, new))
    return [met0, met1], [med0, med1], up, down


def differing(first: list[dict], second: list[dict]) -> list[int]:
    """The seeds whose warm-start steps or accuracies before and after differ between two runs of the command (the
    cheaper settle check stayed only if none did)."""
    assert [r["seed"] for r in first] == [r["seed"] for r in second]
    keys = ("warm_steps", "before", "after")
    return [a["seed"] for a, b in zip(first, second) if any(a[k] != b[k] for k in keys)]


# -- seed by seed ---------------------------------------------------------------------------------------------------

def sign_test(up: int, down: int) -> float:
    """Two-sided exact sign test: the chance, with no shift, of a split of ``up + down`` seeds (ties left out) at
    least as uneven as this one."""
    n, k = up + down, max(up, down)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n)


def shifts(result: dict) -> dict:
    """Per arm but ``base``, the seeds that ended above, below and level with ``base``, and the sign test of that
    split (rounds 5-9's readout; it chooses nothing)."""
    base = [r["after"] for r in result["runs"]["base"]]
    out = {}
    for name in result["arms"]:
        if name != "base":
            after = [r["after"] for r in result["runs"][name]]
            up, down = sum(a > b for a, b in zip(after, base)), sum(a < b for a, b in zip(after, base))
            out[name] = {"above": up, "below": down, "level": len(base) - up - down, "p": sign_test(up, down)}
    return out


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rank correlation (ties share their mean rank), to three places; None below 3 pairs."""
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r
    if len(xs) < 3:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return round(num / den, 3) if den else None


# -- the look at the warm starts' holes ---------------------------------------------------------------------------

PROMPTED = (1, 6, 17)   # the seeds that prompted the look: read, not counted
HOLE_SETS = {"study": list(range(100, 120)), "confirm": [s for s in range(20) if s not in PROMPTED]}
MIN_CLASS = 20          # a class needs this many of the probe's 3,000 prompts to count
HOLE = 0.2              # a warm start has a hole if its lowest class mean is below this
SUPPORT, CONTRADICT = 0.8, 0.6   # the look's AUC thresholds, fixed before it ran


def committed_outcomes(which: str) -> dict[int, dict]:
    """seed -> {"steps", "before", "after"} of today's quickstart's committed run on that seed: the sixth round's
    ``g4-r2`` on the study seeds, its confirmation on 0-19 (what the looks pair each warm start with)."""
    if which == "study":
        return {r["seed"]: {"steps": r["warm"]["steps"], "before": r["before"], "after": r["after"]}
                for r in summary("round6.json")["runs"]["g4-r2"]}
    return {r["seed"]: {"steps": r["warm_steps"], "before": r["before"], "after": r["after"]}
            for r in seeds(confirmation(6))}


def hole_score(classes: dict[str, dict]) -> tuple[float, str]:
    """The lowest class mean probability among classes with at least MIN_CLASS prompts, and that class."""
    counted = {c: v["p"] for c, v in classes.items() if v["n"] >= MIN_CLASS}
    worst = min(counted, key=counted.get)
    return counted[worst], worst


def auc(failing: list[float], passing: list[float]) -> float:
    """The probability that a failing run's score is below a passing run's (ties count half)."""
    pairs = [(f < p) + 0.5 * (f == p) for f in failing for p in passing]
    return sum(pairs) / len(pairs)


def auc_p(scores: list[float], failed: list[bool]) -> float:
    """One-sided exact permutation p of the AUC: the share of ways to pick which runs failed (as many as did) whose
    AUC is at least the observed one."""
    def split(chosen):
        return ([scores[i] for i in chosen], [s for i, s in enumerate(scores) if i not in chosen])
    observed = auc(*split({i for i, f in enumerate(failed) if f}))
    draws = [auc(*split(set(chosen))) for chosen in combinations(range(len(scores)), sum(failed))]
    return sum(value >= observed - 1e-12 for value in draws) / len(draws)


def summarize_holes(rows: list[dict]) -> dict:
    """One seed set of the look: its hole scores against its outcomes (the committed ``sets`` of holes.json)."""
    scores = [r["hole_score"] for r in rows]
    failed = [r["after"] < TARGET for r in rows]
    fail_scores = [s for s, f in zip(scores, failed) if f]
    pass_scores = [s for s, f in zip(scores, failed) if not f]
    holes = [s < HOLE for s in scores]
    both = fail_scores and pass_scores
    return {"n": len(rows), "failing": sum(failed), "spearman": spearman(scores, [r["after"] for r in rows]),
            "auc": round(auc(fail_scores, pass_scores), 3) if both else None,
            "auc_p": round(auc_p(scores, failed), 4) if both else None,
            "median_score_failing": statistics.median(fail_scores) if fail_scores else None,
            "median_score_passing": statistics.median(pass_scores) if pass_scores else None,
            "hole_fail": sum(h and f for h, f in zip(holes, failed)),
            "hole_pass": sum(h and not f for h, f in zip(holes, failed)),
            "whole_fail": sum(not h and f for h, f in zip(holes, failed)),
            "whole_pass": sum(not h and not f for h, f in zip(holes, failed))}


def holes_verdict(sets: dict) -> str:
    """The look's rule: supported if both sets give AUC >= SUPPORT, contradicted if either gives <= CONTRADICT."""
    aucs = [s["auc"] for s in sets.values()]
    if any(a is None for a in aucs):
        return "open"
    if all(a >= SUPPORT for a in aucs):
        return "supported"
    return "contradicted" if any(a <= CONTRADICT for a in aucs) else "open"


# -- where the failing runs lose their points; what a hole is ----------------------------------------------------

FAILING = {"confirm": (6, 14, 17), "study": (101, 112, 115)}   # today's quickstart's failing runs, reread
WEAK = 0.5              # a class of an answer digit is weak below this greedy accuracy
READ_SETS = {"study": list(range(100, 120)), "confirm": list(range(20))}   # the warm starts the hole path read
PATH_SEEDS = (112, 101, 115)   # the study's failing seeds, whose warm starts trained on past their stop


def committed_final(seed: int) -> float:
    """The committed final accuracy of today's quickstart on a failing seed (a rerun had to end there)."""
    which = "confirm" if seed in FAILING["confirm"] else "study"
    return committed_outcomes(which)[seed]["after"]


def digit_hole(classes: dict[str, dict]) -> tuple[float, str, float]:
    """The weakest tens or hundreds class counted: its p, name and spread."""
    counted = {c: v for c, v in classes.items() if c[0] in "th" and v["n"] >= MIN_CLASS}
    worst = min(counted, key=lambda c: counted[c]["p"])
    return counted[worst]["p"], worst, counted[worst]["spread"]


def warm_row(read: dict) -> dict:
    """One warm start's row of hole-path.json, from its reading (seed, set, committed outcome, classes)."""
    low, low_class = hole_score(read["classes"])   # the weakest class of any answer digit
    hole, hole_class, hole_spread = digit_hole(read["classes"])
    counted = [v for c, v in read["classes"].items() if c[0] in "th" and v["n"] >= MIN_CLASS]
    return {"set": read["set"], "seed": read["seed"], "after": read["after"], "passed": read["after"] >= TARGET,
            "weakest": low, "weakest_class": low_class, "tens_hundreds": hole, "tens_hundreds_class": hole_class,
            "tens_hundreds_spread": hole_spread, "median_spread": statistics.median(v["spread"] for v in counted),
            "steps": read["steps"], "before": read["before"], "classes": read["classes"]}


def summarize_reading(rows: list[dict]) -> dict:
    """The counts the hole-path block states, from its per-warm-start rows."""
    below = [r for r in rows if r["weakest"] < HOLE]
    low = [r for r in rows if r["tens_hundreds"] < HOLE]
    return {"warm_starts": len(rows),
            "any_class_below": {"n": len(below), "passed": sum(r["passed"] for r in below)},
            "tens_hundreds_below": {"n": len(low), "passed": sum(r["passed"] for r in low),
                                    "spread": sorted(r["tens_hundreds_spread"] for r in low)},
            "median_spread_all": statistics.median(r["median_spread"] for r in rows)}


# -- the tenth round ----------------------------------------------------------------------------------------------

def redraw_rule(study: list[dict]) -> str:
    """The study's rule on its flat-hole seeds: confirm ``redraw`` if it puts more of them at target than ``base``."""
    at = {kind: sum(r[kind]["after"] >= TARGET for r in study) for kind in ("base", "redraw")}
    return "confirm" if at["redraw"] > at["base"] else "stop"


def redraw_row(seed: int, ran: dict | None, today: dict) -> dict:
    """Seed ``seed`` of the confirmation: its run with ``--redraw-flat 2`` if it ran one, else today's row (a seed
    the check does not flag is today's run, by construction)."""
    row = ran or today
    return {"seed": seed, "ran": ran is not None, "draws": row.get("warm_draws", 1), "before": row["before"],
            "after": row["after"], "printed_min": row["printed_min"], "wall_s": row["wall_s"],
            "today_after": today["after"], "today_wall_s": today["wall_s"]}


def redraw_confirmation(probe_seconds: float | None) -> dict:
    """Seeds 0-19 with ``redraw`` and the rule: adopt it only if more seeds end at target than today's and none of
    today's passing seeds falls below (``probe_seconds``: the check's own time, measured once)."""
    today = {r["seed"]: r for r in seeds(confirmation(6))}
    ran = {r["seed"]: r for r in seeds(confirmation(10))}
    rows = [redraw_row(seed, ran.get(seed), today[seed]) for seed in range(20)]
    at, at_today = sum(map(lifted, rows)), sum(map(lifted, today.values()))
    lost = [r["seed"] for r in rows if r["today_after"] >= TARGET > r["after"]]
    default = rows[1]   # seed 1, the command's default
    return {"rows": rows, "at_target": at, "at_target_today": at_today, "lost": lost,
            "median": statistics.median(r["after"] for r in rows),
            "median_today": statistics.median(r["after"] for r in today.values()),
            "default_same": default["ran"] and default["after"] == today[1]["after"] and default["draws"] == 1,
            "probe_seconds": probe_seconds, "verdict": "adopt" if at > at_today and not lost else "keep today's"}
