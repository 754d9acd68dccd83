"""End to end, the README's main job: a weak warm start, then TEPO RL (with dynamic sampling), on 3-digit add.

Marked ``e2e`` (a few minutes on 2 CPU cores); CI runs it. Every number is seeded. The default-seed run uses the
threads the command line gives the quickstart (2, with deterministic algorithms, as the README's command runs; on
2 cores it took 117 s here against 143 s with one thread, in separate runs); tests/conftest.py puts one thread back
afterwards.
"""

from __future__ import annotations

import pytest

from minitepo.device import default_threads, set_cpu_threads
from minitepo.lab.quickstart import QuickstartConfig, run_quickstart
from minitepo.lab.runs import read_metrics


@pytest.mark.e2e
def test_quickstart_warm_start_is_weak_and_tepo_lifts_it_past_75_percent(tmp_path):
    threads = default_threads("quickstart")          # as `python3 -m minitepo quickstart` runs it
    set_cpu_threads(threads, deterministic=threads > 1)
    result = run_quickstart(QuickstartConfig(device="cpu", out=str(tmp_path / "qs")))
    assert result["before"] <= 0.40
    assert result["after"] >= 0.75
    assert result["after"] - result["before"] >= 0.35
    sft = read_metrics(tmp_path / "qs" / "warmstart")
    trigger = [r for r in sft if "charts/settle_trigger_acc" in r]
    assert len(trigger) == 1  # the warm start stopped once, the first step 3-digit accuracy reached settle_at ...
    assert trigger[0]["charts/settle_trigger_acc"] >= 0.30
    assert sft[-1]["step"] == trigger[0]["step"]  # ... right there (settle_steps=0) ...
    assert sft[-1]["eval/greedy_acc/level/3"] == result["before"]  # ... and RL starts from that checkpoint
    assert (tmp_path / "qs" / "quickstart.png").stat().st_size > 0
    rl = read_metrics(tmp_path / "qs" / "rl")
    assert all(r["tepo/mask_frac_first_step"] == 0.0 for r in rl[1:])
    assert any(r["tepo/mask_frac_later_steps"] > 0.0 for r in rl[1:])
    # dynamic sampling: every iteration trained on groups with both a right and a wrong answer only
    prompts = QuickstartConfig().prompts
    assert all(r["charts/groups_trained"] <= prompts for r in rl[1:]) and any(r["charts/sample_rounds"] > 1 for r in rl[1:])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 2])
def test_quickstart_meets_its_target_for_the_seeds_that_used_to_fail(tmp_path, seed):
    """Seeds 0 and 2 are the two the issue named as failing (26.5% -> 48%, and a warm start that never settled).
    The README's seed table (the command's 2 threads) has them at 33.0% -> 94.0% and 30.0% -> 97.5%; this test runs
    with pytest's one thread, whose float sums, and so trajectory, differ. ``-m slow``: about three minutes each on
    a 2-core CPU."""
    result = run_quickstart(QuickstartConfig(device="cpu", seed=seed, out=str(tmp_path / "qs")))
    assert result["before"] <= 0.40
    assert result["after"] >= 0.75
