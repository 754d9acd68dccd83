# %% [markdown]
# # Lesson 3 — The clipped surrogate and the four aggregations
#
# An objective of the GRPO family turns a rollout into one number to minimise, in two stages. First, each real
# token gets a loss $\lambda_{i,t}$ from its probability ratio and its advantage: the clipped surrogate. Then the
# `(B, T)` grid of token losses is reduced to a scalar: the aggregation. The second stage looks like bookkeeping.
# But it decides how much each token and each response weighs, and it is where the most common bug in public GRPO
# code lives.
#
# ## What you will learn
#
# * the probability **ratio**, the **clip** and the **min** of PPO's surrogate, and what the asymmetric
#   range $\epsilon_{low}<\epsilon_{high}$ (DAPO's clip-higher) changes;
# * the four aggregations — `token-mean`, `seq-mean-token-mean`, `seq-mean-token-sum`,
#   `seq-mean-token-sum-norm` — on an example small enough to do by hand, where all four differ;
# * the **step normaliser**: why each micro-batch must divide by the whole optimizer step's $N$, $B'$
#   or $C$, so that gradient accumulation gives exactly the full-batch gradient;
# * a silent bug: using the padded width instead of the length limit $L_{max}$.
#
# ## Key equations
#
# Token ratio and clipped surrogate (`token_ratio` and `clipped_surrogate` in `minitepo/losses/common.py`):
#
# $$r_{i,t}=\exp(\ell^\theta_{i,t}-\ell^{old}_{i,t}),\qquad
# \lambda(r,A;\epsilon_l,\epsilon_h)=-\min\big(rA,\ \mathrm{clip}(r,1-\epsilon_l,1+\epsilon_h)\,A\big)$$
#
# For $A>0$ the gradient vanishes once $r>1+\epsilon_h$: the token has already gained enough. For $A<0$ it
# vanishes once $r<1-\epsilon_l$. On the other side the min picks the unclipped term, so a token that moved the
# wrong way is always pulled back. Aggregation (`aggregate`, `step_normalizer`) uses $N=\sum_i\lvert o_i\rvert$ real
# tokens, $B'$ responses with at least one real token, and $C=B\cdot L_{max}$:
#
# | mode | loss | a token of response $i$ weighs |
# |---|---|---|
# | `token-mean` | $\frac1N\sum_i\sum_t m_{i,t}\lambda_{i,t}$ | $1/N$ |
# | `seq-mean-token-mean` | $\frac1{B'}\sum_i\frac1{\lvert o_i\rvert}\sum_t m_{i,t}\lambda_{i,t}$ | $1/(B'\lvert o_i\rvert)$ |
# | `seq-mean-token-sum` | $\frac1{B'}\sum_i\sum_t m_{i,t}\lambda_{i,t}$ | $1/B'$ |
# | `seq-mean-token-sum-norm` | $\frac1{C}\sum_i\sum_t m_{i,t}\lambda_{i,t}$ | $1/C$ |
#
# GRPO uses `seq-mean-token-mean`, DAPO and TEPO `token-mean`, Dr. GRPO `seq-mean-token-sum-norm` (the first code
# cell reads these defaults from minitepo's loss functions and checks them).
#
# References: `spec/ALGORITHMS.md` §1 (notation) and §3 (the surrogate and the aggregations).
#
# ## Pseudocode
#
# ```
# ratio   = exp(logp - old_logp)                                   # (B, T), 1 at padding
# lam     = -min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A)
# lam     = where(mask, lam, 0)
# D       = step_normalizer(mask_of_the_whole_step, mode, L_max)   # N, B' or C: once per optimizer step
# for each micro-batch mb of the step:
#     total = sum_i sum_t lam[i, t]                   (or sum_i (sum_t lam[i, t]) / |o_i|)
#     (total / D).backward()                          # gradients add up to the full-batch gradient
# optimizer.step()
# ```

# %%
import inspect
import math
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from minitepo import aggregate, dapo_loss, grpo_loss, step_normalizer, tepo_loss
from minitepo.losses import dr_grpo_loss
from minitepo.losses.common import clipped_surrogate

try:                    # the named checks of the exercises (lessons/checks.py)
    from checks import check, cmp, exercise
except ImportError:     # a notebook opened outside lessons/: use the lessons/ folder next to minitepo
    import sys

    import minitepo
    sys.path.insert(0, str(Path(minitepo.__file__).resolve().parent.parent / "lessons"))
    from checks import check, cmp, exercise

torch.manual_seed(0)
random.seed(0)
torch.set_num_threads(1)
FULL = os.environ.get("MINITEPO_LESSONS") == "full"
OUT = Path("runs/lessons")
OUT.mkdir(parents=True, exist_ok=True)
MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")
DEFAULT_AGG = {name: inspect.signature(fn).parameters["agg"].default
               for name, fn in (("GRPO", grpo_loss), ("DAPO", dapo_loss), ("TEPO", tepo_loss), ("Dr. GRPO", dr_grpo_loss))}
print("default aggregation:", DEFAULT_AGG)
check("text: GRPO seq-mean-token-mean, DAPO and TEPO token-mean, Dr. GRPO seq-mean-token-sum-norm",
      DEFAULT_AGG == {"GRPO": "seq-mean-token-mean", "DAPO": "token-mean", "TEPO": "token-mean",
                      "Dr. GRPO": "seq-mean-token-sum-norm"}, got=DEFAULT_AGG)

# %% [markdown]
# ## The clipped surrogate on a few tokens
#
# `dapo_loss` is the plain clipped surrogate with clip-higher ($\epsilon_l=0.2$, $\epsilon_h=0.28$) and
# `token-mean`. Feed it one token per row, with chosen ratios, and look at the gradient each token receives with
# respect to $\ell^\theta$: how hard the token is pushed up or down.

# %%
ratios = torch.tensor([0.7, 0.9, 1.0, 1.2, 1.4])
clip_grads = {}
for A in (+1.0, -1.0):
    logp = ratios.log()[:, None].clone().requires_grad_()                 # (5, 1): one token per row
    loss, stats = dapo_loss(logp=logp, old_logp=torch.zeros(5, 1), advantages=torch.full((5,), A),
                            mask=torch.ones(5, 1))
    loss.backward()
    clip_grads[A] = logp.grad.squeeze(1)
    print(f"A = {A:+.0f}: ratio    {[round(x, 3) for x in ratios.tolist()]}")
    print(f"        dL/dlogp {[round(g, 3) for g in logp.grad.squeeze(1).tolist()]}   clip_frac {stats['clip_frac']:.2f}")
check("text: A = +1: no gradient at ratio 1.4 only; A = -1: no gradient at ratio 0.7 only",
      (clip_grads[1.0] == 0).tolist() == [False, False, False, False, True]
      and (clip_grads[-1.0] == 0).tolist() == [True, False, False, False, False])

# %% [markdown]
# For $A=+1$ the token with ratio 1.4 (above $1+\epsilon_h=1.28$) gets no gradient. The token with ratio 0.7
# (below $1-\epsilon_l$, moved the wrong way) still does. For $A=-1$ it is the other way round. With
# $\epsilon_h>\epsilon_l$ a positive-advantage token may grow further before it is clipped. That is DAPO's answer
# to entropy collapse: a rare good token needs room to become likely.
#
# ## Four aggregations, one example where they all differ
#
# Two responses: one of a single token with loss 2, one of three tokens with loss 1 each. The length limit is
# $L_{max}=4$, and the batch is padded to width 3. **Work out the four values by hand with the table above, and
# write them down, before running the cell.** The worked answers are in the Solutions section at the end.

# %%
per_token = torch.tensor([[2.0, 0.0, 0.0], [1.0, 1.0, 1.0]], requires_grad=True)    # (B=2, T=3)
mask = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
L_MAX = 4
worked = {}
for mode in MODES:
    value = aggregate(per_token, mask, mode, max_len=L_MAX)
    (weights,) = torch.autograd.grad(value, per_token)                              # d loss / d lambda_it
    worked[mode] = value.item()
    print(f"{mode:25s} {value.item():6.3f}   per-token weights {[[round(w, 3) for w in row] for row in weights.tolist()]}")
assert [round(worked[m], 6) for m in MODES] == [1.25, 1.5, 2.5, 0.625], "the worked example's four values"

# %% [markdown]
# **What to watch** in the weights: under `seq-mean-token-mean` the lone token of the short response weighs three
# times as much as each token of the long one. For wrong answers (positive $\lambda$) this means a long wrong
# answer is punished *less per token* than a short one: Dr. GRPO's "length bias". The other three modes weigh every
# token of the batch equally. They differ only in the constant they divide by. Under plain SGD that constant scales
# the learning rate. Adam divides each step by the gradient's running size, so a constant factor cancels, up to its
# small $\epsilon$ (the cell below sets $\epsilon=10^{-12}$ and checks it). Adam does not cancel a factor that changes
# from step to step: that factor reweighs the steps against each other (checked too). $N$ changes from step to
# step, $B'$ only when a step holds an empty response, $C$ never.

# %%
def five_steps(optimizer_class, factor, **kwargs):
    """A tiny linear model after 5 optimizer steps on ``factor`` times a fixed loss (``factor`` a number, or one
    number per step): its weights."""
    w = torch.nn.Parameter(torch.linspace(-1.0, 1.0, 4, dtype=torch.float64))
    opt = optimizer_class([w], **kwargs)
    data = torch.randn(16, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    for step in range(5):
        opt.zero_grad()
        f = factor[step] if isinstance(factor, (list, tuple)) else factor
        (f * ((data @ w).tanh() - 0.3).pow(2).mean()).backward()
        opt.step()
    return w.detach()


adam_gap = (five_steps(torch.optim.AdamW, 1.0, lr=1e-2, eps=1e-12) -
            five_steps(torch.optim.AdamW, 8.0, lr=1e-2, eps=1e-12)).abs().max().item()
sgd_gap = (five_steps(torch.optim.SGD, 1.0, lr=1e-2) - five_steps(torch.optim.SGD, 8.0, lr=1e-2)).abs().max().item()
varying_gap = (five_steps(torch.optim.AdamW, 1.0, lr=1e-2, eps=1e-12) -
               five_steps(torch.optim.AdamW, [1.0, 8.0, 1.0, 8.0, 1.0], lr=1e-2, eps=1e-12)).abs().max().item()
print(f"loss x 1 against loss x 8, weights after 5 steps: AdamW differs by {adam_gap:.1e}, SGD by {sgd_gap:.1e}")
print(f"loss x 1 against loss x (1, 8, 1, 8, 1), one factor per step: AdamW differs by {varying_gap:.1e}")
assert adam_gap < 1e-9 < 1e-3 < sgd_gap, "AdamW cancels a constant factor of the loss, SGD does not"
assert varying_gap > 1e-3, "AdamW does not cancel a factor that changes from step to step"

# %% [markdown]
# ## The step normaliser
#
# With gradient accumulation, a step's rows are split into micro-batches. Each calls the loss and `backward()`.
# If each micro-batch divided by *its own* $N$, a micro-batch of short responses would count as much as one of long
# responses, and the accumulated gradient would not be the full-batch gradient. `step_normalizer` computes the whole
# step's $N$, $B'$ or $C$ once, and every micro-batch passes it as `normalizer=`. Below, a ragged batch of 8
# responses split into 4 micro-batches.

# %%
gen = torch.Generator().manual_seed(0)
B, T = 8, 6
lengths = torch.tensor([1, 6, 2, 5, 3, 6, 1, 4])
mask8 = (torch.arange(T)[None, :] < lengths[:, None]).float()                     # (8, 6)
old8 = -torch.rand(B, T, generator=gen) * 2
logp8 = (old8 + 0.3 * torch.randn(B, T, generator=gen)).requires_grad_()
adv8 = torch.randn(B, generator=gen)

full_loss, _ = dapo_loss(logp=logp8, old_logp=old8, advantages=adv8, mask=mask8)
(full_grad,) = torch.autograd.grad(full_loss, logp8)
N = step_normalizer(mask8, "token-mean")
right = torch.zeros_like(logp8)
wrong = torch.zeros_like(logp8)
for rows in torch.arange(B).split(2):
    def part(**extra):                                                             # one micro-batch's loss
        return dapo_loss(logp=logp8[rows], old_logp=old8[rows], advantages=adv8[rows], mask=mask8[rows], **extra)[0]
    right += torch.autograd.grad(part(normalizer=N), logp8)[0]                     # the step's N
    wrong += torch.autograd.grad(part() / 4, logp8)[0]                             # its own N, then averaged
print(f"N = {N:.0f}; max |grad difference|: with the step's N {(right - full_grad).abs().max():.1e}, "
      f"with each micro-batch's own N {(wrong - full_grad).abs().max():.1e}")
assert torch.allclose(right, full_grad, atol=1e-7) and not torch.allclose(wrong, full_grad, atol=1e-3), \
    "the step normaliser reproduces the full-batch gradient; per-micro-batch normalisers do not"

# %% [markdown]
# ## Figure: the surrogate, its gradient, and who weighs what
#
# Left: $\lambda(r)$ for $A=+1$ and $A=-1$ with $\epsilon_l=0.2$, $\epsilon_h=0.28$; dotted, the unclipped
# $-rA$. Middle: $\partial\lambda/\partial r$; it is 0 exactly on the flat parts (shaded), where the token
# receives no gradient. Right: in a batch of 8 responses of lengths 1..8 ($L_{max}=8$), how much one
# token of each response weighs under each mode. **What to watch:** only `seq-mean-token-mean` falls with
# length; the other three are flat, at heights set by their normaliser (both checked below the plot).

# %%
r = torch.linspace(0.5, 1.6, 441, dtype=torch.float64).requires_grad_()
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
for A, color in ((1.0, "tab:green"), (-1.0, "tab:red")):
    adv = torch.full_like(r, A)
    lam, _ = clipped_surrogate(r, adv, torch.ones_like(r, dtype=torch.bool), 0.2, 0.28, None)
    (dlam,) = torch.autograd.grad(lam.sum(), r)
    axes[0].plot(r.detach(), lam.detach(), color=color, label=f"A = {A:+.0f}")
    axes[0].plot(r.detach(), (-r * A).detach(), color=color, ls=":", alpha=0.6)
    axes[1].plot(r.detach(), dlam, color=color, label=f"A = {A:+.0f}")
    flat = (r > 1.2801) if A > 0 else (r < 0.7999)                                   # the clipped side, off its edge
    sloped = (r < 1.2799) if A > 0 else (r > 0.8001)
    assert (dlam[flat] == 0).all() and (dlam[sloped] != 0).all(), "the gradient is 0 exactly on the flat part"
for ax in axes[:2]:
    ax.axvspan(0.5, 0.8, color="tab:red", alpha=0.08)
    ax.axvspan(1.28, 1.6, color="tab:green", alpha=0.08)
    ax.axvline(1.0, color="grey", lw=0.6)
    ax.set_xlabel("ratio r")
    ax.legend(fontsize=8)
axes[0].set(ylabel="λ(r, A)", title="clipped surrogate (ε_low 0.2, ε_high 0.28)")
axes[1].set(ylabel="∂λ/∂r", title="its gradient: 0 on the clipped side")
lens = torch.arange(1, 9)
m8 = (torch.arange(8)[None, :] < lens[:, None]).float()                            # (8, 8)
for mode in MODES:
    x = torch.ones(8, 8, requires_grad=True)
    (w,) = torch.autograd.grad(aggregate(x, m8, mode, max_len=8), x)
    axes[2].plot(lens, w[:, 0], "o-", label=mode)
    falls = bool((w[1:, 0] < w[:-1, 0]).all())
    assert falls == (mode == "seq-mean-token-mean") and (falls or bool((w[:, 0] == w[0, 0]).all())), \
        "only seq-mean-token-mean falls with length; the other three are flat"
axes[2].set(xlabel="response length |o_i|", ylabel="weight of one of its tokens", title="aggregation weights")
axes[2].legend(fontsize=8)
fig.tight_layout()
plt.savefig(OUT / "03_clipped_surrogate.png", dpi=120)
plt.show()
plt.close()

# %% [markdown]
# ## Exercises
#
# **1. Aggregation by hand.** Implement the four modes (with an optional `normalizer` that overrides
# $N$/$B'$/$C$) and match `aggregate` on random ragged batches, including rows with no real token at
# all (they do not count in $B'$) and junk values at padded positions (they must not leak in).

# %%
def my_aggregate(per_token, mask, mode, max_len=None, normalizer=None):
    """(B, T) token losses and 0/1 mask -> scalar, with the four modes of spec §3."""
    ### BEGIN SOLUTION
    m = mask.bool()
    x = torch.where(m, per_token, torch.zeros_like(per_token))                   # junk at padding must not leak
    if mode == "seq-mean-token-mean":
        total = (x.sum(-1) / m.sum(-1).clamp(min=1)).sum()
    else:
        total = x.sum()
    if normalizer is None:
        normalizer = {"token-mean": lambda: m.sum(),
                      "seq-mean-token-mean": lambda: m.any(-1).sum(),
                      "seq-mean-token-sum": lambda: m.any(-1).sum(),
                      "seq-mean-token-sum-norm": lambda: m.shape[0] * max_len}[mode]()
    return total / normalizer
    ### END SOLUTION


AGG_HINTS = {"token-mean": "divide the sum over real tokens by N, the number of real tokens",
             "seq-mean-token-mean": "average each row over its own real tokens, then divide by B' (rows with a "
                                    "real token), not by B",
             "seq-mean-token-sum": "sum each row, then divide by B' (rows with at least one real token)",
             "seq-mean-token-sum-norm": "divide the sum by C = B * max_len (the length limit, not the padded width)"}
with exercise(1, my_aggregate):
    for m_ in MODES:
        cmp(f"{m_} on the worked example", my_aggregate(per_token.detach(), mask, m_, max_len=L_MAX), worked[m_],
            hint=AGG_HINTS[m_])
    m_e = (torch.arange(4)[None, :] < torch.tensor([2, 0, 4, 1])[:, None]).float()   # row 1: an empty response
    x_e = torch.where(m_e.bool(), torch.arange(1.0, 17.0).view(4, 4), torch.tensor(1e4))
    for m_ in MODES:
        cmp(f"{m_}, a batch with an empty row", my_aggregate(x_e, m_e, m_, max_len=5),
            aggregate(x_e, m_e, m_, max_len=5), atol=1e-9,
            hint=AGG_HINTS[m_] + "; an empty row has no real token: it adds 0 (not 0/0) and does not count in B'")
    for trial in range(40 if FULL else 15):
        Bt, Tt = int(torch.randint(1, 7, (1,), generator=gen)), int(torch.randint(1, 7, (1,), generator=gen))
        lens_t = torch.randint(0, Tt + 1, (Bt,), generator=gen)
        lens_t[0] = max(1, int(lens_t[0]))                                         # at least one real token
        m_t = (torch.arange(Tt)[None, :] < lens_t[:, None]).float()
        x_t = torch.where(m_t.bool(), torch.randn(Bt, Tt, generator=gen, dtype=torch.float64),
                          torch.tensor(1e4).double())                               # junk 1e4 at padding
        for mode_t in MODES:
            hint = AGG_HINTS[mode_t] + "; values at padding (here 1e4) must not leak in: zero them with the mask"
            cmp(f"{mode_t}, random ragged batch {trial}", my_aggregate(x_t, m_t, mode_t, max_len=Tt + 2),
                aggregate(x_t, m_t, mode_t, max_len=Tt + 2), atol=1e-12, hint=hint, quiet=True)
            cmp(f"{mode_t} with normalizer=3, random batch {trial}", my_aggregate(x_t, m_t, mode_t, normalizer=3.0),
                aggregate(x_t, m_t, mode_t, normalizer=3.0), atol=1e-12,
                hint="a given normalizer replaces N / B' / C", quiet=True)
    print("ok   all four modes match aggregate on random ragged batches with junk at padding")

# %% [markdown]
# **2. The silent bug: the padded width as $L_{max}$.** A tempting shortcut for `seq-mean-token-sum-norm` is
# `C = per_token.shape[0] * per_token.shape[1]`: the number of rows times the padded width $T$. But $T$ is the
# longest response *in this batch*, not the length limit. Write `pad_right`, which appends `extra` padding columns
# (value 0, mask 0), and `width_as_lmax`, the buggy aggregation. Only its denominator is wrong: it still keeps
# padding out of the sum. The checks: padding leaves the correct loss unchanged and changes the buggy one by the
# factor $T/(T+\text{extra})$; on a batch of short answers the buggy loss is $L_{max}/T$ times too large. That factor
# changes with the batch's longest answer, so Adam does not cancel it: steps with short answers weigh more than
# steps with long ones.

# %%
def pad_right(per_token, mask, extra):
    """Append `extra` padding columns: zeros in per_token, zeros in mask."""
    ### BEGIN SOLUTION
    B_, _ = per_token.shape
    return (torch.cat([per_token, per_token.new_zeros(B_, extra)], 1),
            torch.cat([mask, mask.new_zeros(B_, extra)], 1))
    ### END SOLUTION


def width_as_lmax(per_token, mask):
    """The buggy seq-mean-token-sum-norm: divides by B * (padded width) instead of B * L_max."""
    ### BEGIN SOLUTION
    return torch.where(mask.bool(), per_token, torch.zeros_like(per_token)).sum() / per_token.numel()
    ### END SOLUTION


x3, m3 = per_token.detach(), mask                                                  # the worked example, T = 3
with exercise(2, pad_right, width_as_lmax):
    x5, m5 = pad_right(x3, m3, 2)
    cmp("padded mask", m5, torch.cat([m3, torch.zeros(2, 2)], 1), hint="append `extra` columns of 0 to the mask")
    cmp("padded per-token values", x5, torch.cat([x3, torch.zeros(2, 2)], 1), hint="append `extra` columns of 0")
    right3 = aggregate(x3, m3, "seq-mean-token-sum-norm", max_len=L_MAX)
    right5 = aggregate(x5, m5, "seq-mean-token-sum-norm", max_len=L_MAX)
    cmp("correct loss after padding", right5, right3, atol=1e-7)
    cmp("buggy loss ratio, width 5 / width 3", width_as_lmax(x5, m5).item() / width_as_lmax(x3, m3).item(), 3 / 5,
        hint="the bug divides by B * (padded width) = per_token.numel()")
    cmp("buggy / correct loss at width 3", width_as_lmax(x3, m3).item() / right3.item(), L_MAX / 3,
        hint="the bug divides by B * (padded width) = per_token.numel()")
    junk = torch.where(m5.bool(), x5, torch.full_like(x5, 1e4))                        # junk 1e4 at padding
    cmp("buggy loss with junk at padding (padding must stay out of the sum)", width_as_lmax(junk, m5),
        width_as_lmax(x5, m5), atol=1e-9, hint="zero the padded positions with the mask before summing")

# %% [markdown]
# **3. Micro-batches with the step normaliser.** Write `accumulated_grad`: split the rows into `n_micro`
# micro-batches, call `dapo_loss` on each with `agg=mode` and the whole step's normaliser, and add up the
# gradients with respect to `logp`. In every mode it must equal the full-batch gradient, on the batch above and
# on the same batch with one response emptied (it does not count in $B'$).

# %%
def accumulated_grad(logp, old_logp, advantages, mask, mode, n_micro, max_len):
    """Sum over micro-batches of d(micro-batch loss)/d(logp), each divided by the step's normaliser."""
    ### BEGIN SOLUTION
    D = step_normalizer(mask, mode, max_len=max_len if mode == "seq-mean-token-sum-norm" else None)
    grad = torch.zeros_like(logp)
    for rows in torch.arange(logp.shape[0]).tensor_split(n_micro):
        loss, _ = dapo_loss(logp=logp[rows], old_logp=old_logp[rows], advantages=advantages[rows],
                            mask=mask[rows], agg=mode, normalizer=D)
        grad += torch.autograd.grad(loss, logp)[0]
    return grad
    ### END SOLUTION


logp64 = logp8.detach().double().requires_grad_()
mask8_empty = mask8.clone()
mask8_empty[6] = 0.0                                                               # response 6 has no real token
with exercise(3, accumulated_grad):
    for mask_x, which in ((mask8, ""), (mask8_empty, ", a batch with an empty row")):
        for mode in MODES:
            full, _ = dapo_loss(logp=logp64, old_logp=old8.double(), advantages=adv8.double(), mask=mask_x, agg=mode,
                                max_len=T)
            (g_full,) = torch.autograd.grad(full, logp64)
            for n_micro in (1, 3, 8):
                g_acc = accumulated_grad(logp64, old8.double(), adv8.double(), mask_x, mode, n_micro, max_len=T)
                cmp(f"accumulated gradient, {mode}, {n_micro} micro-batches{which}", g_acc, g_full, atol=1e-12,
                    hint="each micro-batch must divide by the WHOLE step's normaliser: step_normalizer(mask, mode, "
                         "...) passed as normalizer= (N, or B' = responses with a real token, not B, or C)")

# %% [markdown]
# ## Why these papers
#
# PPO's clipped ratio (Schulman et al., arXiv 1707.06347) is the trust region every objective here inherits.
# GRPO (DeepSeekMath, arXiv 2402.03300) kept it and chose `seq-mean-token-mean`. DAPO (arXiv 2503.14476) argued
# for `token-mean`, where every token of the batch counts the same so that long reasoning is not diluted, and for
# clip-higher. Dr. GRPO (arXiv 2503.20783) showed that dividing by each response's own length biases the model
# towards long wrong answers, and divided by a constant instead. GSPO (arXiv 2507.18071) moves the ratio itself to
# the sequence level (lesson 5). TEPO (arXiv 2510.09369) combines that sequence ratio with token-level aggregation:
# in minitepo's reading, `token-mean` over the whole optimizer step (lesson 6). The step-normaliser rule belongs to
# none of these objectives; it belongs to implementing them. It makes their formulas hold when a step no longer
# fits in one forward pass.
#
# References: `spec/ALGORITHMS.md` §3 calls the per-micro-batch normaliser the most common bug in public GRPO code.

# %% [markdown]
# ## Solutions
#
# **The worked example.**
#
# * `token-mean`: $(2+1+1+1)/4=1.25$ — four real tokens, each weighs $1/4$;
# * `seq-mean-token-mean`: $(2/1+3/3)/2=1.5$ — each response weighs $1/2$ whatever its length;
# * `seq-mean-token-sum`: $(2+3)/2=2.5$ — each token weighs $1/B'=1/2$;
# * `seq-mean-token-sum-norm`: $5/(2\cdot4)=0.625$ — each token weighs $1/C=1/8$.
