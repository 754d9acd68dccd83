"""End to end, the README's main job: a settled weak warm start, then TEPO RL, on 3-digit add.

Marked ``e2e`` (a few minutes on 2 CPU cores); CI runs it. Every number is seeded, and with one
CPU thread (tests/conftest.py, and the command line's default) the run is deterministic.
"""

from __future__ import annotations

import pytest

from minitepo.quickstart import QuickstartConfig, run_quickstart
from minitepo.runs import read_metrics


@pytest.mark.e2e
def test_quickstart_warm_start_is_weak_and_settled_and_tepo_lifts_it_past_75_percent(tmp_path):
    result = run_quickstart(QuickstartConfig(device="cpu", out=str(tmp_path / "qs")))
    assert result["before"] <= 0.40
    assert result["after"] >= 0.75
    assert result["after"] - result["before"] >= 0.35
    sft = read_metrics(tmp_path / "qs" / "warmstart")
    trigger = [r for r in sft if "charts/settle_trigger_acc" in r]
    assert len(trigger) == 1  # settling began once, when 3-digit accuracy first reached settle_at ...
    assert trigger[0]["charts/settle_trigger_acc"] >= 0.25
    final = sft[-1]
    assert final["step"] == trigger[0]["step"] + 5  # ... and training stopped after the settling decay,
    assert final["charts/lr"] < 0.25 * trigger[0]["charts/lr"]  # with the learning rate decayed:
    assert final["eval/greedy_acc/level/3"] == result["before"]  # RL starts from that settled checkpoint
    assert (tmp_path / "qs" / "quickstart.png").stat().st_size > 0
    rl = read_metrics(tmp_path / "qs" / "rl")
    assert all(r["tepo/mask_frac_first_step"] == 0.0 for r in rl[1:])
    assert any(r["tepo/mask_frac_later_steps"] > 0.0 for r in rl[1:])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, pytest.param(2, marks=pytest.mark.xfail(
    strict=True, reason="measured 29.0% -> 74.5% since stop 17's numerics change (first evaluation >= 75% at "
                        "iteration 240, then back below): 0.5 points short; issue 11 is open"))])
def test_quickstart_meets_its_target_for_the_seeds_that_used_to_fail(tmp_path, seed):
    """Seeds 0 and 2 are the two the issue named as failing before ``add`` wrote its operands ones-first (26.5% ->
    48%, and a warm start that never settled). Measured with today's code (stop 18): 33.0% -> 78.5% and
    29.0% -> 74.5%, so seed 2 is an expected failure, strict: it fails the suite if it starts passing unnoticed
    (README, quickstart seed table). ``-m slow``: about three minutes each on a 2-core CPU."""
    result = run_quickstart(QuickstartConfig(device="cpu", seed=seed, out=str(tmp_path / "qs")))
    assert result["before"] <= 0.40
    assert result["after"] >= 0.75
