"""Issue 29, tenth round: a warm start with a flat hole is drawn again (``--redraw-flat``).

The protocol, the arm, the selection rule and the seeds are in ``docs/quickstart-lift.md`` ("Tenth round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 experiments/quickstart_lift10.py run --jobs 2 --until 19:35   # the scan, then the study's runs
    python3 experiments/quickstart_lift10.py job warm SEED     # a scan seed's warm start, read by the quickstart's check
    python3 experiments/quickstart_lift10.py job base SEED     # the quickstart, one thread, redraw_flat=0
    python3 experiments/quickstart_lift10.py job redraw SEED   # the quickstart, one thread, redraw_flat=2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

import quickstart_lift as round1  # noqa: E402  (the target, one thread, the warm-start job)
import quickstart_lift2 as round2  # noqa: E402  (one job in its own process)
import quickstart_lift3 as round3  # noqa: E402  (the deadline)

RUNS = ROOT / "runs" / "lift10"
SUMMARY = ROOT / "docs" / "lift" / "round10.json"
SCAN = list(range(120, 150))     # new study seeds, scanned for flat holes
REDRAWS = 2                      # the arm's --redraw-flat
CHECK_SEED = 100                 # a study seed without a flat hole: redraw must be today's run there


def row_path(kind: str, seed: int) -> Path:
    return RUNS / kind / f"seed{seed}.json"


def flat_classes(checkpoint: Path) -> list[str]:
    """The quickstart's check on a warm-start checkpoint: its flat holes, described (one thread)."""
    from minitepo.lab.checkpoint import load_model
    from minitepo.lab.flat_holes import find_flat_holes
    model, tokenizer, _ = load_model(checkpoint)
    return [str(c) for c in find_flat_holes(model, tokenizer)]


def job(kind: str, seed: int) -> None:
    """``warm``: a scan seed's warm start (the study's recipe, one thread) and the quickstart's check on it;
    ``base`` / ``redraw``: the quickstart itself, one thread, with ``redraw_flat`` 0 / REDRAWS."""
    round1.one_thread()
    if kind == "warm":
        row = round1.warm_row(seed, RUNS / "warm")
        row["flat"] = flat_classes(RUNS / "warm" / f"seed{seed}" / "warmstart" / "checkpoint.pt")
    else:
        from minitepo.lab.quickstart import QuickstartConfig, run_quickstart
        t0 = time.perf_counter()
        result = run_quickstart(QuickstartConfig(seed=seed, device="cpu", out=str(RUNS / kind / f"seed{seed}"),
                                                 redraw_flat=REDRAWS if kind == "redraw" else 0))
        row = {"seed": seed, "kind": kind, "before": result["before"], "after": result["after"],
               "seconds": round(time.perf_counter() - t0, 1), "warm_draws": result["warm_draws"],
               "warm_steps": result["warm_steps"]}
    row_path(kind, seed).parent.mkdir(parents=True, exist_ok=True)
    row_path(kind, seed).write_text(json.dumps(row))


def scan(n_jobs: int) -> list[int]:
    """The scan seeds' warm starts (resumable) and the quickstart's check on each; returns those with a flat hole."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(n_jobs) as pool:
        list(pool.map(lambda s: round2.run_job("warm", s, script=__file__, path=row_path("warm", s)), SCAN))
    flagged = []
    for seed in SCAN:
        row = json.loads(row_path("warm", seed).read_text())
        if "flat" not in row:   # the first scan rows were written before the check was added to the job
            row["flat"] = flat_classes(RUNS / "warm" / f"seed{seed}" / "warmstart" / "checkpoint.pt")
            row_path("warm", seed).write_text(json.dumps(row))
        if row["flat"]:
            flagged.append(seed)
    return flagged


def run(n_jobs: int, until: str | None) -> None:
    """The scan, then the study's runs: ``redraw`` on 100 (the check that it is today's run there) and on 112, and
    ``base`` and ``redraw`` on each flagged scan seed; no job begins after ``until`` (HH:MM UTC)."""
    from concurrent.futures import ThreadPoolExecutor
    flagged = scan(n_jobs)
    print(f"{time.strftime('%H:%M:%S')} scan: flat holes in {flagged}", flush=True)
    jobs = [("redraw", CHECK_SEED), ("redraw", 112)] + [(kind, s) for s in flagged for kind in ("base", "redraw")]
    end = round3.deadline(until)

    def one(job):
        if end is not None and time.time() >= end:
            print(f"{time.strftime('%H:%M:%S')} time budget: {job} not begun", flush=True)
            return
        kind, seed = job
        if row_path(kind, seed).exists():
            return
        proc = subprocess.run([sys.executable, __file__, "job", kind, str(seed)], cwd=ROOT, capture_output=True,
                              text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        if proc.returncode != 0:
            print(f"FAILED {kind} seed {seed}:\n{proc.stderr[-3000:]}", flush=True)
            return
        row = json.loads(row_path(kind, seed).read_text())
        print(f"{time.strftime('%H:%M:%S')} {kind} seed {seed}: {row['before']:.3f} -> {row['after']:.3f}, "
              f"{row['warm_draws']} warm start(s), {row['seconds']} s", flush=True)

    with ThreadPoolExecutor(n_jobs) as pool:
        list(pool.map(one, jobs))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="phase", required=True)
    r = sub.add_parser("run", help="the scan, then the study's runs (resumable)")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--until", default=None, help="HH:MM UTC: no job begins after it")
    j = sub.add_parser("job")
    j.add_argument("kind", choices=["warm", "base", "redraw"])
    j.add_argument("seed", type=int)
    args = p.parse_args(argv)
    if args.phase == "run":
        run(args.jobs, args.until)
    elif args.phase == "job":
        job(args.kind, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
