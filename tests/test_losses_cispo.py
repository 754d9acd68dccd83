"""CISPO (arXiv 2506.13585): a clipped weight shrinks a token's gradient but never removes it, unlike PPO's clip."""
import pytest
import torch

from minitepo.losses import cispo_loss, dapo_loss

DTYPE = torch.float64


def far_off_policy(seed=0, B=4, T=5, push=2.0):
    """Every token's ratio pushed e^push away from 1 in its advantage's direction: PPO's clip removes them all."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(B, T, dtype=torch.bool)
    adv = torch.tensor([1.0, -1.0, 2.0, -0.5], dtype=DTYPE)
    logp = (-torch.rand(B, T, generator=g, dtype=DTYPE) * 2).requires_grad_()
    old = logp.detach() - torch.where(adv > 0, push, -push)[:, None]
    return logp, old, adv, mask


def grad(fn, logp, **kw):
    logp.grad = None
    loss, stats = fn(logp=logp, **kw)
    loss.backward()
    return logp.grad.clone(), stats


def test_no_token_loses_its_gradient_where_ppo_clip_removes_every_one():
    logp, old, adv, mask = far_off_policy()
    assert (grad(dapo_loss, logp, old_logp=old, advantages=adv, mask=mask)[0] == 0).all()
    g, stats = grad(cispo_loss, logp, old_logp=old, advantages=adv, mask=mask, eps_high=0.28)
    assert (g != 0).all()
    # the gradient is -w A / N with w = min(r, 1.28): capped for A > 0 (r = e^2), r = e^-2 for A < 0 ("upper" only)
    r = torch.exp(logp.detach() - old)
    want = -torch.minimum(r, torch.tensor(1.28, dtype=DTYPE)) * adv[:, None] / mask.sum()
    torch.testing.assert_close(g, want, rtol=1e-12, atol=0)
    assert float(stats["clip_frac"]) == 0.5 and float(stats["clip/pos_high"]) == 0.5


@pytest.mark.parametrize("is_clip, floor", [("upper", False), ("both", True)])
def test_is_clip_raises_low_weights_only_when_both_sides_are_clipped(is_clip, floor):
    logp, old, adv, mask = far_off_policy()
    g, _ = grad(cispo_loss, logp, old_logp=old, advantages=adv, mask=mask, is_clip=is_clip, eps_low=0.2)
    neg = adv < 0
    r = torch.exp(logp.detach() - old)[neg]
    w = (-g[neg] * mask.sum() / adv[neg][:, None])
    torch.testing.assert_close(w, torch.full_like(r, 0.8) if floor else r, rtol=1e-12, atol=0)
