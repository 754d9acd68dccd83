"""What one RL iteration measured: its optimizer steps' statistics combined, and its metrics record.

The RL trainer's metric names, all in one place. Groups: charts/ (what the run is doing), losses/ (the objective's
statistics), tepo/ (TEPO's mask), time/ (seconds), eval/ (held-out accuracy, added by the run loop).

Two populations are measured, and each name says which: *sampled* (every response sampled this iteration, in
every round of dynamic sampling) and *trained* (the rows the optimizer steps use: with dynamic sampling only the
groups whose answers differ). An entropy over trained rows compares badly across objectives that train on
different rows, so ``charts/entropy_sampled`` is the one to compare; ``charts/entropy_trained`` is the policy's
entropy where the gradient acts.
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
    # how far the policy strays from the one that sampled the rollout: on the last step, and over the later steps
    # (the first step is on-policy, so its ratios are 1 and nothing is clipped)
    for key in ("approx_kl_old", "clip_frac"):
        if steps and key in steps[-1]:
            record[f"losses/{key}_last_step"] = steps[-1][key]
            later = [s[key] for s in steps[1:] if key in s]
            record[f"losses/{key}_later_steps"] = sum(later) / len(later) if later else 0.0
    return record


def length_cv_in_groups(lengths: torch.Tensor, group_size: int) -> float:
    """The mean over groups of the coefficient of variation of response lengths within a group (population sd /
    mean): 0 when every response of a group has the same length; how unequally token-mean and per-sequence
    aggregation weigh a group's responses. ``lengths``: (B,), rows grouped by prompt."""
    per_group = lengths.float().view(-1, group_size)                         # (groups, G)
    mean = per_group.mean(1)
    sd = per_group.std(1, unbiased=False)
    return (sd / mean.clamp(min=1e-9)).mean().item()


def rl_record(sampled: list, trained, steps: dict, *, seconds: float, sample_s: float, update_s: float,
              ref_forward_s: float, opt_steps: int, forms: tuple[str, ...] = ()) -> dict:
    """The metrics of one RL iteration: what was sampled (every round of dynamic sampling), what was trained on,
    the combined optimizer-step statistics (``combine_steps``) and where the time went. ``forms``: the task's
    answer forms (``task.FORMS``), whose share and accuracy among the sampled responses are recorded too."""
    rewards = torch.cat([r.rewards for r in sampled])                        # every sampled response
    lengths = torch.cat([r.lengths for r in sampled])                        # (B_sampled,)
    sampled_tokens = int(lengths.sum())
    group_size = sampled[0].group_size
    spread = rewards.view(-1, group_size)                                    # (groups, G)
    record = {
        "charts/reward_mean": rewards.mean().item(),
        "charts/reward_std": rewards.std().item() if rewards.numel() > 1 else 0.0,
        "charts/zero_spread_groups": (spread.max(1).values == spread.min(1).values).float().mean().item(),
        "charts/groups_trained": trained.rewards.numel() // group_size,
        "charts/sample_rounds": len(sampled),
        # what the iteration cost, whatever the data recipe: responses and response tokens sampled (every round)
        "charts/responses_sampled": lengths.numel(),
        "charts/tokens_sampled": sampled_tokens,
        "charts/response_len_sampled": lengths.float().mean().item(),
        "charts/len_cv_in_group": length_cv_in_groups(lengths, group_size),
        # the policy's entropy over EVERY sampled token (nats per token): comparable across data recipes
        "charts/entropy_sampled": (sum(r.entropy.sum() for r in sampled) / max(sampled_tokens, 1)).item(),
    }
    if forms:
        form = torch.cat([r.form for r in sampled])                          # (B_sampled,) index into forms
        correct = torch.cat([r.correct for r in sampled]).float()
        for index, name in enumerate(forms):
            share = form == index
            record[f"charts/form_share/{name}"] = share.float().mean().item()
            record[f"charts/form_acc/{name}"] = correct[share].mean().item() if share.any() else 0.0
    if trained.rewards.numel():
        record.update({"charts/response_len": trained.lengths.float().mean().item(),
                       "charts/truncated_frac": (~trained.finished).float().mean().item(),
                       # over the trained rows only (with dynamic sampling: the groups with mixed answers)
                       "charts/entropy_trained": (trained.entropy.sum() / trained.mask.sum()).item()})
    record["time/ref_forward_s"] = ref_forward_s if steps else 0.0
    record.update(steps)
    record.update({"time/step_s": seconds, "time/sample_s": sample_s, "time/update_s": update_s,
                   "time/sampled_tokens_per_s": sampled_tokens / max(sample_s, 1e-9),
                   "charts/opt_steps": opt_steps})
    return record
