"""Warm-start study (issue 11): supervised ``add`` training over many seeds, one recipe at a time.

Runs ``minitepo.lab.sft_run.train_sft`` once per seed with config overrides, stops a run as soon as its
held-out 3-digit accuracy reaches ``--target`` (the config's settle feature with a 1-step settle),
and records per seed: the first checked step at >= 25% and >= target on level 3, the final
accuracies, and the seconds. Things SFTConfig cannot express (init scale, level weights, model
config fields) are built here and passed to ``train_sft`` as its ``model`` and ``task``; its
``on_settle_check`` hook records every check.

    PYTHONPATH=. python3 research/warm-start/warmstart_study.py --name base --seeds 0-9
    PYTHONPATH=. python3 research/warm-start/warmstart_study.py --name lr3e-3 --seeds 0-9 --set lr=3e-3 --set warmup=200

Writes runs/study/<name>/summary.json and summary.md (and one run folder per seed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

from minitepo.lab.sft_run import SFTConfig, train_sft
from minitepo.model import GPT, ModelConfig
from minitepo.tokenizer import Tokenizer
from toy_tasks import make_task, parse_levels


def parse_seeds(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            seeds.extend(range(int(lo), int(hi) + 1))
        else:
            seeds.append(int(part))
    return seeds


def parse_value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text in ("None", "none"):
        return None
    if text in ("True", "False"):
        return text == "True"
    return text


def parse_pairs(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        out[key] = parse_value(value)
    return out


def variant(patch: dict, config) -> tuple[GPT | None, object | None]:
    """The model and the task a run trains, as ``patch`` changes them (None: the config's own), built exactly as
    ``train_sft`` builds its own (seeded with ``config.seed``); they go to ``train_sft(config, model=, task=)``.
    ``patch`` keys:

    init_std       std of every Linear/Embedding weight (default model: 0.02)
    proj_std       std of the residual output projections (default: 0.02 / sqrt(2 * n_layer))
    zero_proj      1: residual output projections start at exactly 0
    task.<option>  an option of the task's config, e.g. task.width=0, task.reverse_operands=False,
                   task.level_weights=1,1,4 (one weight per level). The original study of the schoolbook format is
                   task.reverse_operands=False task.width=0 task.level_weights=1,1,1 plus the keys below.
    model.<field>  a ModelConfig field, e.g. model.rope_base=100
    mixed_lengths  p: with probability p a training example has operands of independently drawn
                   lengths from the task's levels (e.g. "123+4="), else the usual same-length level.
                   The held-out set, the prompt and answer formats are unchanged.
    aligned        W: place-aligned RoPE positions for "a+b=" prompts (a diagnostic; see aligned_shift).
                   Patches the model's default positions (SFT) and the sampler's (evaluation); not RL. (The one
                   patch left: it changes how the model itself computes positions.)
    """
    model = task = None
    model_over = {k.split(".", 1)[1]: v for k, v in patch.items() if k.startswith("model.")}
    init_std, proj_std, zero_proj = patch.get("init_std"), patch.get("proj_std"), patch.get("zero_proj")
    if model_over or init_std is not None or proj_std is not None or zero_proj:
        torch.manual_seed(config.seed)
        model_config = ModelConfig(**{**dict(vocab_size=Tokenizer().vocab_size, n_layer=config.n_layer,
                                             n_head=config.n_head, n_embd=config.n_embd), **model_over})
        model = GPT(model_config)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.dim() < 2:
                    continue
                if name.endswith("proj.weight"):
                    if zero_proj:
                        p.zero_()
                    elif proj_std is not None:
                        p.normal_(0.0, proj_std)
                    elif init_std is not None:
                        p.normal_(0.0, init_std / math.sqrt(2 * model_config.n_layer))
                elif init_std is not None:
                    p.normal_(0.0, init_std)

    task_over = {k.split(".", 1)[1]: task_option(k, v) for k, v in patch.items() if k.startswith("task.")}
    p_mixed = float(patch.get("mixed_lengths") or 0.0)
    if task_over or p_mixed:
        task = make_task(config.task, levels=parse_levels(config.levels), **task_over)
    if p_mixed:
        mix_lengths(task, p_mixed)

    if patch.get("aligned"):
        install_aligned_positions(int(patch["aligned"]))
    return model, task


def mix_lengths(task, p_mixed: float) -> None:
    """With probability ``p_mixed`` a training example of ``task`` gets operands of independently drawn lengths."""
    from toy_tasks.base import Example, random_operand
    real_sample = task.sample

    def sample(rng: random.Random, level=None):
        if level is not None or rng.random() >= p_mixed:
            return real_sample(rng, level)
        held_out = task._held_out_prompts()
        while True:
            n_a, n_b = rng.choice(task.levels), rng.choice(task.levels)
            a, b = random_operand(rng, n_a), random_operand(rng, n_b)
            ex = Example(prompt=f"{task.write_operand(a)}+{task.write_operand(b)}=", answer=task.reference(a, b),
                         level=max(n_a, n_b))
            if ex.prompt not in held_out:
                return ex
    task.sample = sample


def task_option(key: str, value):
    """A ``task.<option>`` patch value as the task's config wants it: level weights "1,1,4" become a tuple."""
    if key == "task.level_weights" and isinstance(value, str):
        return tuple(float(w) for w in value.split(","))
    return value


def aligned_shift(ids: torch.Tensor, width: int) -> torch.Tensor:
    """Per-token position shift (B, S) that lays every "a+b=" prompt out as if both operands had
    ``width`` digits: a's digits move right by width - len(a), '+' too, and b's digits, '=' and the
    answer by (width - len(a)) + (width - len(b)). Then the distance from each answer token to the
    operand digits of the same place value is the same at every level. Rows without '+' and '=' get 0.
    """
    from minitepo.tokenizer import Tokenizer
    tok = Tokenizer()
    plus, eq = (tok.encode(c)[0] for c in "+=")
    bos = tok.bos_id
    B, S = ids.shape
    col = torch.arange(S, device=ids.device).expand(B, S)
    big = torch.full_like(col, S)
    def first(token):
        return torch.where(ids == token, col, big).min(-1).values  # (B,)
    i_bos, i_plus, i_eq = first(bos), first(plus), first(eq)
    ok = (i_bos < i_plus) & (i_plus < i_eq) & (i_eq < S)
    n_a, n_b = i_plus - i_bos - 1, i_eq - i_plus - 1
    sa, sb = (width - n_a).clamp(min=0), (width - n_b).clamp(min=0)
    shift = torch.where(col > i_bos[:, None], sa[:, None], 0) + torch.where(col > i_plus[:, None], sb[:, None], 0)
    return torch.where(ok[:, None], shift, 0)


_ALIGNED: list[int] = []


def install_aligned_positions(width: int) -> None:
    import minitepo.rollout as sampling
    if _ALIGNED:  # once per process: the patches wrap the real functions
        return
    _ALIGNED.append(width)
    real_forward, real_left_pad, real_pfm = GPT.forward, sampling.left_pad, sampling.positions_from_mask
    stash = {}

    def forward(self, idx, positions=None, key_mask=None, cache=None, last_only=False):
        if positions is None and cache is None and key_mask is None:  # SFT: right-padded rows from BOS
            positions = torch.arange(idx.size(1), device=idx.device).expand_as(idx) + aligned_shift(idx, width)
        return real_forward(self, idx, positions, key_mask, cache, last_only)

    def left_pad(prompts, pad_id, device):
        ids, mask = real_left_pad(prompts, pad_id, device)
        stash["ids"] = ids
        return ids, mask

    def positions_from_mask(key_mask):
        positions = real_pfm(key_mask)
        ids = stash.pop("ids", None)
        if ids is not None and key_mask.size(1) == ids.size(1) and key_mask.size(0) % ids.size(0) == 0:
            ids = ids.repeat_interleave(key_mask.size(0) // ids.size(0), dim=0)
            positions = positions + aligned_shift(ids, width)
        return positions

    GPT.forward, sampling.left_pad, sampling.positions_from_mask = forward, left_pad, positions_from_mask


def loss_at(run_dir: Path, steps=(200, 400, 600, 800, 1000)) -> dict:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    losses = {r["step"]: r["losses/sft"] for r in rows if "losses/sft" in r}
    return {s: round(losses[s], 3) for s in steps if s in losses}


def run_seed(seed: int, overrides: dict, patch: dict, target: float, out_root: Path) -> dict:
    cfg = dict(task="add", levels="1,2,3", settle_at=target, settle_metric="level/3", settle_steps=1,
               settle_check_every=25, eval_every=100, progress=False)
    cfg.update(overrides)
    cfg.update(seed=seed, out=str(out_root / f"seed{seed}"))
    config = SFTConfig(**cfg)
    model, task = variant(patch, config)
    checks: list[tuple[int, float]] = []   # (step, level-3 accuracy) of every settle check
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    result = train_sft(config, model=model, task=task, on_settle_check=lambda step, acc: checks.append((step, acc)))
    seconds = time.perf_counter() - t0
    first = lambda thr: next((s for s, a in checks if a >= thr), None)  # noqa: E731
    return {"seed": seed, "steps_run": result["steps"], "seconds": round(seconds, 1),
            "step_25": first(0.25), "step_target": first(target),
            "final": {k: round(v, 3) for k, v in result["accuracy"].items()},
            "loss": loss_at(Path(config.out)), "checks": checks}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True)
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--set", action="append", default=[], help="SFTConfig field=value (repeatable)")
    ap.add_argument("--patch", action="append", default=[], help="see variant (repeatable)")
    ap.add_argument("--target", type=float, default=0.9)
    ap.add_argument("--out", default="runs/study")
    args = ap.parse_args(argv)

    torch.set_num_threads(1)
    overrides, patch = parse_pairs(args.set), parse_pairs(args.patch)
    out_root = Path(args.out) / args.name
    out_root.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in parse_seeds(args.seeds):
        row = run_seed(seed, overrides, patch, args.target, out_root)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "checks"}), flush=True)
        write_summary(out_root, args, overrides, patch, rows)


def write_summary(out_root: Path, args, overrides, patch, rows) -> None:
    hit = [r for r in rows if r["step_target"] is not None]
    hit25 = [r for r in rows if r["step_25"] is not None]
    med = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    summary = {"name": args.name, "overrides": overrides, "patch": patch, "target": args.target,
               "seeds": [r["seed"] for r in rows], "reached_target": len(hit), "reached_25": len(hit25),
               "median_step_25": med([r["step_25"] for r in hit25]),
               "median_step_target": med([r["step_target"] for r in hit]),
               "median_seconds_to_target": med([r["seconds"] for r in hit]),
               "total_seconds": round(sum(r["seconds"] for r in rows), 1), "runs": rows}
    (out_root / "summary.json").write_text(json.dumps(summary, indent=1))
    lines = [f"# {args.name}: overrides {overrides} patch {patch}", "",
             f"reached {args.target:.0%}: {len(hit)}/{len(rows)}; reached 25%: {len(hit25)}/{len(rows)}; "
             f"median step to 25% {summary['median_step_25']}, to {args.target:.0%} {summary['median_step_target']}, "
             f"median seconds to {args.target:.0%} {summary['median_seconds_to_target']}", "",
             "| seed | step 25% | step target | steps run | final level/3 | final level/2 | seconds | loss@200/400/600/800/1000 |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['seed']} | {r['step_25']} | {r['step_target']} | {r['steps_run']} | "
                     f"{r['final'].get('level/3')} | {r['final'].get('level/2')} | {r['seconds']} | "
                     f"{'/'.join(str(v) for v in r['loss'].values())} |")
    (out_root / "summary.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
