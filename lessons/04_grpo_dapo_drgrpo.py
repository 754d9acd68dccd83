# %% [markdown]
# # Lesson 4 — GRPO, DAPO and Dr. GRPO: one batch, three objectives
#
# ## What you will learn
#
# * GRPO, DAPO and Dr. GRPO all use the same token ratio and the same clipped surrogate. They differ in
#   three small places: how the advantage is scaled, how wide the clip is, and how a (B, T) grid of
#   per-token losses becomes one number (the *aggregation*). GRPO adds a KL term to a frozen reference.
# * The aggregation decides **how hard each token is pushed**, and that push depends on the length of
#   the response the token sits in. You will measure it with autograd: d loss / d logp for every token.
# * The reference KL and its three estimators k1, k2, k3: their values, their gradients, and what each
#   one estimates when it is put in the loss.
#
# Nothing here is trained. Every number is a pure function of a hand-made batch, so every check is exact.
# The loss *value* means little (it is not a measure of progress); what moves the model is its gradient,
# and that is what this lesson looks at.

# %% [markdown]
# ## Key equations
#
# Notation of `spec/ALGORITHMS.md` §1: $\ell^\theta_{i,t}$ is the log-prob of token $t$ of response $i$
# under the current policy, $r_{i,t}=\exp(\ell^\theta_{i,t}-\ell^{old}_{i,t})$ the token ratio, $|o_i|$
# the length of response $i$, $m_{i,t}$ the response mask, $N=\sum_i|o_i|$, $B'$ the number of non-empty
# responses, $L_{max}$ the response-length limit. The clipped surrogate (§1, `minitepo/losses/common.py:clipped_surrogate`):
#
# $$\lambda(\rho,A;\epsilon_l,\epsilon_h)=-\min\big(\rho A,\ \mathrm{clip}(\rho,1-\epsilon_l,1+\epsilon_h)A\big)$$
#
# Advantages (§2, `group_advantages`): GRPO and DAPO use the group z-score
# $A_i=(R_i-\mathrm{mean}_g R)/(\mathrm{std}_g R+\varepsilon)$; Dr. GRPO uses the mean only, $A_i=R_i-\mathrm{mean}_g R$
# (`group_advantages(..., scale="none")`).
#
# The three objectives (§4; `grpo_loss`, `dapo_loss`, `minitepo.losses.dr_grpo_loss`):
#
# $$\mathcal L_{GRPO}=\frac1{B'}\sum_i\frac1{|o_i|}\sum_t m_{i,t}\big[\lambda(r_{i,t},A_i;0.2,0.2)+\beta\,k_3(\ell^\theta_{i,t},\ell^{ref}_{i,t})\big],\quad\beta=0.04$$
#
# $$\mathcal L_{DAPO}=\frac1{N}\sum_i\sum_t m_{i,t}\,\lambda(r_{i,t},A_i;0.2,0.28)
# \qquad
# \mathcal L_{Dr.GRPO}=\frac1{B\,L_{max}}\sum_i\sum_t m_{i,t}\,\lambda(r_{i,t},A_i;0.2,0.2)$$
#
# On the first update after a rollout the policy *is* the behaviour policy ($r_{i,t}=1$, nothing is
# clipped) and $\partial\lambda/\partial\ell^\theta_{i,t}=-A_i$. So the gradient on one token is
# $-A_i$ times the weight the aggregation gives it (§3, `aggregate`):
#
# | objective | aggregation | $\partial\mathcal L/\partial\ell^\theta_{i,t}$ on-policy |
# |---|---|---|
# | GRPO | `seq-mean-token-mean` | $-A_i\,/\,(B'\,|o_i|)$ |
# | DAPO | `token-mean` | $-A_i\,/\,N$ |
# | Dr. GRPO | `seq-mean-token-sum-norm` | $-A_i\,/\,(B\,L_{max})$ |
#
# KL estimators (§5, `minitepo.losses.kl_penalty`), with $x=\ell^{ref}-\ell^\theta$:
# $k_1=-x$, $k_2=\tfrac12x^2$, $k_3=e^{x}-x-1$; their gradients with respect to $\ell^\theta$ are $1$, $-x$ and $1-e^{x}$.

# %% [markdown]
# ## Pseudocode
#
# ```
# rollout  = G responses per prompt, rewarded                      (lesson 2)
# A        = group_advantages(R)          # Dr. GRPO: scale="none"
# logp     = score_rollout(model, rollout) # with gradient; equals rollout.old_logp on the first update
# r        = exp(logp - old_logp)                          per token
# lam      = -min(r A, clip(r, 1-eps_low, 1+eps_high) A)   per token
# lam     += beta * k3(logp, ref_logp)                     GRPO only
# loss     = aggregate(lam, mask, mode)                    GRPO / DAPO / Dr. GRPO differ here
# loss.backward(); optimizer.step()
# ```

# %%
import math
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from minitepo import dapo_loss, group_advantages, grpo_loss
from minitepo.losses import dr_grpo_loss, kl_penalty

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

# %% [markdown]
# ## One batch
#
# Two prompts, eight responses each, of lengths 2, 4, ..., 16 tokens (the toy tasks' answers are shorter,
# but length is the point here, so we make it vary widely). In the first group the even-numbered
# responses are right; in the second, the odd-numbered ones. So every length has one right and one
# wrong answer, and every advantage has the same size: the only thing that differs between tokens is
# the length of their response. The log-probs are random numbers; on the first update after a rollout
# the current log-probs equal the recorded ones (`logp = old_logp`), and we also let the reference equal
# them, as it does at the very first iteration of a run.

# %%
G, L_MAX = 8, 16                                          # responses per prompt, response-length limit
lengths = torch.arange(2, L_MAX + 1, 2).repeat(2)         # (16,): 2, 4, ..., 16 twice
rewards = torch.tensor([1.0, 0.0] * 4 + [0.0, 1.0] * 4)   # (16,)
B, T = lengths.numel(), L_MAX
mask = (torch.arange(T)[None, :] < lengths[:, None]).float()              # (B, T) 1 on real tokens
old_logp = torch.log(torch.rand(B, T, dtype=torch.float64) * 0.9 + 0.05) * mask   # (B, T), float64 for exact checks
adv_z = group_advantages(rewards, group_size=G).double()                 # (B,) GRPO, DAPO
adv_mean = group_advantages(rewards, group_size=G, scale="none").double()  # (B,) Dr. GRPO
print("z-score advantages:", adv_z[:G].tolist())
print("mean-only advantages:", adv_mean[:G].tolist())


def token_grads(objective, advantages, logp_value=None, **kwargs):
    """Loss value and d loss / d logp (B, T) of one objective on this batch, by autograd."""
    logp = (old_logp if logp_value is None else logp_value).clone().requires_grad_(True)
    loss, stats = objective(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, **kwargs)
    loss.backward()
    return loss.item(), logp.grad, stats


OBJECTIVES3 = {
    "GRPO": lambda **kw: token_grads(grpo_loss, adv_z, ref_logp=old_logp, **kw),
    "DAPO": lambda **kw: token_grads(dapo_loss, adv_z, **kw),
    "Dr. GRPO": lambda **kw: token_grads(dr_grpo_loss, adv_mean, max_len=L_MAX, **kw),
}
grads = {}
for name, run in OBJECTIVES3.items():
    loss, grad, stats = run()
    grads[name] = grad
    print(f"{name:9s} loss {loss:+.4f}   clip_frac {stats['clip_frac']:.2f}")

# %% [markdown]
# All three losses are 0 here: on-policy each token's clipped term is $-A_i$, and this batch's advantages
# cancel. A loss of 0 does not mean "nothing to learn" — the gradient below is far from 0.
#
# The gradient on the first token of each response, and summed over the response's tokens. Read it as
# "how hard one gradient step pushes this token's log-prob": negative = pushed up (a right answer),
# positive = pushed down (a wrong one).

# %%
print(" len  R " + "".join(f"{name + ' /token':>17s}{'total':>9s}" for name in grads))
for i in range(G):
    row = f"{lengths[i].item():4d} {rewards[i].item():2.0f} "
    for name, g in grads.items():
        row += f"{g[i, 0].item():+17.5f}{g[i].sum().item():+9.4f}"
    print(row)

# %% [markdown]
# ## Figure 1: per-token gradient against response length
#
# **Predict first (exercise 1).** Before running the next cell, write down your answer to exercise 1 below:
# in which of the three objectives is a token of a *long wrong* answer pushed down less than a token of a
# *short wrong* answer? Use only the aggregation table in "Key equations". Then run the cell and read the
# left panel: one line per objective and per outcome, the gradient on one token against its response's length.
# (The overall scale differs between objectives — Dr. GRPO's advantages are not divided by the std and its
# denominator is the constant $B\,L_{max}$ — and the learning rate absorbs that; compare the shapes of the
# curves. What the figure says is in the Solutions section at the end.)

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
colors = {"GRPO": "tab:blue", "DAPO": "tab:orange", "Dr. GRPO": "tab:green"}
for name, g in grads.items():
    for right, style in ((False, "-o"), (True, "--s")):
        rows = ((rewards > 0) == right).nonzero().squeeze(-1)
        rows = rows[lengths[rows].argsort()]        # left to right by length
        per_token = g[rows, 0]                      # the first token of each response
        total = g[rows].sum(-1)
        label = f"{name}, {'right' if right else 'wrong'}"
        axes[0].plot(lengths[rows], per_token, style, color=colors[name], label=label, ms=4)
        axes[1].plot(lengths[rows], total, style, color=colors[name], label=label, ms=4)
for ax, title in zip(axes, ("one token: d loss / d logp", "whole response: sum over its tokens")):
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel("response length |o_i| (tokens)")
    ax.set_title(title)
axes[0].set_ylabel("gradient (> 0: pushed down, < 0: pushed up)")
axes[1].legend(fontsize=7, ncol=2)
fig.suptitle("Lesson 4: on-policy gradient per token, same batch, three aggregations")
fig.tight_layout()
plt.savefig(OUT / "04_grad_vs_length.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# ## Clip range: 0.2 / 0.2 against 0.2 / 0.28
#
# After a few optimizer steps on the same rollout the ratios move away from 1. A right answer's token
# ($A>0$) whose ratio reached 1.25 is past GRPO's and Dr. GRPO's upper bound 1.2, so its gradient is
# zero; DAPO's "clip-higher" bound 1.28 still lets it grow. That extra room is for rare tokens, whose
# probability can only grow by a large *factor* — DAPO's remedy against entropy collapse.

# %%
drifted = old_logp + math.log(1.25) * mask                 # every ratio = 1.25
right_tokens = (rewards > 0)[:, None] & mask.bool()        # (B, T) tokens of right answers
drift_grads = {}
for name, objective, adv, kwargs in (("GRPO", grpo_loss, adv_z, {"beta": 0.0}),   # KL aside: the clip alone
                                     ("DAPO", dapo_loss, adv_z, {}),
                                     ("Dr. GRPO", dr_grpo_loss, adv_mean, {"max_len": L_MAX})):
    _, g, stats = token_grads(objective, adv, logp_value=drifted, **kwargs)
    drift_grads[name] = g
    print(f"{name:9s} ratio 1.25: right answers' tokens get "
          f"{'no gradient (clipped)' if g[right_tokens].abs().max() == 0 else 'a gradient'}; "
          f"clip/pos_high {stats['clip/pos_high']:.2f}")
assert drift_grads["GRPO"][right_tokens].abs().max() == 0 and drift_grads["Dr. GRPO"][right_tokens].abs().max() == 0, \
    "at ratio 1.25 GRPO and Dr. GRPO (eps_high 0.2) clip the right answers' tokens"
assert (drift_grads["DAPO"][right_tokens] < 0).all(), \
    "DAPO (eps_high 0.28) still pushes them up, by 1.25 x the on-policy gradient"

# %% [markdown]
# ## The reference KL and its estimators
#
# GRPO keeps the policy close to a frozen reference model by adding $\beta\,k(\ell^\theta,\ell^{ref})$ to
# every token's loss. The exact KL needs the whole next-token distribution; the estimators use only the
# sampled token's two log-probs. With $x=\ell^{ref}-\ell^\theta$ (the log of $\pi_{ref}/\pi_\theta$ at the
# sampled token):
#
# * $k_1=-x$: unbiased for $\mathrm{KL}(\pi_\theta\|\pi_{ref})$ when tokens come from $\pi_\theta$, but
#   many of its samples are negative and its variance is large.
# * $k_2=\tfrac12x^2$: never negative, low variance, biased (it matches the KL only to second order).
# * $k_3=e^{x}-x-1$: unbiased, never negative in exact arithmetic ($e^x\ge1+x$), and low variance when the
#   two policies are close — the one GRPO uses (these three are from John Schulman's note "Approximating KL
#   Divergence", 2020). In float32, though, the textbook $e^x-x-1$ near $x=0$ subtracts numbers that are nearly
#   equal, and round-off can leave a tiny negative value. `kl_penalty` computes it as `expm1(x) - x`, which avoids
#   the cancellation: the cell after Figure 2 counts the negatives of both on the same log-ratios.
#
# Figure 2 draws each value and its gradient as a function of the log-ratio.

# %%
x_grid = torch.linspace(-2.0, 2.0, 201, dtype=torch.float64)
logp_grid = (-x_grid).clone().requires_grad_(True)        # l_theta with l_ref = 0, so x = -l_theta
ref_grid = torch.zeros_like(x_grid)
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for kind, color in (("k1", "tab:red"), ("k2", "tab:purple"), ("k3", "tab:blue")):
    value = kl_penalty(logp_grid, ref_grid, kind)
    (grad,) = torch.autograd.grad(value.sum(), logp_grid)
    axes[0].plot(x_grid, value.detach(), color=color, label=kind)
    axes[1].plot(x_grid, grad, color=color, label=kind)
for ax, title in zip(axes, ("value", "gradient d k / d logp_theta")):
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_xlabel("x = logp_ref - logp_theta")
    ax.set_title(title)
    ax.legend()
fig.suptitle("Lesson 4: KL estimators against the log-ratio")
fig.tight_layout()
plt.savefig(OUT / "04_kl_estimators.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# On a small categorical distribution we can compare the estimators with the exact KL: draw tokens from
# $\pi_\theta$, average each estimator. Watch the standard deviation column: k1 and k3 both average to the
# KL, but k3 does so with a much smaller spread.

# %%
n_samples = 200_000 if FULL else 20_000
gen = torch.Generator().manual_seed(0)
log_pi = torch.log_softmax(torch.randn(6, generator=gen, dtype=torch.float64), 0)             # pi_theta
log_ref = torch.log_softmax(log_pi + 0.5 * torch.randn(6, generator=gen, dtype=torch.float64), 0)  # pi_ref
exact_kl = (log_pi.exp() * (log_pi - log_ref)).sum().item()
tokens = torch.multinomial(log_pi.exp(), n_samples, replacement=True, generator=gen)
print(f"exact KL(pi_theta || pi_ref) = {exact_kl:.4f}   ({n_samples} samples)")
mc = {}
for kind in ("k1", "k2", "k3"):
    k = kl_penalty(log_pi[tokens], log_ref[tokens], kind)
    mc[kind] = (k.mean().item(), k.std().item() / math.sqrt(n_samples))
    print(f"  {kind}: mean {k.mean().item():.4f}  std {k.std().item():.4f}  min {k.min().item():+.3f}")
for kind in ("k1", "k3"):                   # unbiased: within 5 standard errors of the exact KL
    assert abs(mc[kind][0] - exact_kl) < 5 * mc[kind][1], f"{kind} should average to the exact KL"

# Round-off: k3 in float32 at log-ratios of about 1e-3, where e^x - x - 1 is ~5e-7 and the subtraction cancels.
x32 = (torch.rand(100_000, generator=gen, dtype=torch.float64) * 2e-3 - 1e-3).float()       # |x| < 1e-3
k3_32 = kl_penalty(torch.zeros_like(x32), x32, "k3")                                          # x = ref - logp
naive_32 = torch.exp(x32) - x32 - 1.0                                                          # the textbook formula
negative, naive_negative = int((k3_32 < 0).sum()), int((naive_32 < 0).sum())
print(f"float32 k3 at |x| < 1e-3, {x32.numel()} log-ratios: e^x - x - 1 gives {naive_negative} negative values "
      f"(smallest {naive_32.min().item():.1e}); kl_penalty (expm1(x) - x) gives {negative}")
check("the textbook k3 goes negative in float32 near x = 0; kl_penalty never does",
      naive_negative > 0 and negative == 0, got=(naive_negative, negative))

# %% [markdown]
# **In the loss, what matters is the gradient.** GRPO does not only *report* the KL, it differentiates
# $k_3$ at each sampled token. Averaged over tokens drawn from $\pi_\theta$, the gradients are
# (a short calculation you can check below, exactly, by summing over the six outcomes):
#
# * k1: $\mathbb E[\nabla\ell^\theta]=0$ — k1 in the loss pushes nothing on average;
# * k2: $\mathbb E[(\ell^\theta-\ell^{ref})\nabla\ell^\theta]=\nabla\mathrm{KL}(\pi_\theta\|\pi_{ref})$;
# * k3: $\mathbb E[(1-\pi_{ref}/\pi_\theta)\nabla\ell^\theta]=\nabla\mathrm{KL}(\pi_{ref}\|\pi_\theta)$ —
#   the gradient of the KL in the *other* direction. Both pull $\pi_\theta$ towards $\pi_{ref}$, so it
#   works as a leash, but it is worth knowing which divergence you are descending.

# %%
logits = torch.randn(6, dtype=torch.float64, generator=gen).requires_grad_(True)
ref_lp = torch.log_softmax(torch.randn(6, dtype=torch.float64, generator=gen), 0)
lp = torch.log_softmax(logits, 0)
weight = lp.exp().detach()                                   # the sampling distribution, no gradient


def expected_grad(per_token):
    """sum_a pi_theta(a) * grad k(a): the exact average of the per-token gradient over samples from pi_theta."""
    return torch.autograd.grad((weight * per_token).sum(), logits, retain_graph=True)[0]


grad_kl_forward = torch.autograd.grad((lp.exp() * (lp - ref_lp)).sum(), logits, retain_graph=True)[0]
grad_kl_reverse = torch.autograd.grad((ref_lp.exp() * (ref_lp - lp)).sum(), logits, retain_graph=True)[0]
assert torch.allclose(expected_grad(kl_penalty(lp, ref_lp, "k1")), torch.zeros(6, dtype=torch.float64), atol=1e-12), \
    "k1's expected gradient is 0"
assert torch.allclose(expected_grad(kl_penalty(lp, ref_lp, "k2")), grad_kl_forward, atol=1e-12), \
    "k2's expected gradient is grad KL(theta || ref)"
assert torch.allclose(expected_grad(kl_penalty(lp, ref_lp, "k3")), grad_kl_reverse, atol=1e-12), \
    "k3's expected gradient is grad KL(ref || theta)"
print("expected gradients: k1 -> 0, k2 -> grad KL(theta||ref), k3 -> grad KL(ref||theta)   (checked exactly)")

# %% [markdown]
# ## Exercises
#
# **1. Predict, then check with autograd.** Without running anything: in which of the three objectives is
# a token of a *long wrong* answer pushed down less than a token of a *short wrong* answer (same prompt,
# same advantage)? Write your prediction as a dict `{"GRPO": bool, "DAPO": bool, "Dr. GRPO": bool}`;
# the check below measures it on this lesson's batch with autograd.

# %%
def my_prediction():
    """True for each objective that down-weights a token of a long wrong answer."""
    ### BEGIN SOLUTION
    # Only GRPO divides by |o_i|: a token of a 16-token wrong answer gets 1/8 of the push of a 2-token one.
    return {"GRPO": True, "DAPO": False, "Dr. GRPO": False}
    ### END SOLUTION


wrong = rewards == 0
short_wrong = wrong & (lengths == lengths[wrong].min())
long_wrong = wrong & (lengths == lengths[wrong].max())
measured = {name: bool(g[long_wrong, 0].abs().max() < g[short_wrong, 0].abs().min() - 1e-12)
            for name, g in grads.items()}
print("measured:", measured)
with exercise(1, my_prediction):
    prediction = my_prediction()
    check("the prediction is a dict over GRPO, DAPO, Dr. GRPO",
          isinstance(prediction, dict) and set(prediction) == set(measured), got=prediction)
    for name in measured:
        check(f"{name}: long wrong answer's token pushed less (prediction {prediction[name]})",
              prediction[name] == measured[name],
              hint="which aggregation divides by the response's own length |o_i|? (table in Key equations)")

# %% [markdown]
# **2. The per-token weight by hand.** Write the on-policy gradient $\partial\mathcal L/\partial\ell^\theta_{i,t}$
# of every real token (0 on padding) for an aggregation mode, from the table in "Key equations". No
# autograd inside: this is the formula. It is checked against autograd on this batch and on random ones.

# %%
def my_token_grad(advantages, mask, mode, max_len=None):
    """On-policy d loss / d logp (B, T) of the clipped surrogate aggregated with ``mode`` (no KL term)."""
    ### BEGIN SOLUTION
    lengths = mask.sum(-1)                                            # (B,)
    if mode == "token-mean":
        weight = torch.full_like(lengths, 1.0 / mask.sum().item())   # 1 / N
    elif mode == "seq-mean-token-mean":
        n_seqs = (lengths > 0).sum().item()                          # B'
        weight = 1.0 / (n_seqs * lengths.clamp(min=1))               # 1 / (B' |o_i|)
    elif mode == "seq-mean-token-sum-norm":
        weight = torch.full_like(lengths, 1.0 / (mask.shape[0] * max_len))   # 1 / (B L_max)
    else:
        raise ValueError(mode)
    return -(advantages * weight)[:, None] * mask
    ### END SOLUTION


def autograd_grad(objective, advantages, mask, old_logp, **kwargs):
    logp = old_logp.clone().requires_grad_(True)
    loss, _ = objective(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, **kwargs)
    loss.backward()
    return logp.grad


GRAD_HINTS = {"seq-mean-token-mean": "GRPO: each token weighs 1 / (B' |o_i|), times -A_i; B' counts the rows with "
                                     "at least one real token",
              "token-mean": "DAPO: each token weighs 1 / N (N real tokens in the batch), times -A_i",
              "seq-mean-token-sum-norm": "Dr. GRPO: each token weighs 1 / (B L_max), times -A_i"}
rng = torch.Generator().manual_seed(1)
with exercise(2, my_token_grad):
    cmp("GRPO per-token gradient", my_token_grad(adv_z, mask, "seq-mean-token-mean"),
        autograd_grad(grpo_loss, adv_z, mask, old_logp, beta=0.0), atol=1e-12, hint=GRAD_HINTS["seq-mean-token-mean"])
    cmp("DAPO per-token gradient", my_token_grad(adv_z, mask, "token-mean"), grads["DAPO"], atol=1e-12,
        hint=GRAD_HINTS["token-mean"])
    cmp("Dr. GRPO per-token gradient", my_token_grad(adv_mean, mask, "seq-mean-token-sum-norm", L_MAX),
        grads["Dr. GRPO"], atol=1e-12, hint=GRAD_HINTS["seq-mean-token-sum-norm"])
    for trial in range(20):                               # random batches: groups of 4, random lengths and rewards
        n_groups, width = int(torch.randint(1, 4, (1,), generator=rng)), int(torch.randint(1, 9, (1,), generator=rng))
        n = 4 * n_groups
        lens = torch.randint(0, width + 1, (n,), generator=rng)           # some rows may have no real token
        lens[0] = lens[0].clamp(min=1)
        m = (torch.arange(width)[None, :] < lens[:, None]).double()
        olp = -torch.rand(n, width, generator=rng, dtype=torch.float64) * 3 * m
        R = torch.randint(0, 2, (n,), generator=rng).double()
        a_z, a_m = group_advantages(R, group_size=4), group_advantages(R, group_size=4, scale="none")
        cmp(f"GRPO gradient, random batch {trial}", my_token_grad(a_z, m, "seq-mean-token-mean"),
            autograd_grad(grpo_loss, a_z, m, olp, beta=0.0), atol=1e-12, hint=GRAD_HINTS["seq-mean-token-mean"],
            quiet=True)
        cmp(f"DAPO gradient, random batch {trial}", my_token_grad(a_z, m, "token-mean"),
            autograd_grad(dapo_loss, a_z, m, olp), atol=1e-12, hint=GRAD_HINTS["token-mean"], quiet=True)
        cmp(f"Dr. GRPO gradient, random batch {trial}", my_token_grad(a_m, m, "seq-mean-token-sum-norm", width + 2),
            autograd_grad(dr_grpo_loss, a_m, m, olp, max_len=width + 2), atol=1e-12,
            hint=GRAD_HINTS["seq-mean-token-sum-norm"], quiet=True)
print("exercise 2: the per-token weights match autograd on 1 + 20 batches")

# %% [markdown]
# **3. k3 by hand.** Write $k_3$ and its gradient with respect to $\ell^\theta$ from the formula
# (no autograd). Checked against `kl_penalty` and autograd on a fixed point worked out by hand and on
# random inputs (in float64, where it is never negative), and then used to predict GRPO's KL gradient exactly.

# %%
def my_k3(logp, ref_logp):
    """(value, d value / d logp) of k3 = e^x - x - 1 with x = ref_logp - logp, elementwise."""
    ### BEGIN SOLUTION
    x = ref_logp - logp
    return torch.exp(x) - x - 1.0, 1.0 - torch.exp(x)
    ### END SOLUTION


lp_rand = (torch.randn(1000, generator=rng, dtype=torch.float64) * 2).requires_grad_(True)
ref_rand = torch.randn(1000, generator=rng, dtype=torch.float64) * 2
(auto_slope,) = torch.autograd.grad(kl_penalty(lp_rand, ref_rand, "k3").sum(), lp_rand)
sign_hint = "x = ref_logp - logp (reference minus current); the slope of e^x - x - 1 in logp is 1 - e^x"
with exercise(3, my_k3):
    value, slope = my_k3(torch.tensor([0.0], dtype=torch.float64), torch.tensor([math.log(2.0)], dtype=torch.float64))
    # x = ln 2: k3 = 2 - ln 2 - 1 and its slope 1 - 2 = -1
    cmp("k3 at x = ln 2", value, torch.tensor([1.0 - math.log(2.0)], dtype=torch.float64), atol=1e-12, hint=sign_hint)
    cmp("dk3/dlogp at x = ln 2", slope, torch.tensor([-1.0], dtype=torch.float64), atol=1e-12, hint=sign_hint)
    mine_value, mine_slope = my_k3(lp_rand.detach(), ref_rand)
    cmp("k3 on 1000 random points (vs kl_penalty)", mine_value, kl_penalty(lp_rand.detach(), ref_rand, "k3"),
        atol=1e-12, hint=sign_hint)
    cmp("dk3/dlogp on 1000 random points (vs autograd)", mine_slope, auto_slope, atol=1e-12, hint=sign_hint)
    check("k3 >= 0 in float64 on 1000 random points", (mine_value >= 0).all())
    # in GRPO the KL term's gradient on a token is beta * (1 - e^x) times GRPO's weight 1 / (B' |o_i|):
    shifted = (old_logp + 0.3 * mask).clone().requires_grad_(True)      # the policy drifted from the reference
    loss_kl_only, _ = grpo_loss(logp=shifted, old_logp=shifted.detach(),
                                advantages=torch.zeros(B, dtype=torch.float64), mask=mask, ref_logp=old_logp,
                                beta=0.04)                              # A = 0: only the KL term is left
    loss_kl_only.backward()
    expected = 0.04 * my_k3(shifted.detach(), old_logp)[1] * mask / (B * lengths[:, None].double())
    cmp("GRPO's KL gradient from your slope", shifted.grad, expected, atol=1e-12, hint=sign_hint)
print("exercise 3: k3 and its gradient match kl_penalty and autograd; GRPO's KL gradient is beta (1 - e^x) / (B'|o_i|)")

# %% [markdown]
# ## Why these papers
#
# * **GRPO** (DeepSeekMath, arXiv 2402.03300) dropped PPO's learned value function: the baseline is the
#   mean reward of the $G$ answers to the same prompt (the answer itself included), scaled by their spread. That made RL on
#   verifiable rewards cheap enough to be everywhere, and its choices — per-response averaging, a KL
#   term in the loss — became the defaults everyone else measures against.
# * **DAPO** (arXiv 2503.14476) reported what went wrong when scaling GRPO to long reasoning: entropy
#   collapse (answered by clip-higher), groups with no signal (dynamic sampling, a data-side technique,
#   see `minitepo.advantages.informative_groups`), long responses whose bad tokens are under-punished
#   (token-level mean), and truncated responses (overlong shaping). It also drops the KL term.
# * **Dr. GRPO** (arXiv 2503.20783) showed that GRPO's two normalisations bias the optimisation: dividing
#   by $|o_i|$ makes long wrong answers cheap (Figure 1), and dividing by the group's std weights prompts
#   by how unanimous their answers are. It removes both, with a constant denominator.
#
# All three share the token ratio. Lesson 5 replaces it by one ratio per response (GSPO), and lesson 6
# combines that sequence ratio with DAPO's token-level mean (TEPO).

# %% [markdown]
# ## Solutions
#
# **Figure 1 and exercise 1.** DAPO and Dr. GRPO give every token the same weight whatever its response's
# length, so a long response gets a total push proportional to its length. GRPO divides by $|o_i|$: each
# *response* gets the same total push, so each token of a long response is pushed $|o_i|$ times less. For a wrong
# answer that means a long wrong answer is punished less per token than a short one — the "length bias"
# Dr. GRPO points out. So the prediction is `{"GRPO": True, "DAPO": False, "Dr. GRPO": False}`.
