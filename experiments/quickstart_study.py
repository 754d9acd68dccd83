"""Quickstart study (issue 11): the quickstart's two stages over seeds, with a candidate warm-start recipe.

Same pipeline as ``minitepo.quickstart.run_quickstart`` (warm start on add 1-3 that settles once
3-digit accuracy reaches ``--settle-at``, then TEPO on 3-digit add with the quickstart's RL
settings), but with SFTConfig overrides for the warm start and per-seed records: settle step,
warm-start accuracy, the RL accuracy curve, the first evaluated iteration at >= 75%, seconds.

    PYTHONPATH=. python3 experiments/quickstart_study.py --name qs_new --seeds 0-4 --sft lr=3e-3 --iterations 150

Writes runs/study/<name>/summary.json and summary.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

from minitepo.rl import RLConfig, train_rl
from minitepo.sft import SFTConfig, train_sft

sys.path.insert(0, str(Path(__file__).resolve().parent))
from warmstart_study import parse_pairs, parse_seeds  # noqa: E402


def run_seed(seed: int, args, sft_over: dict, rl_over: dict, out_root: Path) -> dict:
    out = out_root / f"seed{seed}"
    t0 = time.perf_counter()
    cfg = dict(task="add", levels="1,2,3", lr=2e-3, eval_every=50, settle_at=args.settle_at, settle_metric="level/3",
               settle_steps=args.settle_steps, seed=seed, device="cpu", out=str(out / "warmstart"), progress=False)
    cfg.update(sft_over)
    sft = train_sft(SFTConfig(**cfg))
    t_sft = time.perf_counter() - t0
    rcfg = dict(init=sft["checkpoint"], algo="tepo", task="add", levels="3", iterations=args.iterations, lr=2e-4,
                min_lr_frac=0.1, temperature=0.7, eval_every=10, seed=seed, device="cpu", out=str(out / "rl"),
                progress=False)
    rcfg.update(rl_over)
    rl = train_rl(RLConfig(**rcfg))
    total = time.perf_counter() - t0
    rows = [json.loads(line) for line in (out / "rl" / "metrics.jsonl").read_text().splitlines() if line.strip()]
    curve = [(r["step"], round(r["eval/greedy_acc/all"], 3)) for r in rows if "eval/greedy_acc/all" in r]
    first75 = next((s for s, a in curve if a >= 0.75), None)
    return {"seed": seed, "settled": sft["settled"], "sft_steps": sft["steps"], "sft_seconds": round(t_sft, 1),
            "warm": {k: round(v, 3) for k, v in sft["accuracy"].items()}, "before": round(rl["start_accuracy"], 3),
            "after": round(rl["final"]["eval/greedy_acc/all"], 3), "iter_75": first75,
            "best": max(a for _, a in curve), "total_seconds": round(total, 1), "curve": curve}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True)
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--settle-at", type=float, default=0.25)
    ap.add_argument("--settle-steps", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--sft", action="append", default=[], help="SFTConfig field=value for the warm start")
    ap.add_argument("--rl", action="append", default=[], help="RLConfig field=value for the RL stage")
    ap.add_argument("--out", default="runs/study")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    sft_over, rl_over = parse_pairs(args.sft), parse_pairs(args.rl)
    out_root = Path(args.out) / args.name
    out_root.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in parse_seeds(args.seeds):
        row = run_seed(seed, args, sft_over, rl_over, out_root)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "curve"}), flush=True)
        ok = [r for r in rows if r["before"] <= 0.40 and r["after"] >= 0.75]
        summary = {"name": args.name, "settle_at": args.settle_at, "iterations": args.iterations, "sft": sft_over,
                   "rl": rl_over, "met_target": len(ok), "n": len(rows),
                   "median_total_seconds": statistics.median(r["total_seconds"] for r in rows), "runs": rows}
        (out_root / "summary.json").write_text(json.dumps(summary, indent=1))
        lines = [f"# {args.name}: settle_at {args.settle_at}, {args.iterations} RL iterations, sft {sft_over}, "
                 f"rl {rl_over}", "", f"<= 40% -> >= 75%: {len(ok)}/{len(rows)}; median total seconds "
                 f"{summary['median_total_seconds']}", "",
                 "| seed | settle step | warm level/2 | before | after | first iter >= 75% | sft s | total s |",
                 "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['seed']} | {r['sft_steps'] if r['settled'] else 'never'} | {r['warm'].get('level/2')} "
                         f"| {r['before']} | {r['after']} | {r['iter_75']} | {r['sft_seconds']} | {r['total_seconds']} |")
        (out_root / "summary.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
