"""How large a difference five seeds could have detected: the minimum detectable effect (MDE) of a Welch test.

A test that comes out "not distinguishable" says little unless we know what it could have seen. For two groups
of runs with per-seed standard deviations s_a, s_b over n_a, n_b seeds, a two-sided Welch test at level alpha
detects a true difference of

    MDE = (t_{1 - alpha/2, df} + t_{power, df}) * sqrt(s_a^2 / n_a + s_b^2 / n_b)

with probability about ``power`` (normal-theory approximation, Welch-Satterthwaite df). In a Holm-corrected
family of m tests the strictest threshold is alpha / m (Holm's first step, equal to Bonferroni): an effect of the
MDE at alpha / m is detected with that power whatever the other tests of the family do, so that is the alpha used
for a family. With five seeds and alpha / 16 the approximation is optimistic (a simulation in
tests/test_search_report.py finds the real Welch test's power at the MDE below 80%), so the true minimum is, if
anything, larger.

(This helper may move to minitepo/lab/stats.py; it lives here while that file is being edited.)
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minitepo.lab.stats import t_quantile  # noqa: E402

POWER = 0.8


def welch_df(sd_a: float, n_a: int, sd_b: float, n_b: int) -> float | None:
    """Welch-Satterthwaite degrees of freedom; None when neither group has any spread."""
    va, vb = sd_a ** 2 / n_a, sd_b ** 2 / n_b
    if va + vb == 0.0:
        return None
    return (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))


def mde(sd_a: float, n_a: int, sd_b: float, n_b: int, *, alpha: float = 0.05, power: float = POWER) -> float | None:
    """The smallest true difference a two-sided Welch test at ``alpha`` detects with probability ``power``
    (formula above). None when neither group has any spread (every value equal: the test cannot say anything)."""
    if n_a < 2 or n_b < 2:
        raise ValueError(f"each group needs two or more runs for a standard deviation, got {n_a} and {n_b}")
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha and power must lie in (0, 1), got alpha {alpha} and power {power}")
    df = welch_df(sd_a, n_a, sd_b, n_b)
    if df is None:
        return None
    return (t_quantile(1.0 - alpha / 2.0, df) + t_quantile(power, df)) * math.sqrt(sd_a ** 2 / n_a + sd_b ** 2 / n_b)


def sd(values: list[float]) -> float:
    """The sample standard deviation (n - 1)."""
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def mde_of(a: list[float], b: list[float], *, alpha: float = 0.05, power: float = POWER) -> float | None:
    """``mde`` with the standard deviations and sizes measured on two groups of per-seed values."""
    return mde(sd(a), len(a), sd(b), len(b), alpha=alpha, power=power)
