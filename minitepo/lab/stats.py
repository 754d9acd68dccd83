"""What a comparison of RL runs reports per run, and how it says what seed noise allows.

A run's curve (``metrics.jsonl``) is reduced to a few numbers: when it first reached a target accuracy
(in iterations, sampled prompts and training seconds), its final and best accuracy, the mean of all its
held-out evaluations (``acc_auc``, the area under the accuracy curve per evaluation), how its policy
entropy fell (the minimum, and the iteration where it first fell to half its starting value: the
paper's word is *collapse*, so it is measured), and how stable it was (evaluations where accuracy
dropped more than ``drop`` below the best so far). Iterations and prompts to target also come *censored*: a run
that never reached it counts at the censoring point, so that a mean over seeds does not silently drop the
slow runs. Over seeds, every number gets a mean and a 95% Student-t interval (``t_mean_ci``); a difference
between two entries gets Welch's interval and p-value (``welch_test``), and a family of such tests a Holm
correction (``holm``). The percentile bootstrap (``bootstrap_mean_ci``) is kept for the earlier pages that
quote it; with five seeds it covers about 85% for a nominal 95%.
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
    # a run that never reached the target is counted at the censoring point: one evaluation interval past its
    # last evaluation (110 for 100 iterations evaluated every 10), and the prompts it would have sampled by then
    last = evals[-1]["step"]
    censor = last + (last - evals[-2]["step"] if len(evals) > 1 else 1)
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
        "iters_to_target_censored": censor if reached is None else reached,
        "prompts_to_target_censored": (prompts_so_far * censor / max(last, 1)) if reached is None else prompts_at[reached],
        "seconds_to_target": None if reached is None else seconds[reached],
        "prompts_sampled": prompts_so_far, "train_seconds": seconds[records[-1]["step"]],
        "entropy_start": entropy[0][1] if entropy else None,
        "entropy_min": min(h for _, h in entropy) if entropy else None,
        "entropy_halved_at": halved, "unstable_evals": drops,
    }


# ----------------------------------------------------------------------------------------------
# Student-t intervals (Welch): these keep their coverage with five seeds, where a percentile bootstrap
# over five values covers the truth only about 85% of the time for a nominal 95%.
# ----------------------------------------------------------------------------------------------

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz's method)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, for 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def t_quantile(q: float, df: float) -> float:
    """The q-quantile of Student's t with ``df`` degrees of freedom (bisection on ``t_sf``)."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    if q < 0.5:
        return -t_quantile(1.0 - q, df)
    low, high = 0.0, 1.0
    while t_sf(high, df) > 1.0 - q:
        high *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if t_sf(mid, df) > 1.0 - q else (low, mid)
    return 0.5 * (low + high)


def _mean_var(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    return mean, sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def t_mean_ci(values: list[float], *, level: float = 0.95) -> tuple[float, float, float] | None:
    """(mean, low, high): mean +- t_{n-1} s / sqrt(n); None when empty; (mean, nan, nan) for one value."""
    if not values:
        return None
    if len(values) == 1:
        return values[0], math.nan, math.nan
    mean, var = _mean_var(values)
    half = t_quantile(0.5 + level / 2, len(values) - 1) * math.sqrt(var / len(values))
    return mean, mean - half, mean + half


def welch_test(a: list[float], b: list[float], *, level: float = 0.95) -> dict | None:
    """Welch's t for mean(a) - mean(b): {"diff", "low", "high", "p"} (two-sided p; interval at ``level``), with
    the Welch-Satterthwaite degrees of freedom. None unless both groups have two or more values."""
    if len(a) < 2 or len(b) < 2:
        return None
    (ma, va), (mb, vb) = _mean_var(a), _mean_var(b)
    diff = ma - mb
    se2 = va / len(a) + vb / len(b)
    if se2 == 0.0:  # no spread in either group: the difference is exact
        return {"diff": diff, "low": diff, "high": diff, "p": 1.0 if diff == 0 else 0.0}
    df = se2 ** 2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    se = math.sqrt(se2)
    half = t_quantile(0.5 + level / 2, df) * se
    return {"diff": diff, "low": diff - half, "high": diff + half, "p": min(1.0, 2.0 * t_sf(abs(diff) / se, df))}


def holm(pvalues: dict) -> dict:
    """Holm's step-down adjustment of a family of p-values ({name: p} -> {name: adjusted p}): a test is
    significant at level alpha across the family when its adjusted p is <= alpha."""
    order = sorted(pvalues, key=lambda k: pvalues[k])
    adjusted, running = {}, 0.0
    for rank, name in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * pvalues[name]))
        adjusted[name] = running
    return adjusted


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
    if math.isnan(low) or math.isnan(high):
        return f"{mean:.3g} [one value]"
    return f"{mean:.3g} [{low:.3g}, {high:.3g}]"
