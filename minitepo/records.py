"""What one RL iteration measured: its optimizer steps' statistics combined, and its metrics record.

The RL trainer's metric names, all in one place. Groups: charts/ (what the run is doing), losses/ (the objective's
statistics), tepo/ (TEPO's mask), time/ (seconds), eval/ (held-out accuracy, added by the run loop).
"""

from __future__ import annotations

import torch

SUMMED_STATS = ("loss", "pg_loss", "mask_kl")
"""Each micro-batch's value is its share of the step's total (every micro-batch divides by the step's normaliser)."""
SEQUENCE_STATS = ("seq_ratio_mean",)
"""Averages over responses; every other statistic is an average over tokens."""
CLIP_STATS = ("clip_frac", "clip/pos_high", "clip/pos_low", "clip/neg_high", "clip/neg_low", "clip/dual")


def combine_micro_batches(parts: list[tuple[dict, int, int]], per_sequence_clip: bool = False) -> dict:
    """One optimizer step's statistics from its micro-batches' (stats, real tokens, non-empty responses):
    the summed statistics add up, the averages are weighted by what they average over (tokens, or responses
    for the sequence statistics and for GSPO's sequence-level clipping), so that the step logs the same
    numbers however it is split."""
    tokens = sum(n for _, n, _ in parts) or 1
    sequences = sum(n for _, _, n in parts) or 1
    step: dict[str, float] = {}
    for stats, n_tokens, n_sequences in parts:
        for key, value in stats.items():
            if key in SUMMED_STATS:
                weight = 1.0
            elif key in SEQUENCE_STATS or (per_sequence_clip and key in CLIP_STATS):
                weight = n_sequences / sequences
            else:
                weight = n_tokens / tokens
            step[key] = step.get(key, 0.0) + weight * value
    return step


def combine_steps(steps: list[dict]) -> dict:
    """One iteration's optimizer-step statistics, named: the mean over its steps, plus TEPO's mask on the
    first step (where the policy is the behaviour policy, so the measured mask must be empty) and on later ones."""
    record = {}
    for key in sorted({k for s in steps for k in s}):
        values = [s[key] for s in steps if key in s]
        name = {"loss": "losses/loss", "grad_norm": "charts/grad_norm", "lr": "charts/lr"}.get(key, f"losses/{key}")
        if key.startswith("mask_frac"):
            name = f"tepo/{key}"
        record[name] = sum(values) / len(values)
    if steps and "mask_frac" in steps[0]:
        record["tepo/mask_frac_first_step"] = steps[0]["mask_frac"]
        later = [s["mask_frac"] for s in steps[1:]]
        record["tepo/mask_frac_later_steps"] = sum(later) / len(later) if later else 0.0
    return record


def rl_record(sampled: list, trained, steps: dict, *, seconds: float, sample_s: float, update_s: float,
              ref_forward_s: float, train_s: float, opt_steps: int) -> dict:
    """The metrics of one RL iteration: what was sampled (every round of dynamic sampling), what was trained on,
    the combined optimizer-step statistics (``combine_steps``) and where the time went."""
    rewards = torch.cat([r.rewards for r in sampled])                        # every sampled response
    group_size = sampled[0].group_size
    spread = rewards.view(-1, group_size)                                    # (groups, G)
    record = {
        "charts/reward_mean": rewards.mean().item(),
        "charts/reward_std": rewards.std().item() if rewards.numel() > 1 else 0.0,
        "charts/zero_spread_groups": (spread.max(1).values == spread.min(1).values).float().mean().item(),
        "charts/groups_trained": trained.rewards.numel() // group_size,
        "charts/sample_rounds": len(sampled),
    }
    if trained.rewards.numel():
        record.update({"charts/response_len": trained.lengths.float().mean().item(),
                       "charts/truncated_frac": (~trained.finished).float().mean().item(),
                       "charts/entropy": (trained.entropy.sum() / trained.mask.sum()).item()})
    record["time/ref_forward_s"] = ref_forward_s if steps else 0.0
    record.update(steps)
    sampled_tokens = sum(int(r.mask.sum()) for r in sampled)
    record.update({"time/step_s": seconds, "time/sample_s": sample_s, "time/update_s": update_s,
                   "time/sampled_tokens_per_s": sampled_tokens / max(sample_s, 1e-9),
                   "time/train_s": train_s, "charts/opt_steps": opt_steps})
    return record
