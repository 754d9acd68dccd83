"""What a comparison of RL runs reports per run, and how it says what seed noise allows.

A run's curve (``metrics.jsonl``) is reduced to a few numbers: when it first reached a target accuracy
(in iterations, sampled prompts and training seconds), its final and best accuracy, the mean of all its
held-out evaluations (``acc_auc``, the area under the accuracy curve per evaluation), how its policy
entropy fell (the minimum, and the iteration where it first fell to half its starting value: the
paper's word is *collapse*, so it is measured), and how stable it was (evaluations where accuracy
dropped more than ``drop`` below the best so far). Over seeds, every number gets a mean and a 95%
bootstrap interval; a difference between two objectives is called distinguishable from seed noise
only when the bootstrap interval of the difference of means excludes 0.
"""

from __future__ import annotations

import math
import random


def run_summary(records: list[dict], *, target: float, prompts_per_round: int, drop: float = 0.10) -> dict:
    """The per-run numbers above, from one run's metrics records (step 0 = the evaluation before training)."""
    evals = [r for r in records if "eval/greedy_acc/all" in r]
    if not evals:
        raise ValueError("the run has no held-out evaluation records")
    accs = [r["eval/greedy_acc/all"] for r in evals]
    prompts_so_far, seconds = 0, {}
    prompts_at = {}
    for r in records:
        prompts_so_far += r.get("charts/sample_rounds", 0) * prompts_per_round
        prompts_at[r["step"]] = prompts_so_far
        seconds[r["step"]] = r.get("time/train_s", 0.0)
    reached = next((r["step"] for r in evals if r["eval/greedy_acc/all"] >= target), None)
    entropy = [(r["step"], r["charts/entropy"]) for r in records if "charts/entropy" in r]
    halved = None
    if entropy:
        start = entropy[0][1]
        halved = next((step for step, h in entropy if h <= start / 2), None)
    best_so_far, drops = -1.0, 0
    for acc in accs:
        drops += acc < best_so_far - drop
        best_so_far = max(best_so_far, acc)
    return {
        "start": accs[0], "final": accs[-1], "best": max(accs), "acc_auc": sum(accs) / len(accs),
        "iters_to_target": reached,
        "prompts_to_target": None if reached is None else prompts_at[reached],
        "seconds_to_target": None if reached is None else seconds[reached],
        "prompts_sampled": prompts_so_far, "train_seconds": seconds[records[-1]["step"]],
        "entropy_start": entropy[0][1] if entropy else None,
        "entropy_min": min(h for _, h in entropy) if entropy else None,
        "entropy_halved_at": halved, "unstable_evals": drops,
    }


def bootstrap_mean_ci(values: list[float], *, level: float = 0.95, resamples: int = 2000,
                      seed: int = 0) -> tuple[float, float, float] | None:
    """(mean, low, high): the mean and a percentile bootstrap interval over ``values``; None when empty."""
    if not values:
        return None
    mean = sum(values) / len(values)
    if len(values) == 1:
        return mean, mean, mean
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(values, k=len(values))) / len(values) for _ in range(resamples))
    return mean, _quantile(means, (1 - level) / 2), _quantile(means, 1 - (1 - level) / 2)


def bootstrap_difference_ci(a: list[float], b: list[float], *, level: float = 0.95, resamples: int = 2000,
                            seed: int = 0) -> tuple[float, float, float] | None:
    """(mean(a) - mean(b), low, high), resampling each group independently; None when either is empty."""
    if not a or not b:
        return None
    rng = random.Random(seed)
    diffs = sorted(sum(rng.choices(a, k=len(a))) / len(a) - sum(rng.choices(b, k=len(b))) / len(b)
                   for _ in range(resamples))
    return (sum(a) / len(a) - sum(b) / len(b), _quantile(diffs, (1 - level) / 2),
            _quantile(diffs, 1 - (1 - level) / 2))


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation quantile of an already sorted list."""
    position = q * (len(sorted_values) - 1)
    low, high = math.floor(position), math.ceil(position)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def format_ci(ci: tuple[float, float, float] | None) -> str:
    """``mean [low, high]`` with three significant digits, or a dash."""
    if ci is None:
        return "—"
    mean, low, high = ci
    return f"{mean:.3g} [{low:.3g}, {high:.3g}]"
