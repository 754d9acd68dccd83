"""The statistics a comparison leans on: Student-t quantiles, intervals that keep their coverage with five
seeds, Welch's test and Holm's correction."""

from __future__ import annotations

import math
import random

import pytest

from minitepo.lab.stats import bootstrap_mean_ci, holm, t_mean_ci, t_quantile, t_sf, welch_test


@pytest.mark.parametrize("df, q975", [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (30, 2.0423), (1e6, 1.95997)])
def test_t_quantiles_match_the_printed_table(df, q975):
    assert t_quantile(0.975, df) == pytest.approx(q975, abs=1e-4)
    assert t_quantile(0.025, df) == pytest.approx(-q975, abs=1e-4)
    assert t_sf(q975, df) == pytest.approx(0.025, abs=1e-5)


def test_the_t_survival_function_of_one_degree_of_freedom_is_the_cauchy_tail():
    for t in (-3.0, -0.5, 0.0, 0.7, 4.0):
        assert t_sf(t, 1) == pytest.approx(0.5 - math.atan(t) / math.pi, abs=1e-12)


def _coverage(interval, n: int, trials: int, seed: int) -> float:
    rng, hits = random.Random(seed), 0
    for _ in range(trials):
        mean, low, high = interval([rng.gauss(3.0, 2.0) for _ in range(n)])
        hits += low <= 3.0 <= high
    return hits / trials


def test_the_t_interval_keeps_its_coverage_with_five_seeds_where_the_bootstrap_does_not():
    """Normal data, n = 5, nominal 95%: the t interval covers the true mean >= 93% of the time (exactly 95% in
    theory); the percentile bootstrap, which the earlier results page used, about 85%."""
    t_cov = _coverage(t_mean_ci, 5, 4000, seed=1)
    assert t_cov >= 0.93
    boot_cov = _coverage(lambda v: bootstrap_mean_ci(v, resamples=400), 5, 1000, seed=2)
    assert boot_cov < 0.90


def test_welch_difference_interval_keeps_its_coverage_and_its_false_alarm_rate():
    rng, hits, alarms, trials = random.Random(3), 0, 0, 3000
    for _ in range(trials):
        a = [rng.gauss(1.0, 1.0) for _ in range(5)]
        b = [rng.gauss(1.0, 3.0) for _ in range(5)]                  # unequal spreads: Welch's case
        test = welch_test(a, b)
        hits += test["low"] <= 0.0 <= test["high"]
        alarms += test["p"] < 0.05
    assert hits / trials >= 0.93 and alarms / trials <= 0.07
    assert (alarms / trials) == pytest.approx(1 - hits / trials, abs=1e-9)   # p < 0.05 iff 0 is outside the interval


def test_welch_test_calls_a_clear_difference_and_refuses_what_it_cannot_estimate():
    far = welch_test([10.0, 11.0, 12.0], [1.0, 2.0, 3.0])
    assert far["diff"] == 9.0 and far["low"] > 0 and far["p"] < 0.01
    near = welch_test([1.0, 5.0, 3.0], [2.0, 4.0, 3.5])
    assert near["low"] < 0 < near["high"] and near["p"] > 0.5
    assert welch_test([1.0], [2.0, 3.0]) is None
    assert welch_test([2.0, 2.0], [1.0, 1.0]) == {"diff": 1.0, "low": 1.0, "high": 1.0, "p": 0.0}
    assert t_mean_ci([]) is None and math.isnan(t_mean_ci([2.0])[1])


def test_holm_multiplies_the_smallest_p_by_the_family_size_and_keeps_the_order():
    adjusted = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.5})
    assert adjusted == pytest.approx({"a": 0.04, "c": 0.09, "b": 0.09, "d": 0.5})
    assert holm({}) == {} and holm({"x": 0.7}) == {"x": 0.7}



def test_the_minimum_detectable_effect_tends_to_the_normal_formula_and_grows_with_holms_level():
    """(Its hand-computed case and its power by simulation are in tests/test_search_report.py.)"""
    from minitepo.lab.stats import min_detectable_effect
    big = min_detectable_effect(1.0, 10_000, 1.0, 10_000)
    assert big == pytest.approx((1.959964 + 0.841621) * math.sqrt(2 / 10_000), rel=1e-3)
    assert min_detectable_effect(1.0, 8, 1.0, 8, alpha=0.05 / 3) > min_detectable_effect(1.0, 8, 1.0, 8)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        min_detectable_effect(1.0, 1, 1.0, 8)
