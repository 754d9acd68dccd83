"""Quickstart study (issue 11): the quickstart's two stages over seeds, with a candidate warm-start recipe.

With no ``--sft``/``--rl`` overrides each seed is exactly ``run_quickstart`` (the README's command with
``--seed``). With overrides: the same pipeline (warm start on add 1-3 that settles once
3-digit accuracy reaches ``--settle-at``, then TEPO on 3-digit add with the quickstart's RL
settings), but with SFTConfig overrides for the warm start and per-seed records: settle step,
warm-start accuracy, the RL accuracy curve, the first evaluated iteration at >= 75%, seconds.

    PYTHONPATH=. python3 research/warm-start/quickstart_study.py --name quickstart --seeds 0-9
    PYTHONPATH=. python3 research/warm-start/quickstart_study.py --name qs_lr --seeds 0-4 --sft lr=3e-3 --iterations 150
    PYTHONPATH=. python3 research/warm-start/quickstart_study.py --name warm --seeds 0-9 --warm-only
    PYTHONPATH=. python3 research/warm-start/quickstart_study.py --name rl_k8 --seeds 0-9 --warm-from runs/study/warm --rl minibatches=8

``--warm-only`` stops after the warm start; ``--warm-from`` reuses those warm starts (same seeds) and runs only
the RL stage, so RL variants are compared from identical checkpoints.

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

from minitepo.lab.quickstart import QuickstartConfig, rl_stage, run_quickstart, warm_start
from minitepo.lab.rl_run import train_rl
from minitepo.lab.runs import read_metrics

sys.path.insert(0, str(Path(__file__).resolve().parent))
from warmstart_study import parse_pairs, parse_seeds  # noqa: E402


def run_seed(seed: int, args, sft_over: dict, rl_over: dict, out_root: Path) -> dict:
    """One quickstart. With no overrides this is exactly ``minitepo quickstart --seed SEED``."""
    out = out_root / f"seed{seed}"
    if sft_over or rl_over or args.warm_only or args.warm_from:
        return run_seed_custom(seed, args, sft_over, rl_over, out)
    t0 = time.perf_counter()
    run_quickstart(recipe(seed, args, out, overwrite=True))  # the command's default: replace a previous one
    total = time.perf_counter() - t0
    sft = read_metrics(out / "warmstart")
    warm = warm_accuracy(sft)
    settled = any("charts/settle_trigger_acc" in r for r in sft)
    return row(seed, out, settled, sft[-1]["step"], None, warm, total)


def warm_accuracy(sft_rows: list[dict]) -> dict:
    """Held-out accuracy per level at a warm start's last logged step, from its metrics."""
    return {k.removeprefix("eval/greedy_acc/"): round(v, 3) for k, v in sft_rows[-1].items()
            if k.startswith("eval/greedy_acc/")}


def recipe(seed: int, args, out: Path, overwrite: bool = False) -> QuickstartConfig:
    """The quickstart's settings for one seed of a study (the warm-start and RL overrides come on top)."""
    return QuickstartConfig(seed=seed, device="cpu", iterations=args.iterations, settle_at=args.settle_at,
                            settle_steps=args.settle_steps, settle_check_near=args.settle_check_near,
                            settle_cap=args.settle_cap, out=str(out), overwrite=overwrite)


def row(seed, out, settled, sft_steps, sft_seconds, warm, total) -> dict:
    """One seed's record. The curve is 3-digit accuracy, also when RL trains on more levels (``--rl levels=1,2,3``:
    then ``before``/``after`` are read from it, not from the all-levels accuracy)."""
    rows = read_metrics(out / "rl")
    key = "eval/greedy_acc/level/3"
    curve = [(r["step"], round(r[key], 3)) for r in rows if key in r]
    before, after = curve[0][1], curve[-1][1]
    first75 = next((s for s, a in curve if a >= 0.75), None)
    return {"seed": seed, "settled": settled, "sft_steps": sft_steps, "sft_seconds": sft_seconds, "warm": warm,
            "before": round(before, 3), "after": round(after, 3), "iter_75": first75,
            "best": max(a for _, a in curve), "total_seconds": round(total, 1), "curve": curve}


def run_seed_custom(seed: int, args, sft_over: dict, rl_over: dict, out: Path) -> dict:
    t0 = time.perf_counter()
    if args.warm_from:
        return run_rl_only(seed, args, rl_over, out, Path(args.warm_from) / f"seed{seed}" / "warmstart")
    sft = warm_start(recipe(seed, args, out), **sft_over)
    t_sft = time.perf_counter() - t0
    acc = {k: round(v, 3) for k, v in sft["accuracy"].items()}
    if args.warm_only:
        return {"seed": seed, "settled": sft["settled"], "sft_steps": sft["steps"], "sft_seconds": round(t_sft, 1),
                "warm": acc, "before": acc.get("level/3"), "after": None, "iter_75": None, "best": None,
                "total_seconds": round(t_sft, 1), "curve": []}
    train_rl(rl_stage(recipe(seed, args, out), sft["checkpoint"], **rl_over))
    return row(seed, out, sft["settled"], sft["steps"], round(t_sft, 1), acc, time.perf_counter() - t0)


def run_rl_only(seed: int, args, rl_over: dict, out: Path, warm: Path) -> dict:
    """The RL stage alone, from a warm start an earlier ``--warm-only`` study wrote."""
    t0 = time.perf_counter()
    sft = read_metrics(warm)
    train_rl(rl_stage(recipe(seed, args, out), str(warm / "checkpoint.pt"), **{"overwrite": True, **rl_over}))
    return row(seed, out, True, sft[-1]["step"], None, warm_accuracy(sft), time.perf_counter() - t0)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True)
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--settle-at", type=float, default=QuickstartConfig.settle_at)
    ap.add_argument("--settle-steps", type=int, default=QuickstartConfig.settle_steps)
    ap.add_argument("--settle-check-near", type=float, default=QuickstartConfig.settle_check_near)
    ap.add_argument("--settle-cap", type=float, default=QuickstartConfig.settle_cap)
    ap.add_argument("--iterations", type=int, default=QuickstartConfig.iterations)
    ap.add_argument("--sft", action="append", default=[], help="SFTConfig field=value for the warm start")
    ap.add_argument("--rl", action="append", default=[], help="RLConfig field=value for the RL stage")
    ap.add_argument("--warm-only", action="store_true", help="stop after the warm start")
    ap.add_argument("--warm-from", help="a --warm-only study's folder: run only the RL stage from its warm starts")
    ap.add_argument("--out", default="runs/study")
    args = ap.parse_args(argv)
    sft_over, rl_over = parse_pairs(args.sft), parse_pairs(args.rl)
    torch.set_num_threads(1)
    out_root = Path(args.out) / args.name
    out_root.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in parse_seeds(args.seeds):
        row = run_seed(seed, args, sft_over, rl_over, out_root)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "curve"}), flush=True)
        ok = [r for r in rows if r["after"] is not None and r["before"] <= 0.40 and r["after"] >= 0.75]
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
