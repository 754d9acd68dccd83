"""Issue 29, ninth round: a warm start trained on 3-digit sums only.

The protocol, the arm, the selection rule and the seeds are in ``research/quickstart-lift/README.md`` ("Ninth round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 research/quickstart-lift/round09.py run    --seeds 100-119 --jobs 2 [--until HH:MM]
    python3 research/quickstart-lift/round09.py report --out research/quickstart-lift/data/round9.json
    python3 research/quickstart-lift/round09.py doc [--check]     # the page's round-9 block, from the JSON record

As in the eighth round the change is the warm start's: each seed gets a new warm start, the quickstart's recipe on
``add`` level 3 alone (``runs/lift9/warm-l3``), and the arm is today's RL stage from it; ``base``'s rows are the
sixth round's runs of today's quickstart (``g4-r2``), read from its committed summary. The driver, the report,
the rule and the page are the eighth round's; each new warm start's hole score (``warm_holes.py``) is recorded
beside it, and ``base``'s come from the look's rows.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402  (the first round: target, page helpers, the warm-start job)
import round02 as round2  # noqa: E402  (one job in its own process, one RL run's row)
import round03 as round3  # noqa: E402  (the parser)
import round05 as round5  # noqa: E402  (the description, the sign test)
import round06 as round6  # noqa: E402  (the sixth round: this round's base and its rows)
import round08 as round8  # noqa: E402  (the eighth round: its driver, report and page for a warm-start arm)
import warm_holes as holes  # noqa: E402  (the hole score)

from minitepo.lab.compare import parse_seed_list  # noqa: E402

RUNS = ROOT / "runs" / "lift9"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "round9.json"
WARM_LEVELS = "3"                    # the one change: the warm start's training (and held-out) levels
WARM = RUNS / "warm-l3"
ARMS = {"sft-l3": round8.BASE}       # name: RLConfig overrides, today's; the arm's change is its warm start


def row_path(arm: str, seed: int) -> Path:
    """A job's row; ``base``'s are the sixth round's committed ``g4-r2`` rows, copied out by ``base_rows``."""
    return (WARM if arm == "warm" else RUNS / arm) / f"seed{seed}.json"


DESCRIBED = ("responses", *(key for _, key in round5.DESCRIBED))   # round5.mechanism's keys, kept in committed rows


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
    return holes.hole_score(holes.class_means(*holes.read_model(folder / "warmstart" / "checkpoint.pt")))


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
    """The eighth round's driver with this round's arm and rows."""
    round8.run(seeds, n_jobs, until, arms=ARMS, row=row_path, script=__file__)


# -- the report and the page ----------------------------------------------------------------------------------

def report(out: Path | None) -> dict:
    """The eighth round's report (the third round's, with the limit on warm-start steps) over the seeds the arm
    finished, and the hole scores of both arms' warm starts (``base``'s from the look's rows)."""
    base_rows()
    result = round8.warm_start_report(ARMS, row_path, describe)
    arms, seeds = result["arms"], result["seeds"]
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
    """The eighth round's tables, with a line on both arms' hole scores, and its seed table."""
    holes_line = ("* Hole scores of the warm starts (the look's `H`; a hole: below " + f"{holes.HOLE}): " + "; ".join(
        f"`{n}` median {a['median_hole_score']:.2f}, {a['warm_starts_with_a_hole']} of {len(a['hole_scores'])} "
        f"with a hole" for n, a in result["arms"].items()) + ".")
    return round8.markdown(result, (holes_line,), own_start="each arm from its own warm start per seed.")


def doc(check: bool) -> int:
    """The page's block of this round: the study."""
    page = round1.replace_block(round1.PAGE.read_text(), "round9", markdown(json.loads(SUMMARY.read_text())))
    return round1.write_page(page, check, "research/quickstart-lift/round09.py")


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
