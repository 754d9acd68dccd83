"""GMPO (arXiv 2507.20673): its per-token implementation is the paper's per-response formula, TEPO's token_log clip
without the mask is GMPO, and its switches do what docs/objectives.md says."""
import math

import pytest
import torch

from minitepo.losses import gmpo_loss, tepo_loss

DTYPE = torch.float64


def batch(seed=0, B=6, T=7, spread=0.6, empty_row=False):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    if empty_row:
        lengths[2] = 0
    mask = torch.arange(T)[None, :] < lengths[:, None]
    logp = (-torch.rand(B, T, generator=g, dtype=DTYPE) * 2).requires_grad_()
    old = logp.detach() + spread * torch.randn(B, T, generator=g, dtype=DTYPE)
    adv = torch.randn(B, generator=g, dtype=DTYPE)
    return logp, old, adv, mask


def loss_and_grad(fn, logp, **kw):
    logp.grad = None
    loss, stats = fn(logp=logp, **kw)
    loss.backward()
    return loss.detach(), logp.grad.clone(), stats


def paper_formula(logp, old, adv, mask, delta=0.4):
    """(1/B') sum_i -A_i prod_t (clipped rho_t)^(1/|o_i|), one response at a time, autograd through the product."""
    terms = []
    for i in range(len(adv)):
        real = mask[i].nonzero().flatten().tolist()
        if not real:
            continue
        a = float(adv[i])
        factors = []
        for t in real:
            x = logp[i, t] - old[i, t]
            if (a > 0 and x.item() > delta) or (a < 0 and x.item() < -delta):
                x = x.detach().clamp(-delta, delta)
            factors.append(torch.exp(x) ** (1.0 / len(real)))
        terms.append(-a * math.prod(factors))
    return sum(terms) / len(terms)


@pytest.mark.parametrize("seed", range(4))
def test_the_routed_per_token_form_is_the_papers_per_response_product(seed):
    logp, old, adv, mask = batch(seed)
    loss, grad, stats = loss_and_grad(gmpo_loss, logp, old_logp=old, advantages=adv, mask=mask)
    assert 0 < float(stats["clip_frac"]) < 1                                 # the clip acts on some tokens only
    logp.grad = None
    want = paper_formula(logp, old, adv, mask)
    want.backward()
    torch.testing.assert_close(loss, want.detach(), rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(grad, logp.grad, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("token_advantages", [False, True])
def test_tepo_token_log_without_its_mask_is_gmpo(token_advantages):
    """TEPO's default clip is GMPO's: with beta_mask = 0 and GMPO's aggregation the two are one loss."""
    logp, old, adv, mask = batch(5)
    A = adv[:, None] * torch.linspace(0.5, 1.5, mask.shape[1], dtype=DTYPE) if token_advantages else adv
    kw = dict(old_logp=old, advantages=A, mask=mask, agg="seq-mean-token-mean")
    got = loss_and_grad(gmpo_loss, logp, **kw)
    want = loss_and_grad(tepo_loss, logp, beta_mask=0.0, **kw)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_empty_rows_count_divides_by_every_row():
    logp, old, adv, mask = batch(6, empty_row=True)
    skip = loss_and_grad(gmpo_loss, logp, old_logp=old, advantages=adv, mask=mask)[0]
    count = loss_and_grad(gmpo_loss, logp, old_logp=old, advantages=adv, mask=mask, empty_rows="count")[0]
    B, B_nonempty = mask.shape[0], int(mask.any(-1).sum())
    torch.testing.assert_close(count, skip * B_nonempty / B, rtol=1e-14, atol=0)


def test_the_zero_advantage_rule_changes_neither_loss_nor_gradient_with_one_advantage_per_response():
    logp, old, adv, mask = batch(7, spread=1.0)
    adv[0] = 0.0
    base = loss_and_grad(gmpo_loss, logp, old_logp=old, advantages=adv, mask=mask)
    for rule in ("as_positive", "as_negative"):
        other = loss_and_grad(gmpo_loss, logp, old_logp=old, advantages=adv, mask=mask, zero_adv_clip=rule)
        assert torch.equal(base[0], other[0]) and torch.equal(base[1], other[1])


def test_a_bad_switch_says_what_is_allowed():
    logp, old, adv, mask = batch(8)
    with pytest.raises(ValueError, match="as_positive"):
        gmpo_loss(logp=logp, old_logp=old, advantages=adv, mask=mask, zero_adv_clip="positive")
    with pytest.raises(ValueError, match="delta_low"):
        gmpo_loss(logp=logp, old_logp=old, advantages=adv, mask=mask, delta_low=0.0)
