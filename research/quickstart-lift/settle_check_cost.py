"""Where a slow warm start's time goes, and whether its settle check could be read from one teacher-forced pass
(issue 29, after the third round; measurements, no change to the quickstart).

1. The quickstart's warm start for ``--seed`` (the command's 2 threads): its steps, how many settle checks it
   made (greedy decoding of the 200 held-out 3-digit prompts) and the seconds spent in them.
2. On the warm starts in ``--warm`` (seeds ``--seeds``): the largest difference between the logits greedy decoding
   computes (KV cache, left-padded prompts, one token at a time) and a teacher-forced pass over prompt + reference,
   at the reference's answer positions; and how often a warm start has an answer position, up to greedy's first
   departure from the reference, whose best and second-best logits are within a margin (where a teacher-forced
   reading of greedy's verdict is not sure).

    python3 research/quickstart-lift/settle_check_cost.py --seed 14 --seeds 100-119 > research/quickstart-lift/data/settle-check.txt
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import minitepo.lab.sft_run as sft_run  # noqa: E402
from minitepo.lab.checkpoint import load_model  # noqa: E402
from minitepo.lab.compare import parse_seed_list  # noqa: E402
from minitepo.lab.quickstart import QuickstartConfig, warm_start  # noqa: E402
from minitepo.rollout import encode_prompts, left_pad, positions_from_mask  # noqa: E402
from minitepo.sft import IGNORE, make_batch  # noqa: E402
from toy_tasks import make_task  # noqa: E402

MARGINS = (1e-4, 1e-3, 2e-3, 5e-3, 1e-2)


def check_cost(seed: int) -> str:
    real, seconds = sft_run.greedy_accuracy, []

    def timed(*args, **kwargs):
        t = time.perf_counter()
        result = real(*args, **kwargs)
        seconds.append(time.perf_counter() - t)
        return result
    sft_run.greedy_accuracy = timed
    t0 = time.perf_counter()
    try:
        summary = warm_start(QuickstartConfig(seed=seed, out=str(ROOT / "runs" / "settle-check" / f"seed{seed}"),
                                              settle_at=0.30),   # the warm start as it was measured (third round)
                             verbose=False)
    finally:
        sft_run.greedy_accuracy = real
    total = time.perf_counter() - t0
    return (f"warm start, seed {seed}, {torch.get_num_threads()} threads: {summary['steps']} steps in {total:.1f} s; "
            f"{len(seconds)} greedy evaluations (settle checks and the periodic ones) took {sum(seconds):.1f} s "
            f"({sum(seconds) / total:.0%}), {sum(seconds) / len(seconds) * 1000:.0f} ms each")


@torch.no_grad()
def logits_both_ways(model, tokenizer, examples):
    """Per example, the (answer positions, V) logits of a teacher-forced pass and of cached decoding fed the
    reference."""
    x, y = make_batch(examples, tokenizer, "cpu")
    forced = model(x).float()                                                  # (B, L, V)
    prompts = encode_prompts(tokenizer, [e.prompt for e in examples])
    ids, mask = left_pad(prompts, tokenizer.pad_id, "cpu")
    gold = [tokenizer.encode(e.answer) + [tokenizer.eos_id] for e in examples]
    width = max(map(len, gold))
    cache = model.new_cache(len(examples), ids.shape[1] + width)
    positions = positions_from_mask(mask)
    step = model(ids, positions=positions, key_mask=mask, cache=cache, last_only=True)[:, -1].float()
    decoded = []
    for t in range(width):
        decoded.append(step)
        fed = torch.tensor([g[t] if t < len(g) else tokenizer.eos_id for g in gold])[:, None]
        step = model(fed, positions=positions[:, -1:] + 1 + t, cache=cache)[:, -1].float()
    decoded = torch.stack(decoded, 1)                                          # (B, width, V)
    return [(forced[i, len(p) - 1:len(p) - 1 + len(g)], decoded[i, :len(g)], g)
            for i, (p, g) in enumerate(zip(prompts, gold))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--seeds", default="100-119")
    ap.add_argument("--warm", type=Path, default=ROOT / "runs" / "lift" / "warm")
    args = ap.parse_args()
    torch.set_num_threads(2)
    print(check_cost(args.seed))
    torch.set_num_threads(1)
    examples = [e for e in make_task("add", levels=(1, 2, 3)).eval_set() if e.level == 3]
    worst, closest = 0.0, []
    for seed in parse_seed_list(args.seeds):
        model, tokenizer, _ = load_model(str(args.warm / f"seed{seed}" / "warmstart" / "checkpoint.pt"))
        model.eval()
        near = float("inf")
        for forced, decoded, gold in logits_both_ways(model, tokenizer, examples):
            worst = max(worst, (forced - decoded).abs().max().item())
            for t, token in enumerate(gold):   # up to and including greedy's first departure from the reference
                row = forced[t].clone()
                best_other = row.scatter(0, torch.tensor([token]), float("-inf")).max().item()
                margin = row[token].item() - best_other
                near = min(near, abs(margin))
                if margin < 0:
                    break
        closest.append(near)
    print(f"warm starts of seeds {args.seeds}: largest |decoded - teacher-forced| logit difference {worst:.2e}")
    for m in MARGINS:
        print(f"  warm starts with a decided answer position within {m:g} of a tie: "
              f"{sum(c <= m for c in closest)} of {len(closest)}")


if __name__ == "__main__":
    main()
