"""What a comparison of RL runs reports per run, and how it says what seed noise allows.

A run's curve (``metrics.jsonl``) is reduced to a few numbers: when it first reached a target accuracy
(in iterations, sampled prompts, sampled responses, sampled response tokens and training seconds: dynamic
sampling spends more samples per iteration, so iterations alone flatter it), its final and best accuracy, the mean of all its
held-out evaluations (``acc_auc``, the area under the accuracy curve per evaluation), how its policy
entropy fell (the minimum, and the iteration where it first fell to half its starting value: the
paper's word is *collapse*, so it is measured; over the trained rows, ``entropy_*``, and over every sampled
response, ``entropy_sampled_*``, the one that compares across data recipes), and how stable it was (evaluations where accuracy
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


TRAINED_ENTROPY_KEYS = ("charts/entropy_trained", "charts/entropy")
"""The trained-rows entropy's name, and the name it had before the all-sample entropy was recorded beside it."""
MECHANISM_KEYS = (("charts/len_cv_in_group", "len_cv"), ("charts/form_share/steps", "steps_share_sampled"),
                  ("losses/approx_kl_old_later_steps", "approx_kl_later"), ("losses/clip_frac_later_steps", "clip_later"),
                  ("tepo/mask_frac_later_steps", "mask_later"))
"""Per-iteration metrics a summary averages over the run (``NAME_mean``) and reports at the first iteration
(``NAME_first``), where the run recorded them."""
LAST_WINDOW = 10
"""Iterations averaged for a run's end-of-run entropy (one iteration's value is one rollout's noise)."""


def run_summary(records: list[dict], *, target: float, prompts_per_round: int, drop: float = 0.10) -> dict:
    """The per-run numbers above, from one run's metrics records (step 0 = the evaluation before training)."""
    evals = [r for r in records if "eval/greedy_acc/all" in r]
    if not evals:
        raise ValueError("the run has no held-out evaluation records")
    accs = [r["eval/greedy_acc/all"] for r in evals]
    # what had been sampled by the end of each iteration: prompts, responses, response tokens (None: not recorded)
    cost = {"prompts": 0, "responses": 0, "tokens": 0}
    cost_at, seconds = {}, {}
    costs_recorded = all("charts/tokens_sampled" in r for r in records[1:])
    for r in records:
        cost["prompts"] += r.get("charts/sample_rounds", 0) * prompts_per_round
        cost["responses"] += r.get("charts/responses_sampled", 0)
        cost["tokens"] += r.get("charts/tokens_sampled", 0)
        cost_at[r["step"]] = dict(cost)
        seconds[r["step"]] = r.get("time/train_s", 0.0)
    reached = next((r["step"] for r in evals if r["eval/greedy_acc/all"] >= target), None)
    # a run that never reached the target is counted at the censoring point: one evaluation interval past its
    # last evaluation (110 for 100 iterations evaluated every 10), and what it would have sampled by then
    last = evals[-1]["step"]
    censor = last + (last - evals[-2]["step"] if len(evals) > 1 else 1)
    entropy = _curve(records, next((k for k in TRAINED_ENTROPY_KEYS if any(k in r for r in records)), None))
    sampled_entropy = _curve(records, "charts/entropy_sampled")
    best_so_far, drops = -1.0, 0
    for acc in accs:
        drops += acc < best_so_far - drop
        best_so_far = max(best_so_far, acc)
    summary = {
        "start": accs[0], "final": accs[-1], "best": max(accs), "acc_auc": sum(accs) / len(accs),
        "iters_to_target": reached,
        "iters_to_target_censored": censor if reached is None else reached,
        "seconds_to_target": None if reached is None else seconds[reached],
        "train_seconds": seconds[records[-1]["step"]],
        **_entropy_numbers("entropy", entropy), **_entropy_numbers("entropy_sampled", sampled_entropy),
        "unstable_evals": drops,
    }
    for what in ("prompts", "responses", "tokens"):
        recorded = what == "prompts" or costs_recorded
        total = cost[what]
        summary[f"{what}_to_target"] = None if reached is None or not recorded else cost_at[reached][what]
        summary[f"{what}_to_target_censored"] = (None if not recorded else cost_at[reached][what] if reached is not None
                                                 else total * censor / max(last, 1))
        summary[f"{what}_sampled"] = total if recorded else None
    # the final evaluation's per-form numbers (tasks whose answers take several forms, e.g. add_or_cot)
    summary.update({f"final_{k.removeprefix('eval/greedy_acc/').replace('/', '_')}": v for k, v in evals[-1].items()
                    if k.startswith("eval/greedy_acc/form_")})
    # what the run's iterations measured, on average: how unequal the lengths in a group were, and how far the later
    # optimizer steps of a rollout strayed from the policy that sampled it
    for key, name in MECHANISM_KEYS:
        seen = [r[key] for r in records if key in r]
        if seen:
            summary[f"{name}_mean"] = sum(seen) / len(seen)
            summary[f"{name}_first"] = seen[0]
    passes = [(k, r[k]) for r in evals for k in r if k.startswith("eval/pass@")]
    if passes:
        summary["pass_at_k_final"] = passes[-1][1]
        summary["pass_at_k_name"] = passes[-1][0].removeprefix("eval/")
    return summary


def _curve(records: list[dict], key: str | None) -> list[tuple[int, float]]:
    return [(r["step"], r[key]) for r in records if key and key in r]


def _entropy_numbers(name: str, curve: list[tuple[int, float]]) -> dict:
    """An entropy curve's start, minimum, end (the mean of its last ``LAST_WINDOW`` iterations) and the iteration
    where it first fell to half its start (None: never)."""
    if not curve:
        return {f"{name}_start": None, f"{name}_min": None, f"{name}_last": None, f"{name}_halved_at": None}
    start = curve[0][1]
    tail = [h for _, h in curve[-LAST_WINDOW:]]
    return {f"{name}_start": start, f"{name}_min": min(h for _, h in curve), f"{name}_last": sum(tail) / len(tail),
            f"{name}_halved_at": next((step for step, h in curve if h <= start / 2), None)}


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
    df = welch_df(math.sqrt(va), len(a), math.sqrt(vb), len(b))
    se = math.sqrt(se2)
    half = t_quantile(0.5 + level / 2, df) * se
    return {"diff": diff, "low": diff - half, "high": diff + half, "p": min(1.0, 2.0 * t_sf(abs(diff) / se, df))}


def welch_df(sd_a: float, n_a: int, sd_b: float, n_b: int) -> float | None:
    """Welch-Satterthwaite degrees of freedom of two groups' mean difference; None when neither group has any spread."""
    va, vb = sd_a ** 2 / n_a, sd_b ** 2 / n_b
    if va + vb == 0.0:
        return None
    return (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))


def min_detectable_effect(sd_a: float, n_a: int, sd_b: float, n_b: int, *, alpha: float = 0.05,
                          power: float = 0.8) -> float | None:
    """The smallest true difference of means that a two-sided Welch test at level ``alpha`` detects with probability
    about ``power``, for groups of ``n_a`` and ``n_b`` seeds with standard deviations ``sd_a`` and ``sd_b``:

        MDE = (t_{1 - alpha/2, df} + t_{power, df}) * sqrt(sd_a^2 / n_a + sd_b^2 / n_b)

    with the Welch-Satterthwaite df (the normal-theory formula with t quantiles). In a Holm-corrected family of m
    tests the strictest threshold is alpha / m (Holm's first step): an effect of the MDE at alpha / m is detected
    with that power whatever the other tests do, so pass alpha / m for a family. With few seeds and a small alpha the
    formula is optimistic (a simulation in tests/test_search_report.py), so the true minimum is, if anything, larger.
    None when neither group has any spread (every value equal: the test says nothing)."""
    if n_a < 2 or n_b < 2:
        raise ValueError(f"a minimum detectable effect needs at least 2 seeds per group, got {n_a} and {n_b}")
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha and power must lie in (0, 1), got alpha {alpha} and power {power}")
    df = welch_df(sd_a, n_a, sd_b, n_b)
    if df is None:
        return None
    return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * math.sqrt(sd_a ** 2 / n_a + sd_b ** 2 / n_b)


def min_detectable_effect_of(a: list[float], b: list[float], *, alpha: float = 0.05,
                             power: float = 0.8) -> float | None:
    """``min_detectable_effect`` with the spreads and sizes measured on two groups of per-seed values."""
    return min_detectable_effect(sd(a), len(a), sd(b), len(b), alpha=alpha, power=power)


def sd(values: list[float]) -> float:
    """The sample standard deviation (n - 1 in the denominator)."""
    return math.sqrt(_mean_var(values)[1])


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
