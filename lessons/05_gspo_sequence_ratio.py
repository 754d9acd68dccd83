# %% [markdown]
# # Lesson 5 — GSPO: one ratio per response
#
# ## What you will learn
#
# * GSPO replaces the token ratio $r_{i,t}$ by one **sequence ratio** $s_i$ per response: the geometric mean
#   of its token ratios. Every token of a response is then judged by the same number, so a response is
#   clipped whole or not at all.
# * Why GSPO's clip range is $3\times10^{-4}$ / $4\times10^{-4}$ and not 0.2: $s_i$ is an *average* of
#   log-ratios, and averages of many small wobbles are much smaller than the wobbles.
# * GSPO and GSPO-token: the same value and, for one advantage per response, exactly the same gradient;
#   they differ only when each token carries its own advantage.
# * $s_i$ never exceeds the mean of its token ratios (AM–GM), with equality only when they are all equal.
#
# Everything here is a pure function of hand-made tensors: no model, no training, exact checks.

# %% [markdown]
# ## Key equations
#
# Notation of `spec/ALGORITHMS.md` §1. The sequence ratio (§1; `minitepo/losses/common.py:sequence_log_ratio`):
#
# $$s_i=\exp\Big(\frac1{|o_i|}\sum_t m_{i,t}\big(\ell^\theta_{i,t}-\ell^{old}_{i,t}\big)\Big)=\Big(\prod_{t}r_{i,t}\Big)^{1/|o_i|}$$
#
# GSPO (§4; `minitepo.losses.gspo_loss`), one clipped term per response, mean over the $B'$ responses:
#
# $$\mathcal L_{GSPO}=\frac1{B'}\sum_i\lambda\big(s_i,A_i;\ 3\times10^{-4},\ 4\times10^{-4}\big)$$
#
# Since $\partial s_i/\partial\ell^\theta_{i,t}=s_i/|o_i|$, an unclipped response gives each of its tokens the gradient
# $\partial\mathcal L/\partial\ell^\theta_{i,t}=-A_i\,s_i/(B'\,|o_i|)$, and a clipped one gives all of them 0.
#
# GSPO-token (§4; `minitepo.losses.gspo_token_loss`) routes the same value through every token:
#
# $$s_{i,t}=\mathrm{sg}[s_i]\cdot\exp\big(\ell^\theta_{i,t}-\mathrm{sg}[\ell^\theta_{i,t}]\big),\qquad
# \mathcal L=\frac1{B'}\sum_i\frac1{|o_i|}\sum_t m_{i,t}\,\lambda(s_{i,t},A_{i,t})$$
#
# The value of $s_{i,t}$ is $s_i$; its gradient is $s_i\,\nabla\ell^\theta_{i,t}$. With $A_{i,t}=A_i$ for
# every $t$ the two losses have identical gradients (spec §4).

# %% [markdown]
# ## Pseudocode
#
# ```
# log_s  = masked mean over t of (logp - old_logp)        # (B,)  one number per response
# s      = exp(log_s)
# GSPO:        lam_i  = -min(s A, clip(s, 1-3e-4, 1+4e-4) A)        loss = mean over responses
# GSPO-token:  s_it   = s.detach() * exp(logp - logp.detach())      # value s, gradient per token
#              lam_it = -min(s_it A_it, clip(s_it, ...) A_it)       loss = seq-mean-token-mean
# ```

# %%
import math
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from minitepo import dapo_loss, make_task
from minitepo.losses import gspo_loss, gspo_token_loss

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
EPS_LOW, EPS_HIGH = 3e-4, 4e-4                  # GSPO's defaults

# %% [markdown]
# ## $s_i$ on a small batch
#
# Three responses of 3, 2 and 4 tokens. We choose the log-ratios $\ell^\theta-\ell^{old}$ directly.
# Response 0 has ratios $e^{0.3}, e^{-0.1}, e^{0.1}$: their log-mean is 0.1, so $s_0=e^{0.1}$.
# GSPO reports the mean of $s_i$ over responses as `stats["seq_ratio_mean"]`; on a batch of one response
# that is $s_i$ itself.

# %%
log_ratio = torch.tensor([[0.3, -0.1, 0.1, 0.0],
                          [0.02, 0.02, 0.0, 0.0],
                          [0.5, -0.5, 0.2, -0.2]], dtype=torch.float64)   # (B, T) l_theta - l_old
mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.float64)
old_logp = torch.log(torch.full((3, 4), 0.5, dtype=torch.float64)) * mask
logp = old_logp + log_ratio * mask


def seq_ratio_of_row(i):
    """s_i of response i, read from gspo_loss's statistics on a batch of that one response."""
    _, stats = gspo_loss(logp=logp[i:i + 1], old_logp=old_logp[i:i + 1],
                         advantages=torch.ones(1, dtype=torch.float64), mask=mask[i:i + 1])
    return stats["seq_ratio_mean"].item()


for i in range(3):
    r = log_ratio[i][mask[i].bool()].exp()
    print(f"response {i}: token ratios {[round(x, 4) for x in r.tolist()]}  mean {r.mean().item():.4f}  "
          f"s_i {seq_ratio_of_row(i):.4f}")
assert abs(seq_ratio_of_row(0) - math.exp(0.1)) < 1e-12, "s_0 = e^0.1"

# %% [markdown]
# Response 2 is the instructive one: its tokens moved by ±0.5 and ±0.2 nats, far outside a 0.2 token clip,
# yet the moves cancel and $s_2=1$ exactly. GSPO does not see per-token disagreement, only the drift of
# the response as a whole. That is the design: the reward belongs to the whole response, so the
# importance weight (the ratio $\pi_\theta/\pi_{old}$ that corrects for reusing a rollout, lesson 1b) should too.
#
# ## Why the clip range is $3\times10^{-4}$
#
# $\log s_i$ is the mean of $|o_i|$ token log-ratios. If those wobble independently around 0 with spread
# $\sigma$, their mean wobbles with spread $\sigma/\sqrt{|o_i|}$. The responses GSPO was made for are
# thousands of tokens long: at $|o_i|=4096$ and $\sigma=0.05$ that is $0.05/64\approx8\times10^{-4}$. A
# clip at 0.2 would never touch such a ratio; a clip at a few $10^{-4}$ does. The cell below computes this
# simple model, and the left panel of the figure (drawn after the next section) shows it: independent
# Gaussian token log-ratios with $\sigma=0.05$, a stand-in, not a measurement (real log-ratios are
# correlated within a response and drift systematically after an update, which moves $s_i$ as a whole).
# On the toy tasks of this project responses are short: from a few tokens on `add` to a few dozen on `add_or_cot`'s
# worked steps (the cell prints each task's length limit $L_{max}$). There $s_i$ spreads at least $1/\sqrt{L_{max}}$
# as much as a token ratio, in this model many times GSPO's range (printed too), so GSPO's range is very tight. minitepo's TEPO (lesson 6) offers
# both ranges on $s_i$ as switches, and by default (chosen by a pre-registered search, research/reading-search/README.md)
# clips each *token's* log-ratio in log space before the geometric mean instead (`ratio_clip="token_log"`).

# %%
sigma, n_resp = 0.05, (4000 if FULL else 400)
gen = torch.Generator().manual_seed(0)
lengths_grid = [2 ** k for k in range(0, 13)]                       # 1 .. 4096 tokens
token_spread, seq_spread, seq_clipped = [], [], []
for L in lengths_grid:
    d = sigma * torch.randn(n_resp, L, generator=gen, dtype=torch.float64)        # token log-ratios
    s = d.mean(-1).exp()                                                           # (n_resp,)
    r = d.exp()
    seq_spread.append((s - 1).abs().quantile(0.9).item())
    token_spread.append((r - 1).abs().flatten()[:100_000].quantile(0.9).item())
    seq_clipped.append(((s > 1 + EPS_HIGH) | (s < 1 - EPS_LOW)).double().mean().item())
for name in ("add", "add_or_cot"):
    L_max = make_task(name).max_new_tokens
    print(f"{name}: L_max = {L_max} tokens; the model's spread of log s_i there, sigma / sqrt(L_max) = "
          f"{sigma / math.sqrt(L_max):.4f}, {sigma / math.sqrt(L_max) / EPS_HIGH:.0f} x eps_high")
    check(f"{name}'s answers are short, and s_i there spreads far beyond GSPO's range (model)",
          L_max <= 64 and sigma / math.sqrt(L_max) > 10 * EPS_HIGH, got=L_max)
print("90th percentile of |s_i - 1|:", ", ".join(f"L={L}: {v:.1e}" for L, v in zip(lengths_grid, seq_spread)))
print("fraction of responses outside GSPO's clip range:",
      ", ".join(f"L={L}: {v:.2f}" for L, v in zip(lengths_grid, seq_clipped)))

# %% [markdown]
# ## A response is clipped whole
#
# The right panel takes one right answer ($A>0$) of 8 tokens and raises the log-ratio $\delta$ of its
# *first* token only. It plots the gradient on the *last* token, which did not move at all. Under DAPO's
# token ratio that token's gradient never changes: only the first token is clipped, once its own ratio passes
# 1.28. Under GSPO the last token loses its gradient as soon as $s_i=e^{\delta/8}$ passes $1+4\times10^{-4}$,
# at $\delta=8\log(1.0004)\approx3.2\times10^{-3}$: one token's move switches off the whole response.

# %%
L = 8
deltas = torch.logspace(-4, 0, 200 if FULL else 81, dtype=torch.float64)
m1 = torch.ones(1, L, dtype=torch.float64)
old1 = torch.full((1, L), -1.0, dtype=torch.float64)
adv1 = torch.ones(1, dtype=torch.float64)


def last_token_grad(objective, delta, **kwargs):
    logp1 = old1.clone()
    logp1[0, 0] += delta
    logp1.requires_grad_(True)
    loss, _ = objective(logp=logp1, old_logp=old1, advantages=adv1, mask=m1, **kwargs)
    loss.backward()
    return logp1.grad[0, -1].item()


g_gspo = [last_token_grad(gspo_loss, d.item()) for d in deltas]
g_dapo = [last_token_grad(dapo_loss, d.item()) for d in deltas]
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
ax = axes[0]
ax.loglog(lengths_grid, token_spread, "o-", color="tab:orange", label="|r_it - 1|, one token")
ax.loglog(lengths_grid, seq_spread, "o-", color="tab:blue", label="|s_i - 1|, geometric mean")
ax.axhline(0.2, color="tab:orange", ls="--", lw=1, label="token clip 0.2")
ax.axhspan(EPS_LOW, EPS_HIGH, color="tab:blue", alpha=0.3, label="GSPO clip 3e-4 .. 4e-4")
ax.set_xlabel("response length |o_i| (tokens)")
ax.set_ylabel("90th percentile of |ratio - 1|")
ax.set_title(f"i.i.d. token log-ratios, sigma = {sigma}")
ax.legend(fontsize=8)
ax = axes[1]
ax.semilogx(deltas, g_dapo, color="tab:orange", label="DAPO (token ratio)")
ax.semilogx(deltas, g_gspo, color="tab:blue", label="GSPO (sequence ratio)")
ax.axvline(L * math.log(1 + EPS_HIGH), color="tab:blue", ls=":", lw=1)
ax.axvline(math.log(1.28), color="tab:orange", ls=":", lw=1)
ax.set_xlabel("log-ratio delta of the FIRST token")
ax.set_ylabel("d loss / d logp of the LAST token")
ax.set_title("one right answer, 8 tokens")
ax.legend(fontsize=8)
fig.suptitle("Lesson 5: the sequence ratio is an average, and it clips whole responses")
fig.tight_layout()
plt.savefig(OUT / "05_sequence_ratio.png", dpi=110)
plt.show()
plt.close()
print(f"GSPO: last token's gradient {g_gspo[0]:+.4f} at delta=1e-4, {g_gspo[-1]:+.4f} at delta=1")
print(f"DAPO: last token's gradient {g_dapo[0]:+.4f} at delta=1e-4, {g_dapo[-1]:+.4f} at delta=1")
assert g_gspo[-1] == 0.0 and g_dapo[-1] == g_dapo[0] != 0.0, \
    "GSPO clips the whole response (last token too); DAPO clips token by token"

# %% [markdown]
# ## GSPO against GSPO-token
#
# With one advantage per response the two have the same gradient — on-policy, off-policy, clipped or
# not. We check it on a random off-policy batch whose log-ratios are spread so that some responses are
# inside GSPO's clip range and some outside.

# %%
def random_batch(gen, B=12, T=7, spread=1e-3):
    lengths = torch.randint(1, T + 1, (B,), generator=gen)
    m = (torch.arange(T)[None, :] < lengths[:, None]).double()
    old = -torch.rand(B, T, generator=gen, dtype=torch.float64) * 3 * m
    new = old + spread * torch.randn(B, T, generator=gen, dtype=torch.float64) * m
    adv = torch.randn(B, generator=gen, dtype=torch.float64)
    return new, old, adv, m


def grad_of(objective, logp, old, adv, m, **kwargs):
    logp = logp.clone().requires_grad_(True)
    loss, stats = objective(logp=logp, old_logp=old, advantages=adv, mask=m, **kwargs)
    loss.backward()
    return loss.item(), logp.grad, stats


new, old, adv, m = random_batch(gen)
loss_seq, g_seq, st_seq = grad_of(gspo_loss, new, old, adv, m)
loss_tok, g_tok, st_tok = grad_of(gspo_token_loss, new, old, adv, m)
print(f"GSPO       loss {loss_seq:+.6f}  clipped responses {st_seq['clip_frac']:.2f}")
print(f"GSPO-token loss {loss_tok:+.6f}  clipped tokens    {st_tok['clip_frac']:.2f}")
print("max |gradient difference|:", (g_seq - g_tok).abs().max().item())
assert 0 < st_seq["clip_frac"] < 1, "the check covers clipped and unclipped responses"
assert abs(loss_seq - loss_tok) < 1e-12 and torch.allclose(g_seq, g_tok, atol=1e-14), \
    "GSPO and GSPO-token agree in value and gradient for sequence advantages"

# %% [markdown]
# With **token advantages** $A_{i,t}$ (e.g. from GTPO's entropy shaping) they part ways. GSPO-token gives
# token $t$ the gradient $-A_{i,t}\,s_i/(B'|o_i|)$: each token is pushed by its own advantage. GSPO with a
# (B, T) advantage computes $\lambda(s_i,A_{i,t})$ per token, but every gradient flows through the one
# number $s_i$, so every token of the response gets the *same* push, $-\bar A_i\,s_i/(B'|o_i|)$ with
# $\bar A_i$ the response's mean advantage. GSPO-token exists for exactly this case.

# %%
adv_tok = torch.randn(new.shape, generator=gen, dtype=torch.float64) * m          # (B, T) token advantages
on_policy = old.clone()                                                            # s_i = 1: nothing clipped
_, g_seq_tok, _ = grad_of(gspo_loss, on_policy, old, adv_tok, m)
_, g_tok_tok, _ = grad_of(gspo_token_loss, on_policy, old, adv_tok, m)
lengths = m.sum(-1, keepdim=True)
n_resp = (lengths > 0).sum()
assert torch.allclose(g_tok_tok, -adv_tok / (n_resp * lengths) * m, atol=1e-14), \
    "GSPO-token pushes each token by its own A_it"
mean_adv = (adv_tok * m).sum(-1, keepdim=True) / lengths
assert torch.allclose(g_seq_tok, -mean_adv / (n_resp * lengths) * m, atol=1e-14), \
    "GSPO pushes each token by its response's mean advantage"
print("token advantages: GSPO-token pushes each token by its own A_it, GSPO by the response's mean advantage")

# %% [markdown]
# ## Exercises
#
# **1. $s_i$ by hand.** Compute the sequence ratio of every response from the log-probs and the mask
# (masked positions may hold junk: do not let it in). A row with no real token (a response cut to nothing) has
# $s_i=1$: the mean of no log-ratios is taken as 0, as the library does. Checked on the fixed example above, where
# $s_0=e^{0.1}$, on random batches against `gspo_loss`'s statistics, and on a batch with two empty rows.

# %%
def my_seq_ratio(logp, old_logp, mask):
    """s_i (B,) = exp(mean over the real tokens of logp - old_logp)."""
    ### BEGIN SOLUTION
    diff = torch.where(mask.bool(), logp - old_logp, torch.zeros_like(logp))
    return torch.exp(diff.sum(-1) / mask.sum(-1).clamp(min=1))
    ### END SOLUTION


seq_hint = "s_i = exp( sum_t m_it (logp - old_logp) / |o_i| ): a GEOMETRIC mean, over real tokens only"
with exercise(1, my_seq_ratio):
    cmp("s_0 of the fixed example", my_seq_ratio(logp, old_logp, mask)[0], math.exp(0.1), atol=1e-12, hint=seq_hint)
    cmp("s_2 of the fixed example", my_seq_ratio(logp, old_logp, mask)[2], 1.0, atol=1e-12, hint=seq_hint)
    for trial in range(20):
        new, old, adv, m = random_batch(gen, spread=0.3)
        junk = torch.where(m.bool(), new, torch.full_like(new, 1e4))              # junk at padding
        s = my_seq_ratio(junk, old, m)
        ref = []
        for i in range(m.shape[0]):
            _, stats = gspo_loss(logp=new[i:i + 1], old_logp=old[i:i + 1], advantages=adv[i:i + 1], mask=m[i:i + 1])
            ref.append(stats["seq_ratio_mean"].item())
        cmp(f"s_i, random batch {trial} (junk 1e4 at padding)", s, torch.tensor(ref, dtype=torch.float64),
            atol=1e-12, hint=seq_hint + "; zero the padded positions before summing", quiet=True)
    # two rows with no real token (their own generator: the batches of exercises 2 and 3 stay as they were)
    new, old, adv, m = random_batch(torch.Generator().manual_seed(51), spread=0.3)
    m[[3, 8]] = 0.0
    junk = torch.where(m.bool(), new, torch.full_like(new, 1e4))
    ref = [gspo_loss(logp=new[i:i + 1], old_logp=old[i:i + 1], advantages=adv[i:i + 1], mask=m[i:i + 1])[1]
           ["seq_ratio_mean"].item() if m[i].any() else 1.0 for i in range(m.shape[0])]
    cmp("s_i, a batch with two empty rows (junk 1e4 at padding)", my_seq_ratio(junk, old, m),
        torch.tensor(ref, dtype=torch.float64), atol=1e-12,
        hint="an empty row has |o_i| = 0: divide by the length clamped to 1, so that its s_i is exp(0) = 1, not "
             "exp(0/0) = NaN")
print("exercise 1: s_i matches gspo_loss on 1 + 20 batches and one with two empty rows")

# %% [markdown]
# **2. AM–GM.** Show numerically that $s_i\le\frac1{|o_i|}\sum_t r_{i,t}$: write the gap
# "mean token ratio minus $s_i$" for every response. It must be $\ge0$ on random batches and 0 exactly
# when all token ratios of a response are equal. (Why: $\log$ is concave, so the log of a mean is at
# least the mean of the logs — Jensen's inequality; AM–GM is that statement for the arithmetic and
# geometric mean.) Note what this does and does not say about a run's statistics: per response, $s_i$ is at
# most the mean of its token ratios. The statistics `seq_ratio_mean` (the mean of $s_i$ over responses) and
# `ratio_mean` (the mean of $r_{i,t}$ over all tokens) weigh responses differently, so `seq_ratio_mean` can sit
# *above* `ratio_mean`: the cell after this exercise shows a batch where it does. A row with no real token has no
# token ratios to compare: its gap is 0.

# %%
def am_gm_gap(logp, old_logp, mask):
    """(B,) mean over real tokens of r_it, minus s_i."""
    ### BEGIN SOLUTION
    m = mask.bool()
    diff = torch.where(m, logp - old_logp, torch.zeros_like(logp))
    n = mask.sum(-1).clamp(min=1)
    mean_ratio = torch.where(m, diff.exp(), torch.zeros_like(diff)).sum(-1) / n
    gap = mean_ratio - torch.exp(diff.sum(-1) / n)
    return torch.where(m.any(-1), gap, torch.zeros_like(gap))                      # an empty row: no ratios, gap 0
    ### END SOLUTION


with exercise(2, am_gm_gap):
    for trial in range(50):
        new, old, adv, m = random_batch(gen, spread=0.5)
        gap = am_gm_gap(new, old, m)
        check(f"gap >= 0, random batch {trial}", (gap >= -1e-12).all(), got=gap.min().item(), quiet=True,
              hint="gap = (mean over real tokens of exp(logp - old_logp)) - s_i; mask the padding in BOTH means")
    equal = old + 0.37 * m                                    # every token ratio e^0.37
    cmp("gap when all token ratios are equal", am_gm_gap(equal, old, m), torch.zeros(m.shape[0], dtype=torch.float64),
        atol=1e-12, hint="divide both means by |o_i|, the number of real tokens, not by the padded width")
    check("strict gap for unequal ratios (response 0)", am_gm_gap(logp, old_logp, mask)[0] > 0)
    # exercise 1's batch with two empty rows; the reference: ratio_mean - seq_ratio_mean of gspo_loss on each row alone
    new, old, adv, m = random_batch(torch.Generator().manual_seed(51), spread=0.3)
    m[[3, 8]] = 0.0
    junk = torch.where(m.bool(), new, torch.full_like(new, 1e4))
    ref = []
    for i in range(m.shape[0]):
        if m[i].any():
            _, stats = gspo_loss(logp=new[i:i + 1], old_logp=old[i:i + 1], advantages=adv[i:i + 1], mask=m[i:i + 1])
            ref.append((stats["ratio_mean"] - stats["seq_ratio_mean"]).item())
        else:
            ref.append(0.0)
    cmp("gap, a batch with two empty rows (junk 1e4 at padding)", am_gm_gap(junk, old, m),
        torch.tensor(ref, dtype=torch.float64), atol=1e-12,
        hint="a row with no real token has no ratios to compare: return 0 there (torch.where on mask.any(-1))")
print("exercise 2: s_i <= mean token ratio on 50 random batches and a batch with empty rows; equality for equal ratios")

# %%
# Two responses: one token with ratio 2, and 100 tokens with ratio 0.5 each. Per response s_i equals the mean of
# its token ratios (all equal), yet the batch means differ: by response (s) and by token (r) they weigh differently.
two_new = torch.zeros(2, 100, dtype=torch.float64)
two_new[0, 0], two_new[1] = math.log(2.0), math.log(0.5)
two_mask = torch.zeros(2, 100)
two_mask[0, 0], two_mask[1] = 1, 1
_, two_stats = gspo_loss(logp=two_new, old_logp=torch.zeros_like(two_new), advantages=torch.tensor([1.0, -1.0]),
                         mask=two_mask)
print(f"seq_ratio_mean {two_stats['seq_ratio_mean']:.3f}  ratio_mean {two_stats['ratio_mean']:.3f}")
assert two_stats["seq_ratio_mean"] > two_stats["ratio_mean"], "seq_ratio_mean can exceed ratio_mean"

# %% [markdown]
# **3. GSPO's gradient by hand.** Write $\partial\mathcal L_{GSPO}/\partial\ell^\theta_{i,t}$ for every token:
# $-A_i\,s_i/(B'|o_i|)$ on the real tokens of a response whose ratio is not clipped, 0 on a clipped one
# ($A_i>0$ and $s_i>1+\epsilon_h$, or $A_i<0$ and $s_i<1-\epsilon_l$) and on padding. Checked against autograd
# on random batches with both kinds of response, and on one with empty rows (a row with no real token is
# not one of the $B'$).

# %%
def my_gspo_grad(logp, old_logp, advantages, mask, eps_low=EPS_LOW, eps_high=EPS_HIGH):
    """d L_GSPO / d logp, (B, T), for (B,) advantages."""
    ### BEGIN SOLUTION
    s = my_seq_ratio(logp, old_logp, mask)                                         # (B,)
    lengths = mask.sum(-1)
    n_resp = (lengths > 0).sum()
    clipped = ((advantages > 0) & (s > 1 + eps_high)) | ((advantages < 0) & (s < 1 - eps_low))
    per_seq = torch.where(clipped, torch.zeros_like(s), -advantages * s / (n_resp * lengths.clamp(min=1)))
    return per_seq[:, None] * mask
    ### END SOLUTION


# the batch of the first section, A = (+1, -1, +1): response 0 has s = e^0.1 > 1 + 4e-4 with A > 0 -> clipped;
# response 1: s = e^0.02, A < 0 -> free: +e^0.02 / (3 * 2); response 2: s = 1 -> -1 / (3 * 4)
hand = torch.tensor([0.0, math.exp(0.02) / 6, -1.0 / 12], dtype=torch.float64)[:, None] * mask
gspo_hint = ("-A_i s_i / (B' |o_i|) on every real token of an unclipped response; 0 on every token of a response "
             "with A > 0 and s > 1 + eps_high, or A < 0 and s < 1 - eps_low")
seen_clipped = seen_free = False
with exercise(3, my_gspo_grad):
    cmp("GSPO gradient, worked example", my_gspo_grad(logp, old_logp, torch.tensor([1.0, -1.0, 1.0],
        dtype=torch.float64), mask), hand, atol=1e-12, hint=gspo_hint)
    for trial in range(20):
        new, old, adv, m = random_batch(gen, spread=2e-3)
        _, g, stats = grad_of(gspo_loss, new, old, adv, m)
        seen_clipped |= stats["clip_frac"].item() > 0
        seen_free |= stats["clip_frac"].item() < 1
        cmp(f"GSPO gradient, random batch {trial}", my_gspo_grad(new, old, adv, m), g, atol=1e-14, hint=gspo_hint,
            quiet=True)
    # a row with no real token (a response cut to nothing, or a mini-batch's padding row): it is not one of the B'
    new, old, adv, m = random_batch(gen, spread=2e-3)
    m[[3, 8]] = 0.0                                                                # two empty rows: B' = B - 2
    new, old = new * m, old * m
    _, g, _ = grad_of(gspo_loss, new, old, adv, m)
    cmp("GSPO gradient, a batch with two empty rows", my_gspo_grad(new, old, adv, m), g, atol=1e-14,
        hint="B' counts only the responses with at least one real token (not the B rows of the batch)")
assert seen_clipped and seen_free, "the random batches should hold clipped and unclipped responses"
print("exercise 3: the hand-written GSPO gradient matches autograd on 20 random batches and one with empty rows")

# %% [markdown]
# ## Why these papers
#
# **GSPO** (Group Sequence Policy Optimization, arXiv 2507.18071, from the Qwen team) argues that a
# token-level importance weight is the wrong tool when the reward is given to a whole response: each
# token's ratio is a one-sample correction whose noise accumulates over long responses, which their
# large runs (mixture-of-experts models especially) saw as instability. Making the ratio, the clip and
# the reward all sequence-level removed that, at the price of a clip range hundreds of times narrower.
# Two things to keep from this lesson for the next: GSPO averages over *responses* ($1/B'$), so on-policy
# its gradient has GRPO's $1/|o_i|$ per-token weighting; and GSPO-token is the form that lets a
# sequence ratio carry token-level weights. TEPO (lesson 6) keeps the sequence ratio, but averages over
# *tokens*, as DAPO does.
