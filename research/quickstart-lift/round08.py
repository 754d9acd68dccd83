"""Issue 29, eighth round: a warm start that stops at 35% instead of 30%.

The protocol, the arm, the selection rule and the seeds are in ``research/quickstart-lift/README.md`` ("Eighth round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 research/quickstart-lift/round08.py run    --seeds 100-119 --jobs 2 [--until HH:MM]
    python3 research/quickstart-lift/round08.py report --out research/quickstart-lift/data/round8.json
    python3 research/quickstart-lift/round08.py doc [--check]     # the page's round-8 blocks, from the JSON records

Unlike the third to seventh rounds, the change is the warm start's: each seed gets a new warm start, the quickstart's
recipe with ``settle_at`` 0.35 (``runs/lift8/warm-settle0.35``), and the arm is today's RL stage from it. Up to
the step where 3-digit accuracy first reaches 30%, that warm start trains exactly as today's (same seed, same data,
same schedule: the settle check reads the model and draws nothing), so the arm is today's warm start trained on
until 35%. ``base``'s rows are the sixth round's runs of today's quickstart (``g4-r2``) from today's warm starts.
``run`` goes seed by seed, two seeds at a time, each seed's warm start and then its RL run (one torch thread each).
The report and the rule are the third round's with one more eligibility limit (warm-start steps), the description
and the sign test the fifth round's.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402  (the first round: target, the settings as they ran, page helpers)
import round02 as round2  # noqa: E402  (one job in its own process, one RL run's row, the head-to-head)
import round03 as round3  # noqa: E402  (the report, the rule, the seed table, the time budget)
import round04 as round4  # noqa: E402  (the round's table, the median wall time)
import round05 as round5  # noqa: E402  (the description, the sign test)
import round06 as round6  # noqa: E402  (the sixth round: its pick, this round's base, and its rows)

from minitepo.lab.compare import parse_seed_list  # noqa: E402

RUNS = ROOT / "runs" / "lift8"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "round8.json"
CONFIRM = ROOT / "research" / "quickstart-lift" / "data" / "confirm-round8.json"   # the confirmation of this round's pick (seeds 0-19)
SETTLE_AT = 0.35                     # the one change: the warm start stops once 3-digit accuracy reaches this
WARM = RUNS / f"warm-settle{SETTLE_AT}"
BASE = round6.ARMS["g4-r2"]          # today's RL settings beyond round1.AS_RAN (the sixth round's pick)
ARMS = {f"settle{SETTLE_AT}": BASE}  # name: RLConfig overrides, today's; the arm's change is its warm start
WARM_LIMIT = 1.15                    # an arm is eligible only if its median warm-start steps are within this of base's
TIME_LIMIT = round4.TIME_LIMIT       # the pick stays only if its median wall time per seed is within this (1.10x)
CONFIRMED = f"the warm start stopping at {SETTLE_AT:.0%}"   # what the confirmation runs, if the rule picks the arm


def row_path(arm: str, seed: int) -> Path:
    if arm == "base":
        return round6.row_path("g4-r2", seed)
    return (WARM if arm == "warm" else RUNS / arm) / f"seed{seed}.json"


# -- one job, in its own process -----------------------------------------------------------------------------

def job(kind: str, seed: int) -> None:
    """One job: the seed's warm start stopping at SETTLE_AT (``warm``), or the arm's RL run from it."""
    path = row_path(kind, seed)
    row = (round1.warm_row(seed, WARM, settle_at=SETTLE_AT) if kind == "warm"
           else round2.rl_row(kind, seed, WARM, ARMS[kind], path.with_suffix("")))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(row))


# -- the driver ---------------------------------------------------------------------------------------------

def run(seeds: list[int], n_jobs: int, until: str | None, arms=ARMS, row=row_path, script: str = __file__) -> None:
    """``n_jobs`` seeds at a time, each its warm start and then its RL run (``script job KIND SEED``, rows at
    ``row(kind, seed)``); no seed begins after ``until``. The ninth round's driver passes its own arms and rows."""
    end = round3.deadline(until)

    def one_seed(seed: int) -> None:
        if end is not None and time.time() >= end:
            print(f"{time.strftime('%H:%M:%S')} time budget: seed {seed} not begun", flush=True)
            return
        for kind in ("warm", *arms):
            round2.run_job(kind, seed, script=script, path=row(kind, seed))

    with ThreadPoolExecutor(n_jobs) as pool:
        list(pool.map(one_seed, seeds))


def warm_start_report(new_arms=ARMS, row=row_path, describe=round5.mechanism) -> dict:
    """The third round's report over the seeds the new arms finished, then the warm starts' steps and accuracy
    before RL per arm, the extra limit on warm-start steps, and the rule's pick again with it (also the ninth
    round's)."""
    result = round3.report(None, new_arms=new_arms, row=row, describe=describe)
    arms = result["arms"]
    for name, a in arms.items():
        runs = result["runs"][name]
        a["median_warm_steps"] = statistics.median(r["warm"]["steps"] for r in runs)
        a["median_before"] = statistics.median(r["before"] for r in runs)
    for a in arms.values():
        a["warm_ratio"] = round(a["median_warm_steps"] / arms["base"]["median_warm_steps"], 3)
        a["eligible"] = a["eligible"] and a["warm_ratio"] <= WARM_LIMIT
    result["pick"] = round3.rule_pick(arms, new_arms)
    return result


def report(out: Path | None) -> dict:
    """``warm_start_report`` of this round, written to ``out``."""
    result = warm_start_report()
    arms, pick = result["arms"], result["pick"]
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
    for name, a in arms.items():
        print(f"{name:14s} warm steps {a['median_warm_steps']} (x{a['warm_ratio']})  before {a['median_before']:.3f}  "
              f"eligible {a['eligible']}")
    print("pick (with the warm-start limit):", pick)
    return result


def seed_table(result: dict) -> str:
    """Per seed: each arm's warm-start steps, accuracy before RL and final (below target in italics)."""
    pct, names = round1.pct, list(result["arms"])
    lines = ["| seed | warm-start steps (" + " / ".join(f"`{n}`" for n in names) + ") | before | final |",
             "|---|---|---|---|"]
    for i, seed in enumerate(result["seeds"]):
        runs = [result["runs"][n][i] for n in names]
        lines.append(f"| {seed} | " + " / ".join(str(r["warm"]["steps"]) for r in runs) + " | "
                     + " / ".join(pct(r["before"]) for r in runs) + " | "
                     + " / ".join(pct(r["after"]) if r["after"] >= round1.TARGET else f"*{pct(r['after'])}*"
                                  for r in runs) + " |")
    return "\n".join(lines)


OWN_START = "each arm from its own warm start per seed (the same up to the step that reaches 30%)."


def markdown(result: dict, more_notes: tuple[str, ...] = (), own_start: str = OWN_START) -> str:
    """The fifth round's tables and sign test, a line on the warm starts (then ``more_notes``), and this round's
    seed table (each arm's own warm start, as ``own_start`` says; also the ninth round's)."""
    arms = result["arms"]
    notes = [f"* `{name}` against `base`, seed by seed: above on {s['above']}, below on {s['below']}, level on "
             f"{s['level']} (two-sided sign test p = {s['p']:.2g})." for name, s in round5.shifts(result).items()]
    notes += [f"* Warm starts, median over the seeds: " + "; ".join(
        f"`{n}` {a['median_warm_steps']:.0f} steps ({a['warm_ratio']:.2f}x `base`'s, limit {WARM_LIMIT:.2f}x), "
        f"{round1.pct(a['median_before'])} before RL" for n, a in arms.items()) + ".", *more_notes]
    head, old_table = round4.markdown(result, round5.DESCRIBED, notes), round3.seed_table(result)
    same = "every arm from the same warm start per seed."
    assert head.endswith(old_table) and same in head
    head = head.replace(same, own_start)
    return head[:-len(old_table)] + seed_table(result)


def pick_holds(today: list[dict], new: list[dict]) -> bool:
    """The confirmation's rule (committed with the protocol): the pick stays only if (a) its confirmation ``new`` is
    at least as good as today's quickstart's on the same seeds (``today``, the sixth round's confirmation): seeds at
    target, then the median; and (b) its median wall time per seed is at most TIME_LIMIT x today's."""
    return round2.pick_holds(today, new) and round4.median_wall(new) <= TIME_LIMIT * round4.median_wall(today)


def confirmation_block(today: list[dict], new: list[dict]) -> str:
    pct = round1.pct
    met, med, up, down = round2.versus(today, new)
    limit = TIME_LIMIT * round4.median_wall(today)
    return "\n".join([
        round1.confirmation(new, CONFIRMED), "",
        f"* (a) Against the sixth round's confirmation (today's quickstart, same seeds, same command): **{met[1]} of "
        f"{len(new)} against {met[0]} of {len(today)}** at target, median {pct(med[1])} against {pct(med[0])}; with "
        f"{CONFIRMED} a seed ended higher on {up} seeds and lower on {down} (two-sided sign test p = "
        f"{round5.sign_test(up, down):.2g}).",
        f"* (b) Median wall time per seed **{round4.median_wall(new):.1f} s** against {round4.median_wall(today):.1f} s "
        f"(limit {limit:.1f} s, {TIME_LIMIT:.2f}x).",
        f"* **The pick holds**: the quickstart keeps {CONFIRMED}; the README's seed table is this confirmation."
        if pick_holds(today, new) else
        "* **The pick does not hold**: the warm start goes back to stopping at 30%, and the README's seed table stays "
        "the sixth round's confirmation."])


def doc(check: bool) -> int:
    """The page's blocks of this round: the study and, once recorded, its confirmation."""
    page = round1.replace_block(round1.PAGE.read_text(), "round8", markdown(json.loads(SUMMARY.read_text())))
    if CONFIRM.is_file():
        today, new = (json.loads(p.read_text())["seeds"] for p in (round6.CONFIRM, CONFIRM))
        page = round1.replace_block(page, "confirmation8", confirmation_block(today, new))
    return round1.write_page(page, check, "research/quickstart-lift/round08.py")


def main(argv=None) -> int:
    ap = round3.parser(__doc__.splitlines()[0], job_help="job: KIND SEED (internal; KIND is warm or the arm)")
    args = ap.parse_args(argv)
    if args.phase == "job":
        job(args.rest[0], int(args.rest[1]))
    elif args.phase == "run":
        run(parse_seed_list(args.seeds), args.jobs, args.until)
    elif args.phase == "doc":
        return doc(args.check)
    else:
        report(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
