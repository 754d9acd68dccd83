"""SAPO (arXiv 2511.20347): the soft gate's slope is 1 on-policy and decays smoothly off-policy, faster for A < 0."""
import pytest
import torch

from minitepo.losses import grpo_loss, sapo_loss

DTYPE = torch.float64


def test_on_policy_sapo_has_grpos_gradient():
    g = torch.Generator().manual_seed(0)
    mask = torch.arange(6)[None, :] < torch.tensor([[2], [6], [4]])
    logp = (-torch.rand(3, 6, generator=g, dtype=DTYPE)).requires_grad_()
    adv = torch.tensor([1.0, -0.5, 2.0], dtype=DTYPE)
    grads = []
    for fn in (sapo_loss, grpo_loss):
        logp.grad = None
        kw = dict(beta=0.0) if fn is grpo_loss else {}
        loss, stats = fn(logp=logp, old_logp=logp.detach(), advantages=adv, mask=mask, **kw)
        loss.backward()
        grads.append(logp.grad.clone())
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-12, atol=1e-15)


def test_the_gate_decays_smoothly_and_faster_for_negative_advantages():
    """d(-f(r) A)/d log r = -4 sigma (1 - sigma) r A: positive slope everywhere, 1 at r = 1, smaller far from 1."""
    x = torch.tensor([[0.0, 0.5, 1.0, 2.0]], dtype=DTYPE)                      # log-ratios
    slopes = {}
    for a in (1.0, -1.0):
        logp = x.clone().requires_grad_()
        loss, stats = sapo_loss(logp=logp, old_logp=torch.zeros_like(x), advantages=torch.tensor([a], dtype=DTYPE),
                                mask=torch.ones_like(x, dtype=torch.bool), agg="token-mean")
        loss.backward()
        slopes[a] = (-logp.grad * 4 / a / torch.exp(x)).flatten()             # the gate weight g = 4 sigma (1 - sigma)
        assert float(stats["gate_mean"]) == pytest.approx(float(slopes[a].mean()), rel=1e-12)
    for g in slopes.values():
        assert float(g[0]) == 1.0 and (g[1:] < g[:-1]).all() and (g > 0).all()
    assert (slopes[-1.0][1:] < slopes[1.0][1:]).all()                         # tau_neg = 1.05 > tau_pos = 1.0
