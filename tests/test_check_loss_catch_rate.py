"""The kit catches every known bug on every run, at its default example counts: each loss of
minitepo.testing.known_bugs (public bugs rebuilt from their issue text, and planted ones) is checked with 20
different seeds, as 20 runs without --seed would be, and each property named for it must fail all 20 times.

And a correct DAPO computed in float32 either passes or fails only with the float32 hint, and passes at the hinted
tolerance, on every seed. Slow (about two minutes): CI skips it; run it with -m slow.
"""
import pytest
import torch

import minitepo.testing as kit
from minitepo.losses import dapo_loss
from minitepo.testing.known_bugs import KNOWN_BUGS

SEEDS = range(20)


@pytest.mark.slow
@pytest.mark.parametrize("bug", KNOWN_BUGS, ids=[b.name for b in KNOWN_BUGS])
def test_every_known_bug_is_caught_20_times_in_20(bug):
    caught = {name: 0 for name in bug.caught_by}
    for seed in SEEDS:
        for f in kit.check_loss(bug.loss, like=bug.like, agg=bug.agg, only=bug.caught_by, seed=seed):
            caught[f.property] += not f.holds
    assert caught == {name: len(SEEDS) for name in bug.caught_by}, f"{bug.name} ({bug.source}) caught {caught}"


def dapo_in_float32(logp, old_logp, advantages, mask, normalizer=None):
    f = torch.float32
    return dapo_loss(logp=logp.to(f), old_logp=old_logp.to(f), advantages=advantages.to(f), mask=mask,
                     normalizer=normalizer)[0]


@pytest.mark.slow
def test_a_float32_dapo_fails_only_with_the_hint_and_passes_at_the_hinted_tolerance_20_times_in_20():
    unhinted, failing_at_float32 = [], []
    for seed in SEEDS:
        for f in kit.check_loss(dapo_in_float32, like="dapo", seed=seed):
            if not f.holds and not any("float32-sized" in h for h in f.hints):
                unhinted.append((seed, f.property, f.example))
        failing_at_float32 += [(seed, f.property, f.example) for f in
                               kit.check_loss(dapo_in_float32, like="dapo", seed=seed, tol=kit.FLOAT32) if not f.holds]
    assert not unhinted, unhinted[0]
    assert not failing_at_float32, failing_at_float32[0]
