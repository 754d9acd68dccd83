"""The kit says why a property failed when it can tell: a float32-sized difference names the tolerance that
accepts it, a loss that aggregates otherwise is told which aggregation its weights match, a keyword loss with no
way to be told the step's normaliser is told so; a loss that cannot run is refused rather than judged; and a
project's own pytest file of three lines runs the kit on its loss."""
import pytest
import torch

import minitepo.testing as kit
from minitepo.losses import dapo_loss
from minitepo.testing import known_bugs

pytest_plugins = ["pytester"]


def dapo_in_float32(logp, old_logp, advantages, mask, normalizer=None):
    f = torch.float32
    return dapo_loss(logp=logp.to(f), old_logp=old_logp.to(f), advantages=advantages.to(f), mask=mask,
                     normalizer=normalizer)[0]


def per_response_mean(logp, old_logp, advantages, mask, normalizer=None):
    return dapo_loss(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, agg="seq-mean-token-mean",
                     normalizer=normalizer)[0]


def dapo_keyword(logp, old_logp, advantages, mask, n_tokens=None):
    return dapo_loss(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, normalizer=n_tokens)[0]


FEW = ["micro-batches", "token order", "on-policy weights"]


def test_a_correct_float32_dapo_fails_only_with_the_float32_hint_and_passes_at_that_tolerance():
    findings = kit.check_loss(dapo_in_float32, like="dapo", only=FEW, seed=0)
    bad = [f for f in findings if not f.holds]
    assert bad, "float64 round-off tolerance should see float32's differences"
    for f in bad:
        assert any("float32-sized" in h and "--rtol 1e-05 --atol 1e-06" in h for h in f.hints), f.hints
    assert "every violation is a float32-sized difference" in kit.verdicts.summary(findings)
    assert all(f.holds for f in kit.check_loss(dapo_in_float32, like="dapo", only=FEW, seed=0, tol=kit.FLOAT32))


def test_a_real_bug_gets_no_float32_hint():
    f, = kit.check_loss(known_bugs.per_micro_batch_norm, like="dapo", only=["micro-batches"], seed=0)
    assert not f.holds and not any("float32" in h for h in f.hints), f.hints


@pytest.mark.parametrize("loss, like, agg, expected", [
    (per_response_mean, "dapo", None, "the weights of seq-mean-token-mean, not of token-mean: if the loss means "
                                      "seq-mean-token-mean, check it with --agg seq-mean-token-mean (or --like grpo)"),
    (known_bugs.token_sum_as_token_mean, "dapo", "seq-mean-token-sum", "w_i = 1/N, the weights of token-mean"),
    (known_bugs.dr_grpo_padded_width, "dr_grpo", None, "w_i = 1/(B T), T the padded width"),
])
def test_on_policy_weights_name_the_aggregation_the_gradient_shows(loss, like, agg, expected):
    f, = kit.check_loss(loss, like=like, agg=agg, only=["on-policy weights"], seed=0)
    assert not f.holds and any(expected in h for h in f.hints), f.hints


def test_a_keyword_loss_without_a_normaliser_is_told_so_and_naming_its_parameter_fixes_it():
    f, = kit.check_loss(dapo_keyword, like="dapo", only=["equal micro-batches"], seed=0)
    assert not f.holds and any("cannot receive the step's normaliser" in h for h in f.hints), f.hints
    f, = kit.check_loss(dapo_keyword, like="dapo", only=["equal micro-batches"], seed=0, normalizer="n_tokens")
    assert f.holds, f.example


def test_a_loss_that_cannot_run_on_a_plain_batch_is_refused_not_judged():
    def wrong_arity(batch, step):
        return batch.logp.sum(-1)                                       # (B,), not a scalar

    with pytest.raises(kit.UnusableLoss, match=r"cannot run on a plain batch .* must return a scalar tensor"):
        kit.check_loss(wrong_arity, like="dapo")
    with pytest.raises(kit.UnusableLoss, match="the loss is nan with no junk anywhere"):
        kit.check_loss(lambda batch, step: batch.logp.sum() * float("nan"), like="dapo")
    with pytest.raises(ValueError, match="'mask containment' does not apply to dapo"):
        kit.check_loss(kit.objective("dapo"), like="dapo", only=["mask containment"])


def test_a_projects_three_line_pytest_file_runs_the_kit(pytester):
    pytester.makepyfile(project_losses='''
        from minitepo.losses import dapo_loss
        from minitepo.testing.known_bugs import mask_by_multiplying as my_buggy_dapo

        def my_dapo(logp, old_logp, advantages, mask, normalizer=None):
            return dapo_loss(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, normalizer=normalizer)
    ''')
    pytester.makepyfile(test_good="from minitepo.testing import assert_invariants\nfrom project_losses import my_dapo\n"
                                  "def test_my_loss(): assert_invariants(my_dapo, like='dapo')\n",
                        test_bad="from minitepo.testing import assert_invariants\n"
                                 "from project_losses import my_buggy_dapo\n"
                                 "def test_my_loss(): assert_invariants(my_buggy_dapo, like='dapo')\n")
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "LossViolatesInvariants: mask_by_multiplying, checked as dapo" in out
    assert "masked junk (values at masked positions change nothing and stay finite): minimal failing example" in out
    assert "example:" in out and "B=" in out
    assert not (pytester.path / ".hypothesis").exists(), "the kit wrote into the project's working directory"
