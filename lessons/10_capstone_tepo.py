# %% [markdown]
# # Lesson 10 — Capstone: your own TEPO loss and your own RL step
#
# Nine lessons took TEPO apart: the rollout (1), the policy gradient and its ratio (1b), advantages (2),
# aggregation (3), the clipped surrogate and the KL estimators (4), the sequence ratio (5), TEPO's mask (6),
# and how to test and read all of it (8, 9). Here you put it back together, from scratch: the whole loss, then
# the optimizer steps of one RL iteration, then 150 iterations of training with your code in the loop.
#
# ## What you will learn
#
# * to write TEPO's loss end to end, as the library ships it: each token's log-ratio clipped on the pessimistic side
#   of its advantage, the geometric mean $\tilde s_i$ routed to every token, the mask $M$, the masked $k_3$ penalty,
#   the token-mean. You build it in two steps: first with the clip on $s_i$ itself (exercise 1: lesson 6's first
#   reading, which is easier to check), then with the clip moved to the tokens (exercise 1b: the shipped reading);
# * to write the optimizer steps of one RL iteration — shuffle, mini-batches, teacher-forced log-probs under the
#   current weights, the old log-probs and entropies from the rollout, backward, step — checked against the same
#   steps made with the library, parameter by parameter;
# * to write a sampler — the loop that draws a response token by token at a temperature, records each token's
#   log-probability and builds the response mask — checked for its log-probs, its mask and its distribution;
# * to train a tiny model with your own loss and step, evaluate it on 200 **held-out** prompts, and read two
#   accuracies that move differently: sampled and greedy;
# * to say how sure a lift is: a paired interval over the held-out prompts; and which settings make your loop lift
#   greedy accuracy, by evidence.
#
# The checks name every switch when they call the library, so they hold whatever the library's default is.
#
# ## Key equations
#
# TEPO as the library ships it, with $x_{i,t}=\ell^\theta_{i,t}-\ell^{old}_{i,t}$ on real tokens and $\delta_l=\delta_h=0.4$:
#
# $$\text{held}_{i,t}=\big(A_i>0\wedge x_{i,t}>\delta_h\big)\vee\big(A_i<0\wedge x_{i,t}<-\delta_l\big),\qquad
# \tilde x_{i,t}=\begin{cases}\mathrm{sg}[\mathrm{clamp}(x_{i,t},-\delta_l,\delta_h)]&\text{held}\\x_{i,t}&\text{otherwise}\end{cases}$$
#
# $$\tilde s_i=\exp\Big(\frac1{|o_i|}\sum_tm_{i,t}\tilde x_{i,t}\Big),\qquad
# \tilde s_{i,t}=\mathrm{sg}[\tilde s_i]\,e^{\tilde x_{i,t}-\mathrm{sg}[\tilde x_{i,t}]},\qquad
# M_{i,t}=\mathrm{sg}\big[\mathbb 1[A_i>0]\,\mathbb 1[H^\theta_{i,t}<H^{old}_{i,t}-\tau]\big]\,m_{i,t}$$
#
# $$k_3=e^{-x}+x-1,\qquad\mathcal L=\frac1N\sum_{i,t}m_{i,t}\big[-A_i\tilde s_{i,t}+\beta_MM_{i,t}k_3\big]$$
#
# Spec: `spec/ALGORITHMS.md` §6.

# ## Pseudocode
#
# ```
# for iteration in 1..I:
#     rollout = collect_rollout(model, prompts, G)           # old logp, old entropy, rewards
#     A       = group_advantages(rollout.rewards, G)
#     for rows in shuffle(B).split(K):                       # K optimizer steps on one rollout
#         logp, H = score_rollout(model, rollout[rows])      # current theta, with gradient
#         loss, parts = my_tepo_loss(logp, rollout.old_logp, A, rollout.mask, H, rollout.old_entropy)
#         loss.backward(); optimizer.step(); optimizer.zero_grad()
# ```

# %%
import copy
import inspect
import json
import math
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from minitepo import (GPT, TEPO_MASK_TOL, ModelConfig, Rollout, SupervisedConfig, Tokenizer, TrainerConfig,
                      collect_rollout, group_advantages, make_task, score_rollout, tepo_loss, tepo_mask, train_supervised)
from minitepo.evaluate import greedy_accuracy, verdicts
from minitepo.optim import lr_at, make_optimizer
from minitepo.losses import kl_penalty

try:                    # the named checks of the exercises (lessons/checks.py)
    from checks import LESSONS_DIR, check, cmp, exercise
except ImportError:     # a notebook opened outside lessons/: use the lessons/ folder next to minitepo
    import sys

    import minitepo
    sys.path.insert(0, str(Path(minitepo.__file__).resolve().parent.parent / "lessons"))
    from checks import LESSONS_DIR, check, cmp, exercise

torch.manual_seed(0)
random.seed(0)
torch.set_num_threads(1)
FULL = os.environ.get("MINITEPO_LESSONS") == "full"         # full: more samples in exercise 3; the same training loop
SEED = int(os.environ.get("MINITEPO_CAPSTONE_SEED", "0"))   # the loop's seed: its prompts, samples, mini-batch order
OUT = Path("runs/lessons")
OUT.mkdir(parents=True, exist_ok=True)
READING = dict(ratio_clip="sequence", eps_low=0.2, eps_high=0.28, mask_criterion="measured", mask_action="kl",
               mask_kl="k3")                              # the reading this lesson implements, named in every call
SHIPPED = dict(ratio_clip="token_log", delta_low=0.4, delta_high=0.4, mask_criterion="measured", mask_action="kl",
               mask_kl="k3")                              # the library's default reading (exercise 1b), named too

# %% [markdown]
# ## A batch built to catch mistakes
#
# Two groups of four responses plus one group whose rewards are all equal (its advantages are exactly 0, and its
# entropies dropped: a mask built with $A\ge0$ would catch it); ragged lengths, with junk at every padded position
# (log-probs of $\pm40$, entropies of $-5$: a mask or a sum that forgets $m$ lets them in); log-probs that moved
# since the rollout by up to ~0.6 nats, so that $s_i$ differs from the mean of its token ratios. Responses 0-3 moved
# as a whole: 0 ($A>0$, $s<0.8$) and 1 ($A<0$, $s>1.28$) lie outside the clip range on the side the min leaves
# *unclipped*, 2 ($A<0$, $s<0.8$) and 3 ($A>0$, $s>1.28$) on the side it clips.

# %%
gen = torch.Generator().manual_seed(10)
lengths = torch.tensor([3, 1, 5, 2, 4, 6, 2, 3, 2, 4, 1, 3])
B, T = lengths.numel(), int(lengths.max())
mask = (torch.arange(T)[None, :] < lengths[:, None]).double()                    # (B, T)
real = mask.bool()
old_logp = torch.where(real, -torch.rand(B, T, generator=gen, dtype=torch.float64) * 2, torch.tensor(40.0).double())
# responses 0-3 drift as a whole, to each side of the clip range 0.8 .. 1.28 (see the printout)
shift = torch.tensor([-0.4, 0.45, -0.4, 0.6] + [0.0] * 8, dtype=torch.float64)[:, None]
logp = torch.where(real, old_logp + shift + 0.35 * torch.randn(B, T, generator=gen, dtype=torch.float64),
                   torch.tensor(-40.0).double())
rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
advantages = group_advantages(rewards, group_size=4).double()                    # (B,), last group all 0
old_entropy = torch.where(real, 0.5 + torch.rand(B, T, generator=gen, dtype=torch.float64), torch.tensor(-5.0).double())
entropy = torch.where(real, old_entropy + 0.2 * torch.randn(B, T, generator=gen, dtype=torch.float64),
                      torch.tensor(-5.0).double())
print("advantages:", [round(a, 2) for a in advantages.tolist()])
print("lengths:   ", lengths.tolist())
x_real = torch.where(real, logp - old_logp, torch.zeros_like(logp))
print("s_i:       ", [round(v, 2) for v in torch.exp(x_real.sum(-1) / lengths).tolist()])

# %% [markdown]
# ## Exercises
#
# **1. TEPO with the clip on $s_i$ (the first reading).** The first step: no per-token clip yet. The ratio is the plain
# geometric mean, and PPO's clipped min acts on it:
#
# $$s_i=\exp\Big(\frac1{\lvert o_i\rvert}\sum_tm_{i,t}x_{i,t}\Big),\qquad
# s_{i,t}=\mathrm{sg}[s_i]\,e^{\ell^\theta_{i,t}-\mathrm{sg}[\ell^\theta_{i,t}]},\qquad
# \lambda_{i,t}=-\min\big(s_{i,t}A_i,\ \mathrm{clip}(s_{i,t},1-\epsilon_l,1+\epsilon_h)A_i\big)$$
#
# with $\epsilon_l=0.2$, $\epsilon_h=0.28$, and the mask, $k_3$ and token-mean of "Key equations".
# Write `my_tepo_loss`: this loss *and* its intermediates, returned
# as `(loss, parts)` with `parts = {"s": (B,), "s_tok": (B, T), "lam": (B, T), "M": (B, T) bool, "k3": (B, T)}`
# (values at padded positions of `s_tok`, `lam`, `k3` are not checked). Use only torch: no minitepo inside. The check
# compares your loss and its gradient with `tepo_loss` and every intermediate with an independent source
# (`tepo_loss` on one response at a time for $s_i$, `tepo_mask` for $M$, `kl_penalty` for $k_3$); calling
# `tepo_loss` yourself cannot pass, because it does not return the intermediates. It runs once more on the batch with
# response 5 cut to nothing: a row with no real token has $s_i=1$ (the mean of no log-ratios is taken as 0, as the
# library does), adds no term, and must not make the loss or its gradient NaN.

# %%
def my_tepo_loss(logp, old_logp, advantages, mask, entropy, old_entropy, *, eps_low=0.2, eps_high=0.28,
                 beta_mask=1.0, tol=0.0):
    """TEPO's loss (sequence ratio, token routing, clipped surrogate, measured mask, k3 to the old policy,
    token-mean) and its intermediates: returns (loss, {"s", "s_tok", "lam", "M", "k3"})."""
    ### BEGIN SOLUTION
    real = mask.bool()
    x = torch.where(real, logp - old_logp, torch.zeros_like(logp))               # (B, T), 0 at padding
    s = torch.exp(x.sum(-1) / real.sum(-1).clamp(min=1))                         # (B,) geometric mean
    s_tok = s.detach()[:, None] * torch.exp(logp - logp.detach())                # (B, T) value s_i, grad per token
    A = advantages[:, None]                                                      # (B, 1)
    lam = torch.maximum(-s_tok * A, -s_tok.clamp(1 - eps_low, 1 + eps_high) * A)   # -min(sA, clip(s)A)
    dropped = torch.where(real, entropy < old_entropy - tol, torch.zeros_like(real))
    M = ((advantages > 0)[:, None] & dropped & real).detach()                    # (B, T) bool
    k3 = torch.exp(-x) + x - 1.0                                                 # (B, T), 0 at padding
    per_token = lam + beta_mask * torch.where(M, k3, torch.zeros_like(k3))
    loss = torch.where(real, per_token, torch.zeros_like(per_token)).sum() / real.sum()
    return loss, {"s": s, "s_tok": s_tok, "lam": lam, "M": M, "k3": k3}
    ### END SOLUTION


def library_loss(lp, beta_mask=1.0, tol=0.0):
    return tepo_loss(logp=lp, old_logp=old_logp, advantages=advantages, mask=mask, entropy=entropy,
                     old_entropy=old_entropy, beta_mask=beta_mask, mask_tol=tol, **READING)


def per_response_s():
    """s_i of every response, each from tepo_loss's statistics on a batch of that one response."""
    return torch.tensor([tepo_loss(logp=logp[i:i + 1], old_logp=old_logp[i:i + 1], advantages=advantages[i:i + 1],
                                   mask=mask[i:i + 1], beta_mask=0.0, **READING)[1]["seq_ratio_mean"].item()
                         for i in range(B)], dtype=torch.float64)


PART_HINTS = {
    "s": "s_i = exp( sum_t m_it (logp - old_logp) / |o_i| ): the mean of the LOG-ratios over real tokens, then exp",
    "s_tok": "s_it = sg[s_i] * exp(logp - sg[logp]): value s_i at every token",
    "lam": "lambda = -min(s_it A_i, clip(s_it, 1 - eps_low, 1 + eps_high) A_i): the min keeps the pessimistic side",
    "M": "M = (A > 0) & (entropy < old_entropy - tol) & mask: strictly A > 0, never a padded position",
    "k3": "k3 to the OLD policy: with x = logp - old_logp, k3 = e^-x + x - 1",
}


def emptied(row=5):
    """The batch with response ``row`` cut to nothing (no real token): junk in all its slots, as at padding."""
    keep = real.clone()
    keep[row] = False

    def junk(x, value):
        return torch.where(keep, x, torch.tensor(value, dtype=torch.float64))

    return (junk(logp, -40.0), junk(old_logp, 40.0), keep.double(), junk(entropy, -5.0), junk(old_entropy, -5.0),
            row)


EMPTY_HINT = ("an empty row has |o_i| = 0: divide by its length clamped to 1, so that its s_i is exp(0) = 1; "
              "exp(0/0) is NaN, and a NaN s_i reaches the gradient through s_it")


def check_empty_row(loss_fn, s_ref, library_reading, s_name="s_i"):
    """Your loss on the batch with an empty row: s_i (1 on the empty row), the loss and its gradient, against
    tepo_loss in ``library_reading``."""
    logp_e, old_e, mask_e, entropy_e, old_entropy_e, row = emptied()
    lp = logp_e.clone().requires_grad_(True)
    mine, parts = loss_fn(lp, old_e, advantages, mask_e, entropy_e, old_entropy_e)
    s_ref = s_ref.clone()
    s_ref[row] = 1.0
    cmp(f"{s_name}, a batch with an empty row (row {row})", parts["s"], s_ref, atol=1e-12, hint=EMPTY_HINT)
    lib, _ = tepo_loss(logp=lp, old_logp=old_e, advantages=advantages, mask=mask_e, entropy=entropy_e,
                       old_entropy=old_entropy_e, beta_mask=1.0, mask_tol=0.0, **library_reading)
    cmp("loss, a batch with an empty row", mine, lib, atol=1e-12, hint=EMPTY_HINT)
    cmp("gradient dL/dlogp, a batch with an empty row", torch.autograd.grad(mine, lp)[0],
        torch.autograd.grad(lib, lp)[0], atol=1e-12, hint=EMPTY_HINT)


def check_loss_and_gradient(mine, lib, lp, beta_mask, tol, *, loss_hint, grad_hint):
    """Your loss against the library's, on the value and on d loss / d logp; returns your gradient."""
    cmp(f"loss (beta_M {beta_mask:g}, tol {tol:g})", mine, lib, atol=1e-12, hint=loss_hint)
    (g_mine,) = torch.autograd.grad(mine, lp)
    (g_lib,) = torch.autograd.grad(lib, lp)
    cmp(f"gradient dL/dlogp (beta_M {beta_mask:g})", g_mine, g_lib, atol=1e-12, hint=grad_hint)
    return g_mine


with exercise(1, my_tepo_loss):
    s_ref = per_response_s()                                   # (B,), the same for every beta_M and tol below
    for beta_mask, tol in ((1.0, 0.0), (10.0, 0.05)):
        lp = logp.clone().requires_grad_(True)
        mine, parts = my_tepo_loss(lp, old_logp, advantages, mask, entropy, old_entropy, beta_mask=beta_mask, tol=tol)
        check(f"my_tepo_loss returns (loss, parts) with parts {sorted(PART_HINTS)}",
              isinstance(parts, dict) and set(PART_HINTS) <= set(parts),
              got=sorted(parts) if isinstance(parts, dict) else type(parts).__name__,
              hint="return your own intermediates: calling tepo_loss gives (loss, stats), and stats holds none")
        cmp(f"s_i (beta_M {beta_mask:g})", parts["s"], s_ref, atol=1e-12, hint=PART_HINTS["s"])
        cmp(f"s_it on real tokens (beta_M {beta_mask:g})", parts["s_tok"][real],
            s_ref[:, None].expand(B, T)[real], atol=1e-12, hint=PART_HINTS["s_tok"])
        M_ref = tepo_mask(advantages, mask, entropy=entropy, old_entropy=old_entropy, tol=tol)
        cmp(f"mask M (tol {tol:g})", parts["M"], M_ref, hint=PART_HINTS["M"])
        cmp(f"k3 on real tokens (beta_M {beta_mask:g})", parts["k3"][real],
            kl_penalty(logp, old_logp, "k3")[real], atol=1e-12, hint=PART_HINTS["k3"])
        lib, stats = library_loss(lp, beta_mask, tol)
        cmp(f"policy term, token-mean (beta_M {beta_mask:g})", parts["lam"][real].sum() / real.sum(),
            stats["pg_loss"], atol=1e-12, hint=PART_HINTS["lam"])
        check_loss_and_gradient(
            mine, lib, lp, beta_mask, tol,
            loss_hint="L = (1/N) sum over real tokens of lambda + beta_M M k3; N counts real tokens of the whole batch",
            grad_hint="the gradient must reach every real token through s_it; M and the clip decide which; none at padding")
    check_empty_row(my_tepo_loss, s_ref, READING)

# %% [markdown]
# **1b. The reading the library ships.** The pre-registered search (lesson 6, Part 3) replaced the clip on $s_i$,
# which almost never binds on long responses, by a clip on each token's log-ratio *before* the geometric mean.
# Write `my_shipped_tepo_loss` with $x_{i,t}=\ell^\theta_{i,t}-\ell^{old}_{i,t}$ on real tokens:
#
# $$\text{held}_{i,t}=\big(A_i>0\wedge x_{i,t}>\delta_h\big)\vee\big(A_i<0\wedge x_{i,t}<-\delta_l\big),\qquad
# \tilde x_{i,t}=\begin{cases}\mathrm{sg}[\mathrm{clamp}(x_{i,t},-\delta_l,\delta_h)]&\text{held}\\x_{i,t}&\text{otherwise}\end{cases}$$
#
# $$\tilde s_i=\exp\Big(\frac1{|o_i|}\sum_tm_{i,t}\tilde x_{i,t}\Big),\qquad
# \tilde s_{i,t}=\mathrm{sg}[\tilde s_i]\,e^{\tilde x_{i,t}-\mathrm{sg}[\tilde x_{i,t}]},\qquad
# \mathcal L=\frac1N\sum_{i,t}m_{i,t}\big[-A_i\tilde s_{i,t}+\beta_MM_{i,t}k_3\big]$$
#
# with $\delta_l=\delta_h=0.4$: no min and no further clip, a held token simply carries no gradient. The mask and the
# penalty are exercise 1's: carry them over by calling your `my_tepo_loss` (its `M` and `k3` do not depend on the
# clip). Return `(loss, parts)` with `parts` as in exercise 1 plus `"held"` (B, T) bool. The batch above has tokens
# on both sides of $\pm0.4$ in responses with $A>0$ and with $A<0$, so a clip that ignores the sign of $A$ shows. As in
# exercise 1, the check runs once more with response 5 cut to nothing, whose $\tilde s_i$ is 1.

# %%
def my_shipped_tepo_loss(logp, old_logp, advantages, mask, entropy, old_entropy, *, delta_low=0.4, delta_high=0.4,
                         beta_mask=1.0, tol=0.0):
    """TEPO's loss as the library ships it (token_log clip, measured mask, k3 to the old policy, token-mean) and its
    intermediates: returns (loss, {"s", "s_tok", "lam", "held", "M", "k3"})."""
    ### BEGIN SOLUTION
    real = mask.bool()
    x = torch.where(real, logp - old_logp, torch.zeros_like(logp))               # (B, T), 0 at padding
    A = advantages[:, None]                                                      # (B, 1)
    held = (((A > 0) & (x > delta_high)) | ((A < 0) & (x < -delta_low))) & real  # the pessimistic side only
    x_clip = torch.where(held, x.detach().clamp(-delta_low, delta_high), x)      # a held token: a constant
    s = torch.exp(x_clip.sum(-1) / real.sum(-1).clamp(min=1))                    # (B,) geometric mean after the clip
    s_tok = s.detach()[:, None] * torch.exp(x_clip - x_clip.detach())            # value s~_i, gradient per token
    lam = -A * s_tok                                                             # (B, T)
    _, mine = my_tepo_loss(logp, old_logp, advantages, mask, entropy, old_entropy, beta_mask=beta_mask, tol=tol)
    M, k3 = mine["M"], mine["k3"]                                                # exercise 1's mask and penalty
    per_token = lam + beta_mask * torch.where(M, k3, torch.zeros_like(k3))
    loss = torch.where(real, per_token, torch.zeros_like(per_token)).sum() / real.sum()
    return loss, {"s": s, "s_tok": s_tok, "lam": lam, "held": held, "M": M, "k3": k3}
    ### END SOLUTION


def per_response_shipped_s():
    """s~_i of every response from tepo_loss on that one response: its policy term is -A_i s~_i (token-mean of a
    constant), and with A_i = 0 nothing is held, so s~_i is the plain s_i."""
    out = []
    for i in range(B):
        _, st = tepo_loss(logp=logp[i:i + 1], old_logp=old_logp[i:i + 1], advantages=advantages[i:i + 1],
                          mask=mask[i:i + 1], beta_mask=0.0, **SHIPPED)
        a = advantages[i].item()
        out.append(-st["pg_loss"].item() / a if a != 0 else st["seq_ratio_mean"].item())
    return torch.tensor(out, dtype=torch.float64)


with exercise("1b", my_shipped_tepo_loss):
    held_hint = ("held = (A > 0 and x > delta_high) or (A < 0 and x < -delta_low), on real tokens: only the "
                 "pessimistic side, as PPO's min; a token that moved the other way keeps its gradient")
    s_ref = per_response_shipped_s()                           # (B,), the same for every beta_M and tol below
    for beta_mask, tol in ((1.0, 0.0), (10.0, 0.05)):
        lp = logp.clone().requires_grad_(True)
        mine, parts = my_shipped_tepo_loss(lp, old_logp, advantages, mask, entropy, old_entropy, beta_mask=beta_mask,
                                           tol=tol)
        check("my_shipped_tepo_loss returns (loss, parts) with 'held' and exercise 1's parts",
              isinstance(parts, dict) and set(PART_HINTS) | {"held"} <= set(parts),
              got=sorted(parts) if isinstance(parts, dict) else type(parts).__name__,
              hint="return your own intermediates, as in exercise 1, plus the bool tensor 'held'")
        lib, stats = tepo_loss(logp=lp, old_logp=old_logp, advantages=advantages, mask=mask, entropy=entropy,
                               old_entropy=old_entropy, beta_mask=beta_mask, mask_tol=tol, **SHIPPED)
        held = parts["held"].bool() & real
        cmp("held tokens with A > 0 (share of real tokens)", held[advantages > 0].sum() / real.sum(),
            stats["clip/pos_high"], atol=1e-12, hint=held_hint)
        cmp("held tokens with A < 0 (share of real tokens)", held[advantages < 0].sum() / real.sum(),
            stats["clip/neg_low"], atol=1e-12, hint=held_hint)
        cmp(f"s~_i after the clip (beta_M {beta_mask:g})", parts["s"], s_ref, atol=1e-12,
            hint="clip x on held tokens to delta_high / -delta_low FIRST, then exp of the mean over real tokens")
        cmp(f"s~_it on real tokens (beta_M {beta_mask:g})", parts["s_tok"][real],
            s_ref[:, None].expand(B, T)[real], atol=1e-12,
            hint="s~_it = sg[s~_i] * exp(x~_it - sg[x~_it]): value s~_i at every token")
        cmp(f"policy term, token-mean (beta_M {beta_mask:g})", parts["lam"][real].sum() / real.sum(),
            stats["pg_loss"], atol=1e-12, hint="lambda = -A_i s~_it: no min and no clip of s~ itself")
        g_mine = check_loss_and_gradient(
            mine, lib, lp, beta_mask, tol,
            loss_hint="L = (1/N) sum over real tokens of -A s~_it + beta_M M k3, with exercise 1's M and k3",
            grad_hint="a held token's x~ is a constant (detach it), the others route their gradient through s~_it")
        check(f"held tokens carry no policy gradient (beta_M {beta_mask:g})",
              bool((g_mine[held & ~parts["M"].bool()] == 0).all()),
              hint="use x.detach().clamp(...) on held tokens: the clip must cut the gradient, not only the value")
    check_empty_row(my_shipped_tepo_loss, s_ref, SHIPPED, s_name="s~_i")
print(f"held tokens in this batch: {int(held[advantages > 0].sum())} with A > 0 and {int(held[advantages < 0].sum())} "
      f"with A < 0, of {int(real.sum())} real tokens")

# %% [markdown]
# **2. The optimizer steps of one RL iteration.** Write `my_rl_steps`: shuffle the rollout's rows with
# `torch.randperm(B, generator=generator)`, split them into `n_minibatches` with `tensor_split`, and for each
# mini-batch score it under the current weights (`score_rollout`), compute *your* loss — `loss_fn`, which is
# `my_tepo_loss` or `my_shipped_tepo_loss` — with the rollout's log-probs and entropies as the old ones (and
# `tol=TEPO_MASK_TOL`: the sampler and the teacher-forced pass round differently, lesson 6), then `zero_grad`,
# `backward`, `step`. Return one `(loss, mask_frac)` pair per mini-batch. The check makes the same steps with
# `tepo_loss` from the same starting weights, in both readings, and compares the models parameter by parameter.

# %%
tokenizer = Tokenizer()
task = make_task("add", levels=(2,))                # 2-digit sums: 200 held-out prompts (see "Your code in the loop")
torch.manual_seed(0)                                # the warm start of lessons/data/capstone_settings.py
warm_model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=2, n_head=2, n_embd=64))
train_supervised(warm_model, tokenizer, task, SupervisedConfig(steps=450, batch_size=64, lr=3e-3, warmup=10),
                 eval_every=450)                                            # lesson 1's loop (minitepo/sft.py)
G, K = 8, 4
examples = [task.sample(random.Random(2000 + i)) for i in range(8)]
first_rollout = collect_rollout(warm_model, tokenizer, task, examples, group_size=G, temperature=1.0,
                                generator=torch.Generator().manual_seed(0))
first_adv = group_advantages(first_rollout.rewards, group_size=G)
print(f"a rollout of {first_rollout.mask.shape[0]} answers, reward {first_rollout.rewards.mean():.3f}")


def my_rl_steps(model, optimizer, rollout, advantages, n_minibatches, generator, loss_fn=my_tepo_loss):
    """K optimizer steps on one rollout with your loss (``loss_fn``: my_tepo_loss or my_shipped_tepo_loss);
    returns [(loss, mask_frac)] per mini-batch."""
    ### BEGIN SOLUTION
    order = torch.randperm(rollout.mask.shape[0], generator=generator)
    out = []
    for rows in order.tensor_split(n_minibatches):
        mb = rollout.select(rows)
        logp, entropy = score_rollout(model, mb)                                 # current theta, with gradient
        loss, parts = loss_fn(logp, mb.old_logp, advantages[rows], mb.mask, entropy, mb.old_entropy, tol=TEPO_MASK_TOL)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out.append((loss.item(), (parts["M"].sum() / mb.mask.sum()).item()))
    return out
    ### END SOLUTION


def reference_rl_steps(model, optimizer, rollout, advantages, n_minibatches, generator, reading):
    """The same steps with the library's tepo_loss, in the reading named by ``reading``."""
    out = []
    for rows in torch.randperm(rollout.mask.shape[0], generator=generator).tensor_split(n_minibatches):
        mb = rollout.select(rows)
        logp, entropy = score_rollout(model, mb)
        loss, stats = tepo_loss(logp=logp, old_logp=mb.old_logp, advantages=advantages[rows], mask=mb.mask,
                                entropy=entropy, old_entropy=mb.old_entropy, mask_tol=TEPO_MASK_TOL, beta_mask=1.0,
                                **reading)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out.append((loss.item(), stats["mask_frac"].item()))
    return out


with exercise(2, my_rl_steps):
    steps_hint = ("shuffle with torch.randperm(B, generator=generator), tensor_split(n_minibatches), score under the "
                  "CURRENT model, old = the rollout's logp / entropy, tol=TEPO_MASK_TOL, zero_grad before backward")
    for name, loss_fn, reading in (("first reading", my_tepo_loss, READING),
                                   ("shipped reading", my_shipped_tepo_loss, SHIPPED)):
        mine_model, ref_model = copy.deepcopy(warm_model), copy.deepcopy(warm_model)
        mine_steps = my_rl_steps(mine_model, torch.optim.AdamW(mine_model.parameters(), lr=1e-4), first_rollout,
                                 first_adv, K, torch.Generator().manual_seed(1), loss_fn=loss_fn)
        ref_steps = reference_rl_steps(ref_model, torch.optim.AdamW(ref_model.parameters(), lr=1e-4), first_rollout,
                                       first_adv, K, torch.Generator().manual_seed(1), reading)
        check(f"one (loss, mask_frac) per mini-batch ({K}, {name})",
              isinstance(mine_steps, list) and len(mine_steps) == K, got=mine_steps,
              hint="return a list with one (loss, mask_frac) pair per optimizer step")
        cmp(f"loss of each mini-batch ({name})", [x[0] for x in mine_steps], [x[0] for x in ref_steps], atol=1e-5,
            hint=steps_hint + "; call loss_fn, not my_tepo_loss, so that both readings run")
        cmp(f"mask_frac of each mini-batch ({name})", [x[1] for x in mine_steps], [x[1] for x in ref_steps],
            atol=1e-6, hint=steps_hint)
        check(f"mask_frac is 0 on the first mini-batch (theta = theta_old, {name})", mine_steps[0][1] == 0.0,
              got=mine_steps[0][1], hint="pass tol=TEPO_MASK_TOL: round-off alone flags tokens with tol = 0")
        diffs = [float((a - b).detach().abs().max()) for a, b in zip(mine_model.parameters(), ref_model.parameters())]
        cmp(f"model parameters after {K} optimizer steps ({name}, max over {len(diffs)} tensors)", max(diffs), 0.0,
            atol=1e-5, hint=steps_hint)

# %% [markdown]
# **3. Your own sampler.** Write `my_sample`: from left-padded prompts (`prompt_ids`, `prompt_mask`, each (B, Tp),
# every row starting with BOS), draw up to `max_new_tokens` tokens per row at `temperature`, one step at a time,
# with no cache: run the model on everything so far (positions counted from each row's first real token, as in
# lesson 1; `model(ids, positions=..., key_mask=..., last_only=True)` gives the last position's logits), take
# `log_softmax(logits / temperature)`, draw with `torch.multinomial(probs, 1, generator=generator)`, and record
# the token and its log-probability. A row that has produced EOS gets PAD (log-prob 0) from then on; stop when every
# row has ended. Return `(tokens, logp, mask)`, each (B, L), the mask 1 up to and including each row's first EOS.
# The check teacher-forces your samples through `score_rollout` (your log-probs must match), rebuilds the mask from
# your tokens, does both again on a fresh (untrained) model with prompts of four lengths (it samples PAD as a real
# token now and then: build the mask by position, as lesson 1 says), draws 4000 first tokens (20000 in full mode) for one prompt to compare their frequencies with the
# model's distribution, and checks the later tokens too: a token drawn from $\pi$ has $\mathbb E[\log\pi(a)]=-H(\pi)$ at every position.

# %%
def my_sample(model, prompt_ids, prompt_mask, max_new_tokens, temperature, eos_id, pad_id, generator):
    """Sample one response per row; returns tokens (B, L) long, logp (B, L) float, mask (B, L) float."""
    ### BEGIN SOLUTION
    B = prompt_ids.shape[0]
    ids, key_mask = prompt_ids, prompt_mask
    tokens, logps = [], []
    finished = torch.zeros(B, dtype=torch.bool)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            positions = (key_mask.long().cumsum(-1) - 1).clamp(min=0)
            logits = model(ids, positions=positions, key_mask=key_mask, last_only=True)[:, -1]     # (B, V)
            logprobs = torch.log_softmax(logits.float() / temperature, -1)
            tok = torch.multinomial(logprobs.exp(), 1, generator=generator).squeeze(-1)          # (B,)
            tokens.append(torch.where(finished, torch.full_like(tok, pad_id), tok))
            logps.append(torch.where(finished, torch.zeros(B), logprobs.gather(-1, tok[:, None]).squeeze(-1)))
            finished = finished | (tok == eos_id)
            ids = torch.cat([ids, tok[:, None]], 1)
            key_mask = torch.cat([key_mask, torch.ones(B, 1, dtype=torch.bool)], 1)
            if bool(finished.all()):
                break
    tokens, logp = torch.stack(tokens, 1), torch.stack(logps, 1)
    is_eos = tokens == eos_id
    after_eos = (is_eos.long().cumsum(-1) - is_eos.long()) > 0                   # strictly after the first EOS
    return tokens, logp, (~after_eos).float()
    ### END SOLUTION


with exercise(3, my_sample):
    gen_s = torch.Generator().manual_seed(5)
    tokens_s, logp_s, mask_s = my_sample(warm_model, first_rollout.prompt_ids, first_rollout.prompt_mask,
                                         task.max_new_tokens, 0.7, tokenizer.eos_id, tokenizer.pad_id, gen_s)
    check("tokens, logp and mask have one shape (B, L)",
          tokens_s.shape == logp_s.shape == mask_s.shape and tokens_s.shape[0] == first_rollout.prompt_ids.shape[0],
          got=(tuple(tokens_s.shape), tuple(logp_s.shape), tuple(mask_s.shape)))
    is_eos = tokens_s == tokenizer.eos_id
    first_eos_mask = ((is_eos.long().cumsum(-1) - is_eos.long()) == 0).float()
    cmp("response mask (1 up to and including the first EOS)", mask_s, first_eos_mask,
        hint="mask = 1 on every token up to and including a row's first EOS, 0 after it (PAD there)")
    mine_ro = Rollout(prompt_ids=first_rollout.prompt_ids, prompt_mask=first_rollout.prompt_mask,
                      response_ids=tokens_s, mask=mask_s, old_logp=logp_s, old_entropy=torch.zeros_like(logp_s),
                      finished=is_eos.any(-1), group_size=G, temperature=0.7)
    with torch.no_grad():
        tf_logp, _ = score_rollout(warm_model, mine_ro)
    real_s = mask_s.bool()
    cmp("log-probs of your samples (vs teacher forcing at T = 0.7)", logp_s[real_s], tf_logp[real_s], atol=1e-4,
        hint="log_softmax(logits / temperature) at each row's LAST position; positions = cumsum(key_mask) - 1")
    cmp("log-prob at positions after EOS", logp_s[~real_s], torch.zeros(int((~real_s).sum())),
        hint="a row that has ended records PAD with log-prob 0")
    # A fresh (untrained) model samples any token, PAD included, and rarely EOS: a mask built by comparing tokens with
    # PAD marks such a row's sampled PAD as padding. Its prompts have four lengths, so each row's positions must be
    # counted from its own first real token.
    with torch.random.fork_rng():                                                # leaves the lesson's random stream
        torch.manual_seed(3)
        fresh_model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=2, n_head=2, n_embd=64))
    fresh_prompts = [[tokenizer.bos_id] + tokenizer.encode(q) for q in ("7+8=", "700+800=", "35+6=", "1+10=")
                     for _ in range(16)]                                           # (64 rows, 4 prompt lengths)
    width = max(len(q) for q in fresh_prompts)
    fresh_ids = torch.tensor([[tokenizer.pad_id] * (width - len(q)) + q for q in fresh_prompts])      # left-padded
    fresh_pmask = torch.tensor([[False] * (width - len(q)) + [True] * len(q) for q in fresh_prompts])
    tok_f, logp_f, mask_f = my_sample(fresh_model, fresh_ids, fresh_pmask, task.max_new_tokens, 1.0, tokenizer.eos_id,
                                      tokenizer.pad_id, torch.Generator().manual_seed(9))
    eos_f = tok_f == tokenizer.eos_id
    want_f = ((eos_f.long().cumsum(-1) - eos_f.long()) == 0).float()
    pad_rows = int(((tok_f == tokenizer.pad_id) & want_f.bool()).any(-1).sum())
    print(f"fresh model: {pad_rows} of {tok_f.shape[0]} rows sampled PAD as a real token, "
          f"{int(eos_f.any(-1).sum())} ended with EOS")
    cmp("response mask, fresh model (PAD sampled as a real token; 4 prompt lengths)", mask_f, want_f,
        hint="build the mask by position, from where each row's first EOS fell, never from tokens != pad_id: a model "
             "can sample PAD like any other token")
    fresh_ro = Rollout(prompt_ids=fresh_ids, prompt_mask=fresh_pmask, response_ids=tok_f, mask=mask_f, old_logp=logp_f,
                       old_entropy=torch.zeros_like(logp_f), finished=eos_f.any(-1), group_size=16, temperature=1.0)
    with torch.no_grad():
        tf_logp_f, _ = score_rollout(fresh_model, fresh_ro)
    cmp("log-probs of your samples, fresh model, prompts of 4 lengths (vs teacher forcing)", logp_f[want_f.bool()],
        tf_logp_f[want_f.bool()], atol=1e-4,
        hint="left-padded prompts: positions = cumsum(key_mask) - 1, and pass key_mask so that padding is not attended")
    assert pad_rows > 0, "the fresh model's check is only a test if some row sampled PAD as a real token"
    n_first = 20000 if FULL else 4000
    one = first_rollout.prompt_ids[:1].expand(n_first, -1)
    one_mask = first_rollout.prompt_mask[:1].expand(n_first, -1)
    first_tok, _, _ = my_sample(warm_model, one, one_mask, 1, 0.7, tokenizer.eos_id, tokenizer.pad_id,
                                torch.Generator().manual_seed(6))
    with torch.no_grad():
        pos = (one_mask[:1].long().cumsum(-1) - 1).clamp(min=0)
        probs = torch.softmax(warm_model(one[:1], positions=pos, key_mask=one_mask[:1], last_only=True)[0, -1] / 0.7,
                              -1)
    freq = torch.bincount(first_tok[:, 0], minlength=probs.numel()).double() / n_first
    tv = 0.5 * float((freq - probs.double()).abs().sum())
    print(f"first token of {n_first} samples: total-variation distance to the model's distribution {tv:.3f}")
    check("your sampler draws from the model's distribution (total variation < 0.05)", tv < 0.05, got=tv,
          hint="draw from softmax(logits / temperature) with torch.multinomial, at the last position of each row")
    many = first_rollout.prompt_ids.repeat(16, 1)                                    # (16 B, Tp): 1024 rows
    many_mask = first_rollout.prompt_mask.repeat(16, 1)
    tok_m, logp_m, mask_m = my_sample(warm_model, many, many_mask, task.max_new_tokens, 0.7, tokenizer.eos_id,
                                      tokenizer.pad_id, torch.Generator().manual_seed(8))
    many_ro = Rollout(prompt_ids=many, prompt_mask=many_mask, response_ids=tok_m, mask=mask_m, old_logp=logp_m,
                      old_entropy=torch.zeros_like(logp_m), finished=(tok_m == tokenizer.eos_id).any(-1), group_size=G,
                      temperature=0.7)
    with torch.no_grad():
        tf_logp_m, tf_entropy_m = score_rollout(warm_model, many_ro)               # at T = 0.7, as sampled
    later = mask_m.bool() & (torch.arange(mask_m.shape[1]) >= 1)[None, :]            # every real token after the first
    gap = (tf_logp_m + tf_entropy_m)[later].double()                                # log pi(a) + H: mean 0 if a ~ pi
    z_gap = float(gap.mean() / (gap.std() / math.sqrt(gap.numel())))
    print(f"later tokens ({gap.numel()}): mean of log pi(a) + H = {gap.mean():+.4f}, {z_gap:+.1f} standard errors")
    check("later tokens are drawn from the model's distribution (|mean of log pi(a) + H| < 4 standard errors)",
          abs(z_gap) < 4, got=z_gap, hint="sample EVERY token with torch.multinomial: an argmax after the first token "
                                          "picks likelier tokens than pi does, so log pi(a) + H is positive on average")

# %% [markdown]
# ## Your code in the loop
#
# Now train with TEPO as shipped, written by you, for 150 iterations. Each iteration: a fresh rollout of 32 prompts x
# 8 answers at temperature 0.5, group advantages, and your `my_rl_steps` with `my_shipped_tepo_loss`. The optimizer is
# AdamW with two of the trainer's settings: betas (0.9, 0.95), and the gradient's norm clipped at 1 before each step
# ("the trainer's betas and clip" below). Its learning rate and weight decay are this loop's own, not the trainer's
# (the cell prints both): the learning rate climbs to 3e-4 over the first 10 iterations and then falls along a cosine
# to a tenth of that by the last one (`lr_at` in `minitepo/optim.py`, the trainer's schedule), so that the last policy
# is not caught in mid-swing. The last section shows, from the same loop run under other settings, why the
# temperature, the betas and clip, and the schedule.
#
# This is one iteration of the library's RL loop with your code in place of the library's: `Trainer.iterate` in
# `minitepo/rl.py`, read it top to bottom. It makes the same sample -> reward -> advantages -> $K$ optimizer steps,
# and adds what this loop leaves out: dynamic sampling and a metrics record per iteration.
#
# **The task and its held-out prompts.** The loop trains on 2-digit sums (`make_task("add", levels=(2,))`, the warm
# start above: 450 supervised steps, just enough to get about half of them right). Of the 8100 prompts, `task.eval_set()`
# holds out 200 that `task.sample` never draws, and the loop is evaluated on those. Why not the 1-digit sums of
# lesson 1: they have only 100 prompts, and a task holds out at most a fifth of a level, so 20 held-out prompts is all
# there is. On 20 prompts one prompt is 5 points of accuracy, and a lift of 10 points is two prompts: one prompt either
# way changes the verdict. On 200 prompts one prompt is half a point. Every 25 iterations, two accuracies on them:
#
# * **greedy** (the number lesson 9 reports); at the start and at the end, which prompts it gets right;
# * **sampled** at temperature 1, 4 answers each, with a fixed generator.
#
# Every iteration also records the mean reward of the rollout, the entropy of the sampled tokens (at the sampling
# temperature), the share of tokens your loss held (the clip fraction) and the mask fraction.
#
# **How sure is the lift?** The greedy accuracy before and after training is measured on the *same* 200 prompts, so the
# comparison is paired: prompt $j$ gives $d_j=c^{after}_j-c^{before}_j\in\{-1,0,+1\}$, with $c=1$ for a right answer.
# The lift is their mean $\bar d$, and its 95% interval is
#
# $$\bar d\pm1.96\,\frac{s_d}{\sqrt n},\qquad s_d^2=\frac1{n-1}\sum_j(d_j-\bar d)^2,$$
#
# the normal approximation for a mean of $n=200$ independent differences (the central limit theorem). Pairing is what
# makes it narrow: a prompt right both times or wrong both times gives $d_j=0$, so only the prompts that flipped carry
# the spread. `paired_interval` below computes it; a paired bootstrap (draw 200 prompts with replacement 10,000 times,
# take the 2.5% and 97.5% quantiles of $\bar d$) is printed beside it as a check that needs no normal approximation. The
# interval is about the prompts: how far another draw of 200 held-out 2-digit sums could move the lift of *this*
# trained model. Another loop seed trains another model; the slow tests run seeds 1 and 2.
#
# The loop's seed is 0. To run it with another one (other prompts, samples and mini-batch order; the same warm start),
# set `MINITEPO_CAPSTONE_SEED=1` before you start the lesson. The check after the loop must pass for every seed.

# %%
class ClippedAdamW(torch.optim.AdamW):
    """AdamW whose step first clips the gradient's global norm to ``max_norm``, as the trainer's ``grad_clip`` does."""

    def __init__(self, params, max_norm, **kwargs):
        super().__init__(params, **kwargs)
        self.max_norm = max_norm

    def step(self, closure=None):
        torch.nn.utils.clip_grad_norm_([p for group in self.param_groups for p in group["params"]], self.max_norm)
        return super().step(closure)


def paired_interval(before, after, z=1.96):
    """Lift of accuracy from per-prompt verdicts on the same prompts, before and after, with its normal interval:
    returns (lift, low, high, gained, lost)."""
    d = [float(a) - float(b) for b, a in zip(before, after)]            # one of -1, 0, +1 per prompt
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    half = z * sd / math.sqrt(n)
    return mean, mean - half, mean + half, d.count(1.0), d.count(-1.0)


def paired_bootstrap(before, after, draws=10_000, seed=0):
    """The 2.5% and 97.5% quantiles of the mean difference over prompts drawn with replacement (a check)."""
    d = torch.tensor([float(a) - float(b) for b, a in zip(before, after)], dtype=torch.float64)
    rows = torch.randint(len(d), (draws, len(d)), generator=torch.Generator().manual_seed(seed))   # (draws, n)
    means = d[rows].mean(1).sort().values
    return means[int(0.025 * draws)].item(), means[int(0.975 * draws) - 1].item()


iterations, temperature = 150, 0.5                   # the same with MINITEPO_LESSONS=full: the check below is for these
held_out = task.eval_set()
loop_prompts = {task.sample(random.Random(10_000 + 100 * it + j + 1_000_000 * SEED)).prompt
                for it in range(iterations) for j in range(32)}   # every prompt this loop will train on
print(f"{task.prompt_space_size(2)} 2-digit prompts, {len(held_out)} of them held out; the loop draws "
      f"{len(loop_prompts)} distinct training prompts")
check("no held-out prompt is ever drawn for training", not ({e.prompt for e in held_out} & loop_prompts))


def accuracies(model):
    """Greedy verdicts on the held-out prompts (one bool each) and the sampled accuracy (T = 1, 4 answers each)."""
    sampled = verdicts(model, tokenizer, task, held_out, group_size=4, temperature=1.0,
                       generator=torch.Generator().manual_seed(7))
    return verdicts(model, tokenizer, task, held_out), sum(sampled) / len(sampled)


held_seen = []                                         # your loss's held share, one per optimizer step


def my_loss_logged(logp, old_logp, advantages, mask, entropy, old_entropy, **kwargs):
    """Your shipped loss, recording the share of real tokens it held (the clip fraction)."""
    loss, parts = my_shipped_tepo_loss(logp, old_logp, advantages, mask, entropy, old_entropy, **kwargs)
    held_seen.append(float(parts["held"][mask.bool()].double().mean()))
    return loss, parts


policy = copy.deepcopy(warm_model)                     # re-running the cell starts from the warm start again
optimizer = ClippedAdamW(policy.parameters(), max_norm=1.0, lr=3e-4, betas=(0.9, 0.95))
peak_lr, warmup, min_lr_frac = optimizer.defaults["lr"], 10, 0.1     # warmup in iterations; the floor: a tenth
trainer = TrainerConfig()
trainer_betas = inspect.signature(make_optimizer).parameters["betas"].default       # make_optimizer, the trainer's
print(f"this loop's optimizer: betas {optimizer.defaults['betas']}, gradient norm clipped at {optimizer.max_norm}, "
      f"lr up to {peak_lr} over {warmup} iterations, then a cosine down to {peak_lr * min_lr_frac:.0e}, weight decay "
      f"{optimizer.defaults['weight_decay']} on every tensor; the trainer's: betas {trainer_betas}, clip "
      f"{trainer.grad_clip}, lr {trainer.lr}, weight decay {trainer.weight_decay} on matrices")
check("text: the loop shares the trainer's betas and clip, not its learning rate or weight decay",
      tuple(optimizer.defaults["betas"]) == trainer_betas
      and optimizer.max_norm == trainer.grad_clip and optimizer.defaults["lr"] != trainer.lr
      and optimizer.defaults["weight_decay"] != trainer.weight_decay)
order_gen = torch.Generator().manual_seed(2 + SEED)
first_verdicts, first_sampled = accuracies(policy)
curves = {"step": [0], "greedy_held": [sum(first_verdicts) / len(held_out)], "sampled_held": [first_sampled]}
print(f"the warm start: held-out greedy accuracy {curves['greedy_held'][0]:.3f}, sampled (T = 1) {first_sampled:.3f}")
check("text: the warm start gets about half of the held-out prompts right (40-60%)",
      0.4 <= curves["greedy_held"][0] <= 0.6, got=curves["greedy_held"][0])
history = []
for it in range(iterations):
    for group in optimizer.param_groups:               # this iteration's learning rate (warmup, then cosine)
        group["lr"] = lr_at(it, lr=peak_lr, warmup=warmup, total=iterations, min_lr_frac=min_lr_frac)
    prompts = [task.sample(random.Random(10_000 + 100 * it + j + 1_000_000 * SEED)) for j in range(32)]
    ro = collect_rollout(policy, tokenizer, task, prompts, group_size=G, temperature=temperature,
                         generator=torch.Generator().manual_seed(100 + it + 1000 * SEED))
    adv = group_advantages(ro.rewards, group_size=G)
    held_seen.clear()
    steps = my_rl_steps(policy, optimizer, ro, adv, K, order_gen, loss_fn=my_loss_logged)
    history.append(dict(reward=ro.rewards.mean().item(), entropy=ro.old_entropy[ro.mask.bool()].mean().item(),
                        clip_frac=sum(held_seen) / len(held_seen), mask_fracs=[m for _, m in steps],
                        lr=optimizer.param_groups[0]["lr"]))
    if (it + 1) % 25 == 0:
        last_verdicts, sampled_acc = accuracies(policy)
        curves["step"].append(it + 1)
        curves["greedy_held"].append(sum(last_verdicts) / len(held_out))
        curves["sampled_held"].append(sampled_acc)
        print(f"iteration {it + 1:3d}: greedy held-out {curves['greedy_held'][-1]:.3f}, sampled held-out "
              f"{sampled_acc:.3f}; entropy {history[-1]['entropy']:.3f}, lr {history[-1]['lr']:.1e}")
assert all(math.isfinite(h["reward"]) for h in history), "every reward is finite"
assert all(h["mask_fracs"][0] == 0.0 for h in history), "the mask is empty on each iteration's first step"
mean_entropy = lambda a, b: sum(h["entropy"] for h in history[a:b]) / len(history[a:b])   # noqa: E731
print(f"entropy of the sampled tokens: {mean_entropy(0, 10):.3f} in the first 10 iterations, "
      f"{mean_entropy(-10, None):.3f} in the last 10")
lift, low, high, gained, lost = paired_interval(first_verdicts, last_verdicts)
boot_low, boot_high = paired_bootstrap(first_verdicts, last_verdicts)
print(f"seed {SEED}: held-out greedy accuracy {curves['greedy_held'][0]:.3f} -> {curves['greedy_held'][-1]:.3f}, "
      f"lift {lift:+.3f}, 95% interval [{low:+.3f}, {high:+.3f}] ({gained} prompts gained, {lost} lost, of "
      f"{len(held_out)}) after {iterations} iterations; paired bootstrap [{boot_low:+.3f}, {boot_high:+.3f}]")
check(f"your loop lifted the held-out greedy accuracy by at least 10 points ({len(held_out) // 10} of the "
      f"{len(held_out)} prompts, net), and the lift's 95% interval lies above 0",
      lift >= 0.10 - 1e-9 and low > 0, got=(round(lift, 3), round(low, 3), round(high, 3)),
      hint="the loop's settings are the ones the last section chose: 150 iterations, temperature 0.5, AdamW betas "
           "(0.9, 0.95), gradient norm clipped at 1, lr 3e-4 with warmup and cosine")

# %% [markdown]
# ## Figure: the capstone's curves
#
# Left: the entropy of the sampled tokens. Middle: the clip fraction of your loss and the largest mask fraction of each
# iteration. Right: the two accuracies on the 200 held-out prompts; the band around each is $\pm1.96$ standard errors
# of one accuracy measured on 200 prompts, $\sqrt{p(1-p)/200}$ each (printed below: about 7 points either way at
# $p=0.5$). The lift's own interval
# (printed above) is narrower than two bands side by side suggest, because it is paired. **What to watch:** the
# sampled accuracy and the greedy accuracy do not move together.

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
its = range(1, iterations + 1)


def smooth(values, w=10):
    return [sum(values[max(0, i - w + 1):i + 1]) / len(values[max(0, i - w + 1):i + 1]) for i in range(len(values))]


def band(p, n=len(held_out)):
    return [1.96 * math.sqrt(x * (1 - x) / n) for x in p]


print(f"half-width of the band at p = 0.5: {band([0.5])[0]:.3f}")
axes[0].plot(its, [h["entropy"] for h in history], color="tab:purple", alpha=0.3, lw=0.8)
axes[0].plot(its, smooth([h["entropy"] for h in history]), color="tab:purple")
axes[0].set(xlabel="RL iteration", ylabel="nats / sampled token", title="entropy of the sampled tokens")
axes[1].plot(its, smooth([h["clip_frac"] for h in history]), color="tab:red", label="clip fraction (held tokens)")
axes[1].plot(its, smooth([max(h["mask_fracs"]) for h in history]), color="tab:orange", label="largest mask_frac")
axes[1].set(xlabel="RL iteration", ylabel="share of real tokens", title="clip and mask (mean of the last 10)")
axes[1].legend(fontsize=8)
for key, color, marker, label in (("sampled_held", "tab:blue", "o-", "sampled (T = 1)"),
                                  ("greedy_held", "tab:green", "s-", "greedy")):
    p, e = curves[key], band(curves[key])
    axes[2].plot(curves["step"], p, marker, color=color, label=f"{label}, {len(held_out)} held-out prompts")
    axes[2].fill_between(curves["step"], [a - b for a, b in zip(p, e)], [a + b for a, b in zip(p, e)], color=color,
                         alpha=0.15)
axes[2].set(xlabel="RL iteration", ylabel="accuracy", title="sampled against greedy accuracy (band: 95%)")
axes[2].legend(fontsize=8)
for ax in axes:
    ax.grid(alpha=0.3)
fig.suptitle("Lesson 10: TEPO as shipped, written by you")
fig.tight_layout()
plt.savefig(OUT / "10_capstone.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# ## Why sampled and greedy accuracy move differently
#
# RL raises the probability of right answers, a little at a time. The sampled accuracy at temperature 1 is that
# probability, averaged over prompts: it moves as soon as the policy does. Greedy decoding takes the most likely token
# at each position. On a prompt where a wrong answer is the most likely one, raising the right answer from 0.2 to 0.35
# changes nothing greedy, until the right answer overtakes. Then the greedy answer flips at once. So greedy accuracy
# lags, and early in a run it can even fall: the same updates that raise right answers on average can tip a prompt
# whose right answer was only just on top. RL *sharpens* first, and the greedy answer follows when the sharpening
# reaches the argmax.
#
# `lessons/data/capstone_settings.json` holds this loop under three optimizer settings and
# `lessons/data/capstone_temperature.json` under three sampling temperatures, three seeds each (0, 1, 2: seed 0 draws
# this run's prompts, samples and mini-batch order), made by the scripts of the same names with the library's
# `tepo_loss` in place of your loss, from this lesson's warm start. Each run keeps which held-out prompts greedy
# decoding got right at the start and at the end, so every lift below comes with its paired interval.

# %%
DATA = json.loads((LESSONS_DIR / "data" / "capstone_settings.json").read_text())
TEMP = json.loads((LESSONS_DIR / "data" / "capstone_temperature.json").read_text())
reward_first = sum(h["reward"] for h in history[:10]) / 10
reward_last = sum(h["reward"] for h in history[-10:]) / 10
print(f"this run: mean sampled reward {reward_first:.3f} in the first 10 iterations, {reward_last:.3f} in the last 10; "
      f"sampled held-out {curves['sampled_held'][0]:.3f} -> {curves['sampled_held'][-1]:.3f}; greedy held-out "
      f"{curves['greedy_held'][0]:.3f} -> {curves['greedy_held'][-1]:.3f}")
check("the mean sampled reward and the sampled held-out accuracy rose in this run",
      reward_last > reward_first and curves["sampled_held"][-1] > curves["sampled_held"][0],
      got=(reward_first, reward_last, curves["sampled_held"][0], curves["sampled_held"][-1]))


def verdict_list(bits):
    return [b == "1" for b in bits]


def run_lift(run):
    """(lift, low, high, gained, lost) of one run in the data, from its held-out verdicts at the start and the end."""
    return paired_interval(verdict_list(run["verdicts_start"]), verdict_list(run["verdicts_end"]))


def show(runs_by_name, title):
    print(title)
    for name, runs in runs_by_name.items():
        print(f"  {name}")
        for seed, r in runs.items():
            lift_r, low_r, high_r, up_r, down_r = run_lift(r)
            print(f"    seed {seed}: greedy {r['greedy_held'][0]:.3f} -> {r['greedy_held'][-1]:.3f}, lift {lift_r:+.3f} "
                  f"[{low_r:+.3f}, {high_r:+.3f}] (+{up_r} -{down_r});  sampled {r['sampled_held'][0]:.3f} -> "
                  f"{r['sampled_held'][-1]:.3f};  greedy every 25 iterations "
                  + " ".join(f"{a:.2f}" for a in r["greedy_held"]))


show(DATA["runs"], f"the loop at T = {DATA['temperature']}, {DATA['iterations']} iterations, under three optimizer "
                   f"settings (lessons/data/capstone_settings.json):")
show(TEMP["runs"], f"the lesson's optimizer under three sampling temperatures (lessons/data/capstone_temperature.json):")
CHOSEN = DATA["runs"]["betas (0.9, 0.95), clip 1.0, warmup and cosine lr"]
check("the data's loop is this lesson's: 200 held-out prompts, 150 iterations, T 0.5, the same warm start",
      DATA["held_out"] == len(held_out) and DATA["iterations"] == iterations and DATA["temperature"] == temperature
      and verdict_list(CHOSEN["0"]["verdicts_start"]) == first_verdicts)
print(f"seed 0 in the data (the library's loss): held-out greedy {CHOSEN['0']['greedy_held'][0]:.3f} -> "
      f"{CHOSEN['0']['greedy_held'][-1]:.3f}; this run (your loss): {curves['greedy_held'][0]:.3f} -> "
      f"{curves['greedy_held'][-1]:.3f}")
check("the T 0.5 runs of the temperature file are the chosen setting's runs, bit for bit",
      TEMP["runs"]["T 0.5"] == CHOSEN)

# %% [markdown]
# The warm start shows the two accuracies apart before any RL: it answers about half of the held-out prompts right
# greedily, but a sample at $T=1$ is right far less often (both printed after the loop's first evaluation). A sampled
# answer is right only if every one of its digits is, and the probability of that is a product: a digit whose right
# value has probability 0.45 against wrong ones at 0.3 and 0.25 is right under greedy decoding, yet three such digits
# sampled at $T=1$ are all right with probability $0.45^3\approx0.09$. So the two accuracies move by different amounts:
# raising each right digit a little flips the argmax where it was close (greedy jumps) while the product barely moves.

# %%
first_25 = [r["greedy_held"][1] - r["greedy_held"][0] for r in CHOSEN.values()]
greedy_gain = [r["greedy_held"][-1] - r["greedy_held"][0] for r in CHOSEN.values()]
sampled_gain = [r["sampled_held"][-1] - r["sampled_held"][0] for r in CHOSEN.values()]
print(f"the chosen loop, seeds 0-2: greedy held-out change after 25 iterations {[round(x, 3) for x in first_25]}, "
      f"at the end {[round(x, 3) for x in greedy_gain]}; sampled (T = 1) at the end {[round(x, 3) for x in sampled_gain]}")
check("text: 0.45 ** 3 is about 0.09", abs(0.45 ** 3 - 0.09) < 0.005, got=0.45 ** 3)
check("the warm start: greedy held-out accuracy at least three times the sampled one (T = 1), in this run",
      curves["greedy_held"][0] >= 3 * curves["sampled_held"][0], got=(curves["greedy_held"][0], curves["sampled_held"][0]))
check("the chosen loop: greedy accuracy fell in the first 25 iterations of every seed, then ended above the warm start "
      "by more than the sampled accuracy rose", all(x < 0 for x in first_25)
      and all(g > s > 0 for g, s in zip(greedy_gain, sampled_gain)), got=(first_25, greedy_gain, sampled_gain))

# %% [markdown]
# So greedy accuracy first *fell*, in every seed (by 23 prompts in seeds 0 and 2, by a single prompt in seed 1): the
# first updates, near the peak learning rate, tip some prompts whose right answer was only just on top. Then it rose
# past the start, by far more than the sampled accuracy did.
#
# ## What lifts greedy accuracy
#
# The three optimizer settings share everything else (T = 0.5, 150 iterations, peak lr 3e-4): AdamW's own betas
# (0.9, 0.999) with no gradient clip and a constant learning rate; the trainer's betas (0.9, 0.95) and clip at norm 1,
# still constant; and the same with the warmup and cosine decay of this lesson's loop. The temperature file runs the
# last one with rollouts sampled at T = 1, 0.7 and 0.5.

# %%
lifts_of = lambda runs: [run_lift(r) for r in runs.values()]                      # noqa: E731
mean_lift = lambda runs: sum(x[0] for x in lifts_of(runs)) / len(runs)          # noqa: E731
NO_CLIP, CONSTANT = (DATA["runs"]["adamw's betas, no clip, constant lr"],
                     DATA["runs"]["betas (0.9, 0.95), clip 1.0, constant lr"])
for name, runs in (("AdamW's betas, no clip, constant lr", NO_CLIP), ("betas and clip, constant lr", CONSTANT),
                   ("betas and clip, warmup and cosine (the lesson's)", CHOSEN),
                   *((f"the lesson's optimizer at {t}", TEMP["runs"][t]) for t in ("T 1", "T 0.7"))):
    print(f"{name:50s} mean lift {mean_lift(runs):+.3f}; lifts "
          + ", ".join(f"{x[0]:+.3f} [{x[1]:+.3f}, {x[2]:+.3f}]" for x in lifts_of(runs)))
check("without the trainer's betas and clip no seed's greedy accuracy rose, and two fell with their whole interval "
      "below 0", all(x[0] <= 0 for x in lifts_of(NO_CLIP)) and sum(x[2] < 0 for x in lifts_of(NO_CLIP)) == 2,
      got=lifts_of(NO_CLIP))
check("with the betas and clip at a constant lr every seed's interval lies above 0, but only one seed reached 10 points",
      all(x[1] > 0 for x in lifts_of(CONSTANT)) and sum(x[0] >= 0.10 - 1e-9 for x in lifts_of(CONSTANT)) == 1,
      got=lifts_of(CONSTANT))
check("with the warmup and cosine every seed reached 10 points with its interval above 0, and the mean lift is the "
      "highest of the three settings", all(x[0] >= 0.10 - 1e-9 and x[1] > 0 for x in lifts_of(CHOSEN))
      and mean_lift(CHOSEN) > max(mean_lift(CONSTANT), mean_lift(NO_CLIP)), got=lifts_of(CHOSEN))
by_seed = [round(a[0] - b[0], 3) for a, b in zip(lifts_of(CHOSEN), lifts_of(CONSTANT))]
print(f"the schedule's gain over a constant lr, seed by seed: {by_seed}")
check("but the schedule's gain is not resolved seed by seed: one seed lifted more at a constant lr",
      sum(x < 0 for x in by_seed) == 1, got=by_seed)
T1, T07, T05 = (TEMP["runs"][t] for t in ("T 1", "T 0.7", "T 0.5"))
print(f"mean lift: T 1 {mean_lift(T1):+.3f}, T 0.7 {mean_lift(T07):+.3f}, T 0.5 {mean_lift(T05):+.3f}; sampled (T = 1) "
      f"held-out accuracy at the end: T 1 {[round(r['sampled_held'][-1], 3) for r in T1.values()]}, T 0.5 "
      f"{[round(r['sampled_held'][-1], 3) for r in T05.values()]}")
check("the lower the sampling temperature, the higher the mean lift of greedy accuracy (T 1 < T 0.7 < T 0.5)",
      mean_lift(T1) < mean_lift(T07) < mean_lift(T05))
check("at T 1 one seed fell short of 10 points", sum(x[0] < 0.10 - 1e-9 for x in lifts_of(T1)) == 1, got=lifts_of(T1))
check("but training at T 1 raised the sampled accuracy at T 1 the most: every T 1 run ends above every T 0.5 run",
      min(r["sampled_held"][-1] for r in T1.values()) > max(r["sampled_held"][-1] for r in T05.values()))
t_by_seed = [round(a[0] - b[0], 3) for a, b in zip(lifts_of(T05), lifts_of(T07))]
print(f"T 0.5 minus T 0.7, seed by seed: {t_by_seed}")
check("T 0.5 against T 0.7 is not resolved seed by seed: one seed lifted more at T 0.7", sum(x < 0 for x in t_by_seed) == 1,
      got=t_by_seed)

# %% [markdown]
# **What the evidence says.** The checks above state it.
#
# * AdamW's own betas without a gradient clip did not lift greedy accuracy in any seed, and two of the three collapsed.
# * The trainer's betas (0.9, 0.95) and clip at norm 1 made every seed's lift positive, interval and all, but at a
#   constant learning rate only one seed reached 10 points. We did not separate the betas from the clip.
# * The warmup and cosine decay gave the highest mean lift, and every seed at least 10 points with its interval above
#   0. Seed by seed the gain over a constant rate is not resolved (one seed went the other way). Why a decay could
#   help: at a constant rate the last policy is wherever the last large steps left it, and the greedy accuracy swings
#   from one evaluation to the next (the lists above); the decay makes the last steps small. This is a reason, not a
#   result.
# * The lower the sampling temperature, the higher the mean lift of greedy accuracy; at T = 1 one seed fell short of
#   10 points. Training at T = 1 raised the *sampled* accuracy at T = 1 the most, as if each temperature sharpened
#   the distribution it samples from. At T = 0.5 the eight answers to a prompt are mostly the model's likeliest ones, so
#   the advantage compares the answers that compete for the argmax. T = 0.5 against T = 0.7 is not resolved seed by seed.
#
# So your loop uses the trainer's betas and clip, the warmup and cosine, and T = 0.5. We chose these on three other
# loop seeds (10, 11 and 12) by a rule written down before seeds 0, 1 and 2 ran (`lessons/data/README.md`, "Capstone:
# choosing the loop's settings"); the data above are the confirmation. Your run is seed 0 of that setting with your loss
# in place of the library's. The two make the same steps up to round-off (exercise 2), and the check above confirms
# that they start from the same warm start and the same held-out verdicts; over 600 optimizer steps the round-off can
# still move a few held-out prompts (the printout puts the two side by side). The slow tests run this lesson with seeds 0, 1 and 2 (`MINITEPO_CAPSTONE_SEED`), and the
# check after the loop must pass for each. Adding dynamic sampling to your loop is a good next exercise:
# `rollout.select(rows)` keeps the rows of the groups whose rewards differ.


# %% [markdown]
# ## Why these papers
#
# TEPO (arXiv 2510.09369, revised as 2604.12736) is the sum of the pieces you just wrote: GSPO's sequence ratio
# (arXiv 2507.18071) for the link between a response's reward and its tokens, DAPO's token-level mean and clip range
# (arXiv 2503.14476) for the aggregation, and a KL penalty to the old policy on the tokens whose entropy an update
# squeezes. The optimizer steps are PPO's (arXiv 1707.06347): several mini-batches on one rollout, which is what
# gives the ratio and the mask something to do. GRPO (arXiv 2402.03300) supplies the advantages. Every choice the
# papers leave open is a switch of the library's `tepo_loss`; your version fixes one reading, and the checks above
# name it.
