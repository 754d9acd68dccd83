"""End to end, the README's main job: a weak warm start, then TEPO RL (with dynamic sampling), on 3-digit add.

Two tiers. The default tier (marked ``e2e``, about 75 s on a 2-core CPU) runs the quickstart exactly as the README's
command does (the command line's 2 threads, with deterministic algorithms) but stops RL after 100 of its 250
iterations, with the schedule over those 100: every stage runs (the warm start's stop, dynamic sampling, TEPO's mask,
the plot), and RL must lift the warm start by 20 points. The whole command (``slow``, about 2 minutes) must end at
>= 75%; the README's seed table is the full record of it over seeds 0-19. tests/conftest.py puts one thread back
afterwards.
"""

from __future__ import annotations

import pytest

from minitepo.device import default_threads, set_cpu_threads
from minitepo.lab.quickstart import QuickstartConfig, run_quickstart
from minitepo.lab.runs import read_metrics

SHORT = 100
"""RL iterations of the default tier's run (the command's own are 250). Measured on the 2-core Intel machine of
issue 43's session: seed 1 went 31.0% -> 65.0% in 100 iterations (1.2 min printed)."""


def quickstart_as_the_readme_runs_it(tmp_path, **changes) -> dict:
    threads = default_threads("quickstart")          # as `python3 -m minitepo quickstart` runs it
    set_cpu_threads(threads, deterministic=threads > 1)
    return run_quickstart(QuickstartConfig(device="cpu", out=str(tmp_path / "qs"), **changes))


def check_every_stage_ran(tmp_path, result: dict) -> None:
    assert result["before"] <= 0.40
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


@pytest.mark.e2e
def test_the_quickstart_runs_every_stage_and_rl_lifts_the_weak_warm_start(tmp_path):
    result = quickstart_as_the_readme_runs_it(tmp_path, iterations=SHORT)
    check_every_stage_ran(tmp_path, result)
    assert result["after"] - result["before"] >= 0.20


@pytest.mark.e2e
@pytest.mark.slow
def test_quickstart_warm_start_is_weak_and_tepo_lifts_it_past_75_percent(tmp_path):
    result = quickstart_as_the_readme_runs_it(tmp_path)
    check_every_stage_ran(tmp_path, result)
    assert result["after"] >= 0.75
    assert result["after"] - result["before"] >= 0.35


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
