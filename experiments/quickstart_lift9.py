"""Issue 29, ninth round: a warm start trained on 3-digit sums only.

The protocol, the arm, the selection rule and the seeds are in ``docs/quickstart-lift.md`` ("Ninth round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 experiments/quickstart_lift9.py run    --seeds 100-119 --jobs 2 [--until HH:MM]
    python3 experiments/quickstart_lift9.py report --out docs/lift/round9.json
    python3 experiments/quickstart_lift9.py doc [--check]     # the page's round-9 block, from the JSON record

As in the eighth round the change is the warm start's: each seed gets a new warm start, the quickstart's recipe on
``add`` level 3 alone (``runs/lift9/warm-l3``), and the arm is today's RL stage from it; ``base``'s rows are the
sixth round's runs of today's quickstart (``g4-r2``), read from its committed summary. The report, the rule and the seed table are the eighth round's;
each new warm start's hole score (``warm_holes.py``) is recorded beside it, and ``base``'s come from the look's rows.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

import quickstart_lift as round1  # noqa: E402  (the first round: target, page helpers, the warm-start job)
import quickstart_lift2 as round2  # noqa: E402  (one job in its own process, one RL run's row)
import quickstart_lift3 as round3  # noqa: E402  (the report, the rule, the time budget, the parser)
import quickstart_lift4 as round4  # noqa: E402  (the round's table)
import quickstart_lift5 as round5  # noqa: E402  (the description, the sign test)
import quickstart_lift6 as round6  # noqa: E402  (the sixth round: this round's base and its rows)
import quickstart_lift8 as round8  # noqa: E402  (the eighth round: a warm-start arm's limit and seed table)
import warm_holes as holes  # noqa: E402  (the hole score)

from minitepo.lab.compare import parse_seed_list  # noqa: E402

RUNS = ROOT / "runs" / "lift9"
SUMMARY = ROOT / "docs" / "lift" / "round9.json"
CONFIRM = ROOT / "docs" / "lift" / "confirm-round9.json"   # the confirmation of this round's pick (seeds 0-19)
WARM_LEVELS = "3"                    # the one change: the warm start's training (and held-out) levels
WARM = RUNS / "warm-l3"
ARMS = {"sft-l3": round8.BASE}       # name: RLConfig overrides, today's; the arm's change is its warm start


def row_path(arm: str, seed: int) -> Path:
    """A job's row; ``base``'s are the sixth round's committed ``g4-r2`` rows, copied out by ``base_rows``."""
    return (WARM if arm == "warm" else RUNS / arm) / f"seed{seed}.json"


DESCRIBED = ("responses", "entropy_20_40", "groups_share_last_fifth")   # round5.mechanism's, kept in committed rows


def base_rows() -> None:
    """``base``'s rows: the sixth round's ``g4-r2`` runs as its committed summary records them (their run folders
    are not kept), one file per seed where the report reads rows."""
    for r in json.loads(round6.SUMMARY.read_text())["runs"]["g4-r2"]:
        row_path("base", r["seed"]).parent.mkdir(parents=True, exist_ok=True)
        row_path("base", r["seed"]).write_text(json.dumps(r))


def describe(folder: Path) -> dict:
    """round5.mechanism for the arm's runs; for ``base`` the same numbers, as its committed rows hold them."""
    if folder.parent == RUNS / "base":
        return {k: json.loads(folder.with_suffix(".json").read_text())[k] for k in DESCRIBED}
    return round5.mechanism(folder)


def warm_hole_score(folder: Path) -> tuple[float, str]:
    """The look's hole score of the warm start in ``folder`` (its checkpoint read teacher-forced, one thread)."""
    import torch
    from minitepo.lab.checkpoint import load_model
    torch.set_num_threads(1)
    model, tok, _ = load_model(folder / "warmstart" / "checkpoint.pt")
    model.eval()
    return holes.hole_score(holes.class_means(model, tok))


# -- one job, in its own process -----------------------------------------------------------------------------

def job(kind: str, seed: int) -> None:
    """One job: the seed's level-3 warm start and its hole score (``warm``), or the arm's RL run from it."""
    path = row_path(kind, seed)
    if kind == "warm":
        row = round1.warm_row(seed, WARM, levels=WARM_LEVELS)
        row["hole_score"], row["worst_class"] = warm_hole_score(WARM / f"seed{seed}")
    else:
        row = round2.rl_row(kind, seed, WARM, ARMS[kind], path.with_suffix(""))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(row))


def run(seeds: list[int], n_jobs: int, until: str | None) -> None:
    """``n_jobs`` seeds at a time, each its warm start and then its RL run; no seed begins after ``until``."""
    end = round3.deadline(until)

    def one_seed(seed: int) -> None:
        if end is not None and time.time() >= end:
            print(f"{time.strftime('%H:%M:%S')} time budget: seed {seed} not begun", flush=True)
            return
        for kind in ("warm", *ARMS):
            round2.run_job(kind, seed, script=__file__, path=row_path(kind, seed))

    with ThreadPoolExecutor(n_jobs) as pool:
        list(pool.map(one_seed, seeds))


# -- the report and the page ----------------------------------------------------------------------------------

def report(out: Path | None) -> dict:
    """The eighth round's report (the third round's, with the limit on warm-start steps) over the seeds the arm
    finished, and the hole scores of both arms' warm starts (``base``'s from the look's rows)."""
    base_rows()
    result = round3.report(None, new_arms=ARMS, row=row_path, describe=describe)
    arms = result["arms"]
    for name, a in arms.items():
        runs = result["runs"][name]
        a["median_warm_steps"] = statistics.median(r["warm"]["steps"] for r in runs)
        a["median_before"] = statistics.median(r["before"] for r in runs)
    for a in arms.values():
        a["warm_ratio"] = round(a["median_warm_steps"] / arms["base"]["median_warm_steps"], 3)
        a["eligible"] = a["eligible"] and a["warm_ratio"] <= round8.WARM_LIMIT
    result["pick"] = round3.rule_pick(arms, ARMS)
    seeds = result["seeds"]
    scores = {"base": [json.loads(holes.row_path("study", s).read_text())["hole_score"] for s in seeds],
              "sft-l3": [json.loads(row_path("warm", s).read_text())["hole_score"] for s in seeds]}
    for name, values in scores.items():
        arms[name]["hole_scores"] = values
        arms[name]["warm_starts_with_a_hole"] = sum(v < holes.HOLE for v in values)
        arms[name]["median_hole_score"] = statistics.median(values)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
    for name, a in arms.items():
        print(f"{name:8s} met {a['met']}  median {a['median_after']:.3f}  warm steps x{a['warm_ratio']}  "
              f"holes {a['warm_starts_with_a_hole']}  eligible {a['eligible']}")
    print("pick:", result["pick"])
    return result


def markdown(result: dict) -> str:
    """The fifth round's tables and sign test, the warm starts' steps and hole scores, and the eighth round's seed
    table (each arm's own warm start)."""
    arms = result["arms"]
    notes = [f"* `{name}` against `base`, seed by seed: above on {s['above']}, below on {s['below']}, level on "
             f"{s['level']} (two-sided sign test p = {s['p']:.2g})." for name, s in round5.shifts(result).items()]
    notes += ["* Warm starts, median over the seeds: " + "; ".join(
        f"`{n}` {a['median_warm_steps']:.0f} steps ({a['warm_ratio']:.2f}x `base`'s, limit {round8.WARM_LIMIT:.2f}x), "
        f"{round1.pct(a['median_before'])} before RL" for n, a in arms.items()) + "."]
    notes += ["* Hole scores of the warm starts (the look's `H`; a hole: below " + f"{holes.HOLE}): " + "; ".join(
        f"`{n}` median {a['median_hole_score']:.2f}, {a['warm_starts_with_a_hole']} of {len(a['hole_scores'])} "
        f"with a hole" for n, a in arms.items()) + "."]
    head, old_table = round4.markdown(result, round5.DESCRIBED, notes), round3.seed_table(result)
    same = "every arm from the same warm start per seed."
    assert head.endswith(old_table) and same in head
    head = head.replace(same, "each arm from its own warm start per seed.")
    return head[:-len(old_table)] + round8.seed_table(result)


def doc(check: bool) -> int:
    """The page's block of this round: the study."""
    page = round1.replace_block(round1.PAGE.read_text(), "round9", markdown(json.loads(SUMMARY.read_text())))
    return round1.write_page(page, check, "experiments/quickstart_lift9.py")


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
