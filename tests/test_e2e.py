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
    sft = [r for r in read_metrics(tmp_path / "qs" / "warmstart") if "eval/greedy_acc/level/3" in r]
    settle = [r for r in sft if r["step"] >= sft[-1]["step"] - 10]
    assert settle[-1]["charts/lr"] < 0.15 * max(r["charts/lr"] for r in sft)  # the lr has decayed
    level3 = [r["eval/greedy_acc/level/3"] for r in settle]
    assert level3 == sorted(level3)  # accuracy rose monotonically while settling, no lucky peak
    assert (tmp_path / "qs" / "quickstart.png").stat().st_size > 0
    rl = read_metrics(tmp_path / "qs" / "rl")
    assert all(r["tepo/mask_frac_first_step"] == 0.0 for r in rl[1:])
    assert any(r["tepo/mask_frac_later_steps"] > 0.0 for r in rl[1:])
