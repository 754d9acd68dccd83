"""The kit on verl's registered losses and TRL's GRPOTrainer loss: the verdicts docs/testing-kit.md reports.

Runs ``minitepo.testing.frameworks`` case by case (the same harness as ``python -m minitepo.testing.frameworks``,
seed 0) and pins each verdict, so a framework upgrade that changes one shows up here. Needs the verl and trl
extras (CI installs them); skips without them, like the other integration tests.
"""
import pytest

pytest.importorskip("verl", reason="the verl extra is not installed (CI installs it from ci/integrations-lock.txt)")
pytest.importorskip("trl", reason="the trl extra is not installed (CI installs it from ci/integrations-lock.txt)")

from minitepo.testing import check_loss  # noqa: E402
from minitepo.testing import frameworks as fw  # noqa: E402

# the properties each case violates at seed 0 (every other property that applies holds)
VIOLATED = {
    "verl vanilla, token-mean": set(),
    "verl vanilla, seq-mean-token-mean": {"masked junk", "empty response", "on-policy weights"},
    "verl vanilla, seq-mean-token-sum-norm": {"masked junk", "padding columns", "on-policy weights"},
    "verl vanilla, seq-mean-token-sum-norm, loss_scale_factor=max_len": {"masked junk"},
    "verl gspo, seq-mean-token-mean": {"masked junk", "empty response", "on-policy weights"},
    "verl geo_mean, token-mean": {"masked junk", "empty response", "micro-batches", "equal micro-batches", "on-policy weights"},
    "TRL GRPOTrainer, loss_type=grpo": {"masked junk", "empty response", "micro-batches"},
    "TRL GRPOTrainer, loss_type=bnpo": {"masked junk", "micro-batches", "equal micro-batches"},
    "TRL GRPOTrainer, loss_type=dr_grpo": {"masked junk", "micro-batches"},
    "TRL GRPOTrainer, loss_type=dapo": {"masked junk"},
}


@pytest.fixture(scope="module")
def cases():
    found, notes = fw.cases()
    assert not notes, notes
    return {c.label: c for c in found}


@pytest.mark.parametrize("label", list(VIOLATED))
def test_the_kits_verdicts_on_verl_and_trl_are_the_pages(cases, label):
    case = cases[label]
    findings = check_loss(case.loss, like=case.like, seed=0)
    assert {f.property for f in findings if not f.holds} == VIOLATED[label], \
        "\n".join(f"{f.property}: {'holds' if f.holds else f.example}" for f in findings)


def test_verls_seq_mean_token_mean_is_off_only_by_its_1e_8_guard(cases):
    """The on-policy weights violation of verl's seq-mean-token-mean is its + 1e-8 in 1/(|o_i| + 1e-8): at a
    tolerance of 1e-7 the weights are the spec's."""
    case = cases["verl vanilla, seq-mean-token-mean"]
    findings = check_loss(case.loss, like=case.like, only=["on-policy weights"], seed=0, tol=dict(rtol=1e-7, atol=0))
    assert all(f.holds for f in findings)
