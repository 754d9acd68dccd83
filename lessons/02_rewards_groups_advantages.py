# %% [markdown]
# # Lesson 2 — Rewards, groups and advantages
#
# A verifier gives each sampled answer a number, the *reward*. A policy-gradient step needs to know
# which answers to make more likely and which less, and by how much: the *advantage*. The GRPO family
# gets it without a value network, by comparing each answer with the mean of all the answers to the same prompt.
#
# ## What you will learn
#
# * the **group z-score** advantage of GRPO, and the **mean-only** advantage of Dr. GRPO;
# * why a group whose rewards are **all equal** carries **no learning signal** — exactly zero gradient —
#   and how often that happens (DAPO's *dynamic sampling* exists because of it);
# * DAPO's **overlong reward shaping**, which turns the hard "truncated = 0" rule into a ramp;
# * how to see, on a real rollout, which responses actually push the model.
#
# ## Key equations
#
# `spec/ALGORITHMS.md` §2 (advantages) and §4 (DAPO). For the $G$ responses of one prompt, with
# outcome rewards $R_1..R_G$:
#
# $$A_i=\frac{R_i-\mathrm{mean}_g(R)}{\mathrm{std}_g(R)+\varepsilon}\quad\text{(GRPO; Bessel std, }\varepsilon=10^{-6})
# \qquad\qquad A_i=R_i-\mathrm{mean}_g(R)\quad\text{(Dr. GRPO)}$$
#
# and $A_i=0$ exactly when all $R_i$ are equal. Implemented by `group_advantages` in
# `minitepo/advantages.py` (`scale="std"` or `scale="none"`). On-policy, every objective of the family
# has the gradient (REINFORCE with the group mean as baseline, derived in lesson 1b)
#
# $$\nabla_\theta\mathcal L=-\frac1N\sum_i A_i\sum_t m_{i,t}\nabla_\theta\ell^\theta_{i,t}
# \qquad\text{(token-mean; other aggregations change only the weights, lesson 3)}$$
#
# so a response with $A_i=0$ contributes nothing. With binary rewards and per-prompt accuracy $p$, a
# group of $G$ is all-equal with probability $p^G+(1-p)^G$.
#
# DAPO's overlong shaping (eq. 13 of arXiv 2503.14476; `minitepo.advantages.overlong_penalty`), added to
# the reward, with $L_{max}$ the length limit and $L_c$ the cache length:
#
# $$R_{len}(y)=\begin{cases}0 & \lvert y\rvert\le L_{max}-L_c\\ \dfrac{(L_{max}-L_c)-\lvert y\rvert}{L_c} &
# L_{max}-L_c<\lvert y\rvert\le L_{max}\\ -1 & \lvert y\rvert>L_{max}\end{cases}$$
#
# ## Pseudocode
#
# ```
# rollout = collect_rollout(model, prompts, G)         # rewards R (B,), rows grouped by prompt
# for each group g:
#     if all R_i in g are equal:  A_i = 0              # nothing to compare: no signal
#     else:                       A_i = (R_i - mean_g) / (std_g + eps)     # or R_i - mean_g (Dr. GRPO)
# DAPO: drop the all-equal groups and sample more prompts until the batch is full (dynamic sampling)
# DAPO: R_i += R_len(|o_i|) before the advantages (overlong shaping)
# ```

# %%
import math
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from minitepo import (GPT, ModelConfig, SupervisedConfig, Tokenizer, collect_rollout, dapo_loss, group_advantages,
                      make_task, score_rollout, train_supervised)
from minitepo.advantages import informative_groups, overlong_penalty

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
# ## A model that is sometimes right
#
# A fresh model earns reward 0 on everything (lesson 1), so every group would be all-equal. A few
# seconds of supervised training on one-digit addition gives a model whose greedy answer to a one-digit
# sum is right some of the time (its held-out accuracy is printed below; it moves a little with the machine's
# round-off, and rises with the longer warm start of `MINITEPO_LESSONS=full`) and whose answers sampled at
# temperature 1 are right less often (the mean reward printed below, checked); it has never seen a two-digit sum.

# %%
tokenizer = Tokenizer()
task = make_task("add", levels=(1,))
torch.manual_seed(0)                                 # the same initial weights each time this cell runs
model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=2, n_head=2, n_embd=64))
sft_steps = 400 if FULL else 200
warm_start = train_supervised(model, tokenizer, task, SupervisedConfig(steps=sft_steps, batch_size=64, lr=3e-3,
                                                                       warmup=10),
                              eval_every=sft_steps)                         # lesson 1's loop (minitepo/sft.py)
print(f"after {sft_steps} supervised steps: held-out greedy accuracy on one-digit sums "
      f"{warm_start[-1]['eval/greedy_acc/all']:.2f}")

# Mostly one-digit prompts, which the model sometimes gets right, and a few two-digit ones, which it has never
# seen. The levels are chosen explicitly: `mixed`'s own training draws would be two-digit four times in five
# (`add` weighs its widest level 4x).
mixed = make_task("add", levels=(1, 2))
n1, n2 = (24, 8) if FULL else (8, 4)
examples = ([mixed.sample(random.Random(200 + i), level=1) for i in range(n1)]
            + [mixed.sample(random.Random(300 + i), level=2) for i in range(n2)])
P, G = len(examples), 8
rollout = collect_rollout(model, tokenizer, mixed, examples, group_size=G, temperature=1.0,
                          generator=torch.Generator().manual_seed(0))
R = rollout.rewards.view(P, G)                                                  # (P, G)
print(f"{P} prompts x {G} responses, mean reward {R.mean():.2f}")
for g in range(P):
    print(f"{examples[g].prompt:>8}  rewards {R[g].int().tolist()}")
check("sampled at temperature 1, the model is right less often than its greedy answer on held-out sums",
      float(R[:n1].mean()) < warm_start[-1]["eval/greedy_acc/all"],
      got=(round(float(R[:n1].mean()), 3), warm_start[-1]["eval/greedy_acc/all"]))

# %% [markdown]
# ## Group advantages: z-score and mean-only
#
# Within each row of the table above, a right answer gets a positive advantage and a wrong one a
# negative advantage. The z-score divides by the group's standard deviation, so a lone success in a
# group of failures gets a large push; the mean-only version keeps the reward's own scale.

# %%
A_std = group_advantages(rollout.rewards, group_size=G)                         # (B,)
A_mean = group_advantages(rollout.rewards, group_size=G, scale="none")          # (B,)
for g in list(range(3)) + [P - 1]:
    print(f"{examples[g].prompt:>8}  z-score {[round(a, 2) for a in A_std.view(P, G)[g].tolist()]}")
    print(f"{'':8}  mean-only {[round(a, 2) for a in A_mean.view(P, G)[g].tolist()]}")

# %% [markdown]
# ## All-equal groups carry no signal
#
# A group in which every answer is right (or every answer wrong) has nothing to compare: all its
# advantages are exactly 0. `informative_groups` is DAPO's filter for the others. Below, one DAPO
# loss on this rollout (on-policy, so $\ell^\theta=\ell^{old}$): the gradient reaching each response's
# log-probs is exactly zero for every response of an all-equal group. **What to watch:** the fraction
# of informative groups. It is the fraction of the batch that does any work; a task that is too easy or
# too hard for the model makes it small. (With `MINITEPO_LESSONS=full` the warm start is twice as long and
# more sampled one-digit answers are right; the cell prints how many groups are then *all right* — they carry
# no signal either.)

# %%
keep = informative_groups(rollout.rewards, group_size=G)                        # (B,) bool
logp, _ = score_rollout(model, rollout)                                         # (B, T), with gradient
logp.retain_grad()
loss, stats = dapo_loss(logp=logp, old_logp=rollout.old_logp, advantages=A_std, mask=rollout.mask)
loss.backward()
row_grad = logp.grad.abs().sum(-1)                                              # (B,)
print(f"informative groups: {int(keep.view(P, G)[:, 0].sum())} of {P}; all right: {int((R == 1).all(1).sum())}, "
      f"all wrong: {int((R == 0).all(1).sum())}")
print(f"gradient on rows of all-equal groups: max {row_grad[~keep].max() if (~keep).any() else 0.0:.1e}")
print(f"gradient on rows of informative groups: mean {row_grad[keep].mean() if keep.any() else 0.0:.2e}")
assert bool((row_grad[~keep] == 0).all()), "an all-equal group's rows must get exactly zero gradient"

# %% [markdown]
# ## DAPO's overlong shaping
#
# Lesson 1's rule gives a truncated answer reward 0, the same as a wrong one. DAPO instead subtracts a
# penalty that ramps from 0 to 1 over the last $L_c$ tokens before the limit: long answers lose a
# little, truncated ones lose a whole point. `collect_rollout(..., overlong_cache=L_c)` adds it to the
# rewards. A fresh model, which rambles until it is cut off, shows it best. Note what this does to the
# groups: two wrong answers of different lengths now have different rewards, so an all-wrong group is
# no longer all-equal — it teaches "be shorter".

# %%
torch.manual_seed(1)                                 # the same fresh weights each time this cell runs
fresh = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=2, n_head=2, n_embd=64))
L_max, L_c = task.max_new_tokens, 2
shaped = collect_rollout(fresh, tokenizer, task, examples[:2], group_size=G, temperature=1.0,
                         overlong_cache=L_c, generator=torch.Generator().manual_seed(0))
print(f"L_max = {L_max}, L_c = {L_c}")
print("lengths:       ", shaped.lengths.tolist())
print("shaped rewards:", [round(r, 2) for r in shaped.rewards.tolist()])
count = lambda r: int(informative_groups(r, group_size=G).view(-1, G)[:, 0].sum())   # noqa: E731
print(f"informative groups: {count(shaped.correct.float())} of 2 on correctness alone, "
      f"{count(shaped.rewards)} of 2 with shaping")

# %% [markdown]
# ## Figure: how big is the push, and how often is there one?
#
# Left: in a group of 8 with $k$ right answers, the advantage of a right and of a wrong answer. The
# z-score's push on a lone success ($k=1$) is almost three times the mean-only value; the two differ least in a
# half-right group and most at the extremes, where the std is small (the cell prints all three). Middle: the
# probability that a group is informative, $1-p^G-(1-p)^G$, against per-prompt accuracy $p$. The dot (this rollout's
# mean reward and informative fraction) falls below the $G=8$ curve (the cell prints both) because its prompts are
# not equally hard: the two-digit ones are all wrong here. Within a batch, what matters is each prompt's own $p$.
# Right: DAPO's overlong penalty against response length.

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
k = torch.arange(1, G)                                                          # all-equal k = 0, G give 0
rows = [group_advantages(torch.tensor([1.0] * int(j) + [0.0] * (G - int(j))), group_size=G) for j in k]
rows_mean = [group_advantages(torch.tensor([1.0] * int(j) + [0.0] * (G - int(j))), group_size=G, scale="none")
             for j in k]
ax = axes[0]
ax.plot(k, [r[0] for r in rows], "o-", color="tab:green", label="right, z-score")
ax.plot(k, [r[-1] for r in rows], "o-", color="tab:red", label="wrong, z-score")
ax.plot(k, [r[0] for r in rows_mean], "s--", color="tab:green", alpha=0.6, label="right, mean-only")
ax.plot(k, [r[-1] for r in rows_mean], "s--", color="tab:red", alpha=0.6, label="wrong, mean-only")
ax.axhline(0, color="grey", lw=0.8)
ax.set(xlabel=f"right answers k in a group of G = {G}", ylabel="advantage A", title="advantage per response")
ax.legend(fontsize=8)

ax = axes[1]
p = torch.linspace(0, 1, 201)
for g_size in (2, 4, 8, 16):
    ax.plot(p, 1 - p ** g_size - (1 - p) ** g_size, label=f"G = {g_size}")
ax.plot([float(R.mean())], [float(keep.float().mean())], "ko", label="this rollout")
ax.set(xlabel="per-prompt accuracy p", ylabel="P(group is informative)", title="groups with a signal")
ax.legend(fontsize=8)

ax = axes[2]
lengths = torch.arange(0, 13)
for cache in (2, 4):
    ax.plot(lengths, overlong_penalty(lengths, 10, cache), "o-", label=f"L_max = 10, L_c = {cache}")
ax.set(xlabel="response length |y|", ylabel="R_len", title="DAPO overlong shaping")
ax.legend(fontsize=8)
fig.tight_layout()
plt.savefig(OUT / "02_advantages.png", dpi=120)
plt.show()
plt.close()
z_right = [float(r[0]) for r in rows]                                           # k = 1 .. G-1
mean_right = [float(r[0]) for r in rows_mean]
ratios = [z / m for z, m in zip(z_right, mean_right)]
print(f"right answer's advantage, z-score against mean-only: k = 1 {z_right[0]:.2f} vs {mean_right[0]:.3f} "
      f"(x{ratios[0]:.2f}); k = {G // 2} {z_right[G // 2 - 1]:.2f} vs {mean_right[G // 2 - 1]:.2f} "
      f"(x{ratios[G // 2 - 1]:.2f}); k = {G - 1} x{ratios[-1]:.2f}")
check("the z-score's push is almost three times the mean-only one at k = 1, closest at k = G/2",
      2.5 < ratios[0] < 3 and min(ratios) == ratios[G // 2 - 1], got=[round(x, 2) for x in ratios])
p_dot = float(R.mean())
curve_at_dot = 1 - p_dot ** G - (1 - p_dot) ** G
print(f"this rollout: mean reward {p_dot:.2f}, informative {float(keep.float().mean()):.2f}; the G = {G} curve at "
      f"p = {p_dot:.2f}: {curve_at_dot:.2f}")
check("the dot falls below the G = 8 curve", float(keep.float().mean()) < curve_at_dot)
check("the two-digit prompts' groups are all wrong", bool((R[n1:] == 0).all()), got=R[n1:].sum().item())

# %% [markdown]
# ## Exercises
#
# **1. Group advantages by hand.** Write both advantages for rewards laid out as consecutive groups of
# `G`, without `group_advantages`. Use the Bessel (unbiased) standard deviation and give an all-equal
# group exactly 0. By hand first: what are both advantages of rewards $[1,0,0,1]$ in one group? (Answer in
# the Solutions section at the end.)

# %%
def my_group_advantages(rewards, G, scale="std", eps=1e-6):
    """rewards (B,) in consecutive groups of G -> advantages (B,); scale "std" (GRPO) or "none" (Dr. GRPO)."""
    ### BEGIN SOLUTION
    R = rewards.double().view(-1, G)                                              # (B/G, G)
    A = R - R.mean(dim=1, keepdim=True)
    if scale == "std":
        A = A / (R.std(dim=1, keepdim=True) + eps)                                # torch's std is Bessel's
    all_equal = (R == R[:, :1]).all(dim=1, keepdim=True)
    return torch.where(all_equal, torch.zeros_like(A), A).view(-1).to(rewards.dtype)
    ### END SOLUTION


four = torch.tensor([1.0, 0.0, 0.0, 1.0])
std_hint = "z-score: divide by the Bessel (unbiased, n - 1) std of the group plus eps; torch's .std() is Bessel's"
with exercise(1, my_group_advantages):
    cmp("z-score advantages of [1, 0, 0, 1]", my_group_advantages(four, 4),
        torch.tensor([1, -1, -1, 1]) * 0.5 / math.sqrt(1 / 3), atol=1e-5, hint=std_hint)
    cmp("mean-only advantages of [1, 0, 0, 1]", my_group_advantages(four, 4, scale="none"),
        torch.tensor([0.5, -0.5, -0.5, 0.5]), hint="mean-only (Dr. GRPO): R_i - mean of the group, no division")
    cmp("all-equal group", my_group_advantages(torch.tensor([1.0, 1.0, 0.0, 0.0]), 2), torch.zeros(4),
        hint="a group whose rewards are all equal gets exactly 0 (never 0 / (0 + eps) round-off)")
    gen = torch.Generator().manual_seed(0)
    for trial in range(20):
        G_r = int(torch.randint(2, 9, (1,), generator=gen))
        R_r = torch.randint(0, 3, (G_r * 5,), generator=gen).float() / 2        # rewards in {0, 0.5, 1}
        for scale in ("std", "none"):
            cmp(f"advantages, random trial {trial} ({scale}, G = {G_r})", my_group_advantages(R_r, G_r, scale),
                group_advantages(R_r, group_size=G_r, scale=scale), atol=1e-5,
                hint="groups are consecutive runs of G rewards: view(-1, G), then work along dim 1", quiet=True)
    print("ok   advantages on 20 random batches, both scales, match group_advantages")
    cmp("advantages of the rollout", my_group_advantages(rollout.rewards, G), A_std, atol=1e-5, hint=std_hint)

# %% [markdown]
# **2. An all-equal group gives zero gradient.** Two groups of 4: the first all wrong, the second
# $[1,0,0,1]$. Write `policy_grad`, which takes log-probs `logp` (with `requires_grad`) of ragged
# responses, computes the group advantages (z-score), one on-policy `dapo_loss`, and returns
# $\partial\mathcal L/\partial\ell$. Check that the first group's rows get exactly 0, and that on the
# second group the gradient is the formula above, $-A_i m_{i,t}/N$.

# %%
def policy_grad(logp, mask, rewards, G):
    """dLoss/dlogp (B, T) of one on-policy DAPO step with group z-score advantages."""
    ### BEGIN SOLUTION
    advantages = group_advantages(rewards, group_size=G)
    loss, _ = dapo_loss(logp=logp, old_logp=logp.detach(), advantages=advantages, mask=mask)
    (grad,) = torch.autograd.grad(loss, logp)
    return grad
    ### END SOLUTION


rewards2 = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0])
mask2 = (torch.arange(5)[None, :] < torch.tensor([3, 5, 1, 2, 4, 1, 5, 2])[:, None]).float()   # (8, 5) ragged
logp2 = (-torch.rand(8, 5, generator=gen)).requires_grad_()
with exercise(2, policy_grad):
    grad2 = policy_grad(logp2, mask2, rewards2, 4)
    cmp("gradient on the all-wrong group", grad2[:4], torch.zeros(4, 5),
        hint="an all-equal group has A = 0, so each of its tokens gets -A m / N = 0")
    expected = -group_advantages(rewards2, group_size=4)[:, None] * mask2 / mask2.sum()
    cmp("gradient dL/dlogp (all rows)", grad2, expected, atol=1e-6,
        hint="on-policy: old_logp = logp.detach(); dapo_loss averages over all N real tokens")

# %% [markdown]
# **3. Overlong shaping by hand.** Implement $R_{len}$ for a batch of lengths and compare with
# `overlong_penalty`, at the three regimes' edges.

# %%
def my_overlong(lengths, L_max, L_c):
    """(B,) lengths -> (B,) DAPO overlong penalty R_len."""
    ### BEGIN SOLUTION
    L = lengths.float()
    ramp = ((L_max - L_c) - L) / L_c
    return torch.where(L <= L_max - L_c, torch.zeros_like(L), torch.where(L <= L_max, ramp, -torch.ones_like(L)))
    ### END SOLUTION


lens = torch.arange(0, 25)
with exercise(3, my_overlong):
    cmp("R_len at the edges 16, 18, 20, 21 (L_max 20, L_c 4)", my_overlong(torch.tensor([16, 18, 20, 21]), 20, 4),
        torch.tensor([0.0, -0.5, -1.0, -1.0]), hint="0 up to L_max - L_c, a ramp ((L_max - L_c) - L) / L_c up to "
        "L_max (inclusive), -1 beyond")
    cmp("R_len for lengths 0 .. 24", my_overlong(lens, 20, 4), overlong_penalty(lens, 20, 4))

# %% [markdown]
# ## Why these papers
#
# GRPO (DeepSeekMath, arXiv 2402.03300) replaced PPO's learned value function with the group
# baseline: the mean reward of the $G$ answers to the same prompt stands in for how good the prompt's
# "average" answer is, at the price of sampling several answers per prompt instead of training a critic. Dr. GRPO (arXiv 2503.20783) argued that dividing by the
# group's std over-weights prompts that are nearly always right or nearly always wrong (the left
# panel's large pushes at $k=1$ and $k=7$), and removed it. DAPO (arXiv 2503.14476) took the zero-signal
# groups seriously — with a strong model, most groups are all right — and filled the batch with
# informative ones (*dynamic sampling*), and replaced "truncated = wrong" with a length ramp. Every
# later objective in these lessons (GSPO, TEPO, GTPO) starts from these group advantages; GTPO
# reshapes them token by token (lesson 7).

# %% [markdown]
# ## Solutions
#
# **Exercise 1, by hand.** Rewards $[1,0,0,1]$: mean 0.5, Bessel std $\sqrt{(4\cdot0.25)/3}=\sqrt{1/3}$, so the
# z-scores are $\pm0.5/\sqrt{1/3}=\pm0.866$ and the mean-only advantages $\pm0.5$.
