# %% [markdown]
# # Lesson 1b — The policy gradient: REINFORCE, a baseline, and the ratio
#
# Lesson 1 built a rollout. Lesson 2 turns its rewards into advantages and states the gradient every objective
# starts from, $\nabla\mathcal L=-\frac1N\sum_iA_i\sum_t\nabla\ell_{i,t}$. This lesson derives that gradient. Why is
# the gradient of an *expected reward* a reward times the gradient of a *log-probability*? Why does a baseline
# change nothing on average, and when does it lower the noise? Why does a ratio $\pi_\theta/\pi_{old}$ appear as soon
# as one rollout serves more than one optimizer step?
#
# ## What you will learn
#
# * the **log-derivative trick**: $\nabla_\theta\,\mathbb E_{o\sim\pi_\theta}[R(o)]=\mathbb E_{o\sim\pi_\theta}[R(o)\,\nabla_\theta\log\pi_\theta(o)]$,
#   and for a response $\log\pi_\theta(o)=\sum_t\ell_{i,t}$ — REINFORCE;
# * the **baseline**: $\mathbb E[\nabla\log\pi_\theta(o)]=0$, so $R-b$ has the same expected gradient as $R$. The right
#   $b$ lowers the noise. The mean reward (GRPO's group mean) is not always the right $b$: on a real rollout it lowers
#   the noise on the first answer token's logits and raises it over all the model's parameters. You will measure both;
# * **importance sampling**: after the first optimizer step the rollout comes from $\pi_{old}\neq\pi_\theta$, and
#   $\mathbb E_{\pi_\theta}[f]=\mathbb E_{\pi_{old}}[\tfrac{\pi_\theta}{\pi_{old}}f]$. The ratio $r=e^{\ell^\theta-\ell^{old}}$ of every
#   later lesson is this *importance weight*. At $\theta=\theta_{old}$ the surrogate $-rA$ has exactly REINFORCE's
#   gradient.
#
# ## Key equations
#
# For a distribution $\pi_\theta$ over outcomes $o$ and a reward $R(o)$:
#
# $$\nabla_\theta\,\mathbb E_{\pi_\theta}[R]=\sum_oR(o)\,\nabla\pi_\theta(o)=\sum_o\pi_\theta(o)\,R(o)\,\nabla\log\pi_\theta(o)
# =\mathbb E_{\pi_\theta}\big[R\,\nabla\log\pi_\theta(o)\big]\qquad(\nabla\pi=\pi\nabla\log\pi)$$
#
# $$\mathbb E_{\pi_\theta}[\nabla\log\pi_\theta(o)]=\sum_o\nabla\pi_\theta(o)=\nabla\sum_o\pi_\theta(o)=\nabla1=0
# \;\Rightarrow\;\mathbb E\big[(R-b)\nabla\log\pi_\theta\big]=\mathbb E\big[R\,\nabla\log\pi_\theta\big]$$
#
# For a softmax over logits $z$, $\nabla_z\log\pi_a=e_a-\pi$ (one-hot minus the probabilities). For a response,
# $\log\pi_\theta(o_i)=\sum_tm_{i,t}\ell_{i,t}$, so one sample's estimate is $(R_i-b)\sum_t\nabla\ell_{i,t}$. With samples from
# $\pi_{old}$ instead:
#
# $$\mathbb E_{\pi_\theta}[f]=\sum_o\pi_{old}(o)\frac{\pi_\theta(o)}{\pi_{old}(o)}f(o)=\mathbb E_{\pi_{old}}[r\,f],\qquad
# \nabla_\theta\big(r\,A\big)=r\,A\,\nabla\log\pi_\theta\;\overset{\theta=\theta_{old}}{=}\;A\,\nabla\log\pi_\theta$$
#
# Code: the losses in `minitepo/losses/` compute $-\mathrm{agg}(r A)$ with the ratio clipped (lesson 3).
# `group_advantages` (`minitepo/advantages.py`) computes $A=R-b$ with the group mean as $b$ (lesson 2).
#
# References: the notation is that of `spec/ALGORITHMS.md` §1.
#
# ## Pseudocode
#
# ```
# rollout = sample G responses per prompt from pi_old        # lesson 1
# A_i     = R_i - mean of R over i's group                   # the baseline (lesson 2 also divides by the std)
# for step in 1..K:                                          # K optimizer steps on ONE rollout
#     r_it = exp(logp_theta_it - logp_old_it)                # importance weight; = 1 on the first step
#     loss = -mean over tokens of r_it * A_i                 # gradient = REINFORCE with baseline at step 1
#     loss.backward(); optimizer.step()                      # theta moves: r != 1 from step 2 on
# ```

# %%
import copy
import math
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from minitepo import (GPT, ModelConfig, SupervisedConfig, Tokenizer, collect_rollout, group_advantages, make_task,
                      score_rollout, train_supervised)

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
# ## The log-derivative trick on a distribution we can sum exactly
#
# A policy over six outcomes (think: six possible answers to one prompt), a softmax of logits $z$, with a reward
# for each. We can sum over all six, so autograd gives the exact gradient of the expected reward. REINFORCE
# estimates it from samples alone, and never differentiates the reward.

# %%
gen = torch.Generator().manual_seed(0)
z = torch.randn(6, generator=gen, dtype=torch.float64)                     # logits of pi_theta
R6 = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 0.5], dtype=torch.float64)     # reward of each outcome
zz = z.clone().requires_grad_(True)
(exact_grad,) = torch.autograd.grad((torch.softmax(zz, 0) * R6).sum(), zz)  # grad of E[R], exactly
pi = torch.softmax(z, 0)
n_samples = 200_000 if FULL else 20_000
actions = torch.multinomial(pi, n_samples, replacement=True, generator=gen)  # (n,)
score = torch.nn.functional.one_hot(actions, 6).double() - pi               # grad_z log pi(a) = e_a - pi, (n, 6)
reinforce = (R6[actions][:, None] * score).mean(0)                           # (6,)
print("exact gradient of E[R]:", [round(x, 4) for x in exact_grad.tolist()])
print(f"REINFORCE, {n_samples} samples:", [round(x, 4) for x in reinforce.tolist()])
stderr = (R6[actions][:, None] * score).std(0) / math.sqrt(n_samples)
assert bool(((reinforce - exact_grad).abs() < 5 * stderr + 1e-12).all()), "REINFORCE is unbiased: within 5 s.e."

# %% [markdown]
# ## The baseline, and why it lowers the variance
#
# The same samples with $R-b$ instead of $R$. The average does not move ($\mathbb E[e_a-\pi]=0$). Each sample's term
# shrinks when $b$ is near the typical reward. We try $b=0$, $b=\mathbb E[R]$, $b=1$, and $b^*$, the best constant
# (derived in the next cell). $b^*$ is not $\mathbb E[R]$: it is lower here, and its variance is the smallest.

# %%
score_sq = ((torch.eye(6, dtype=torch.float64) - pi) ** 2).sum(1)          # (6,) ||e_a - pi||^2 for each outcome
ER = float((pi * R6).sum())
b_star6 = float((pi * R6 * score_sq).sum() / (pi * score_sq).sum())           # exact, summed over the 6 outcomes
variance6 = {}
for name, b in (("0", 0.0), ("E[R]", ER), ("1", 1.0), ("b*", b_star6)):
    terms = (R6[actions] - b)[:, None] * score                              # (n, 6) one estimate per sample
    variance6[name] = terms.var(0).sum().item()
    print(f"b = {name:4s} = {b:.3f}: mean {[round(x, 4) for x in terms.mean(0).tolist()]}   "
          f"per-sample variance (summed over the 6 logits) {variance6[name]:.4f}")
assert b_star6 < ER - 0.05, "the text says b* is lower than E[R] on this distribution"
assert min(variance6, key=variance6.get) == "b*", "b* gives the smallest variance of the four"

# %% [markdown]
# Why does it help, and when? All estimates have the same mean. So the one with the smallest *mean squared size*
# $\mathbb E\lVert(R-b)\,g\rVert^2$ (with $g=\nabla\log\pi$) has the smallest variance. Setting its derivative in $b$
# to 0 gives the best constant
#
# $$b^*=\frac{\mathbb E\big[R\,\lVert g\rVert^2\big]}{\mathbb E\big[\lVert g\rVert^2\big]},$$
#
# a reward average weighted by the size of each sample's score. When $\lVert g\rVert$ hardly depends on the outcome,
# $b^*\approx\mathbb E[R]$: the mean reward, GRPO's group mean. When it does, $b^*$ moves towards the rewards of the
# outcomes with large scores. Above, the unlikely outcomes have the large scores and lower rewards, so $b^*<\mathbb E[R]$.
# On a real rollout the effect is much stronger.
#
# Now a real rollout of the tiny GPT. A few seconds of supervised training make it right sometimes (lesson 1).
# Then it gives 8 answers to each of 12 one-digit sums. We look at the per-sample estimate $(R_i-b_i)\,g_i$ in two
# views:
#
# * **the first answer token's logits**: all $G$ answers to a prompt draw their first token from the same
#   distribution, exactly the six-outcome picture above, with $g_i=e_{a_i}-\pi$;
# * **every parameter of the model**: $g_i=\nabla_\theta\sum_t\ell_{i,t}$, one backward pass per response.

# %%
tokenizer = Tokenizer()
task = make_task("add", levels=(1,))
torch.manual_seed(0)                                 # the same initial weights each time this cell runs
model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=2, n_head=2, n_embd=64))
train_supervised(model, tokenizer, task, SupervisedConfig(steps=150, batch_size=64, lr=3e-3, warmup=10),
                 eval_every=150)                                            # lesson 1's loop (minitepo/sft.py)
P, G = (24, 8) if FULL else (12, 8)
examples = [task.sample(random.Random(500 + i)) for i in range(P)]
rollout = collect_rollout(model, tokenizer, task, examples, group_size=G, temperature=1.0,
                          generator=torch.Generator().manual_seed(0))
R = rollout.rewards.double()                                                 # (B,)
print(f"{P} prompts x {G} answers, mean reward {R.mean():.3f}")

params = [p for p in model.parameters() if p.requires_grad]
logp, _ = score_rollout(model, rollout)                                       # (B, T), with gradient
seq_logp = (logp * rollout.mask).sum(-1)                                      # (B,) log pi(o_i)
per_sample = torch.stack([torch.cat([g.reshape(-1) for g in torch.autograd.grad(seq_logp[i], params,
                                                                                  retain_graph=True)])
                          for i in range(seq_logp.numel())]).double()        # (B, n_params) g_i
print(f"per-sample gradients: {tuple(per_sample.shape)}")
with torch.no_grad():
    _, _, logprobs = score_rollout(model, rollout, return_logprobs=True)     # (B, T, V)
first_pi = logprobs[:, 0].exp().double()                                      # (B, V) first answer token's pi
first_score = (torch.nn.functional.one_hot(rollout.response_ids[:, 0], first_pi.shape[1]).double()
               - first_pi)                                                    # (B, V) e_a - pi
right = R > 0
print(f"mean |g|^2 over all parameters: right answers {(per_sample ** 2).sum(1)[right].mean():.0f}, "
      f"wrong answers {(per_sample ** 2).sum(1)[~right].mean():.0f}")

# %% [markdown]
# ## Exercises
#
# **1. The score function of a softmax.** Write `softmax_score(logits, actions)`: $\nabla_z\log\pi_a=e_a-\pi$ for each
# sampled action, *without autograd*. Then `reinforce_estimate(logits, actions, rewards, b)`: the mean over samples of
# $(R-b)\,\nabla_z\log\pi_a$. Checked against autograd of `log_softmax`, and against the exact gradient of
# $\mathbb E[R]$ for two different baselines (same average: that is the baseline's whole point).

# %%
def softmax_score(logits, actions):
    """(V,) logits and (n,) sampled actions -> (n, V): the gradient of log pi(a) with respect to the logits."""
    ### BEGIN SOLUTION
    pi = torch.softmax(logits, 0)
    return torch.nn.functional.one_hot(actions, logits.numel()).to(pi.dtype) - pi
    ### END SOLUTION


def reinforce_estimate(logits, actions, rewards, b):
    """(V,) -> the REINFORCE estimate of grad E[R]: mean over samples of (R(a) - b) * grad log pi(a)."""
    ### BEGIN SOLUTION
    return ((rewards - b)[:, None] * softmax_score(logits, actions)).mean(0)
    ### END SOLUTION


with exercise(1, softmax_score, reinforce_estimate):
    few = actions[:5]
    auto = torch.stack([torch.func.grad(lambda x, a=a: torch.log_softmax(x, 0)[a])(z) for a in few])   # (5, 6)
    cmp("grad log pi(a) for 5 samples (vs autograd)", softmax_score(z, few), auto, atol=1e-12,
        hint="for pi = softmax(z): d log pi_a / dz = one_hot(a) - pi")
    for b in (0.0, 0.5):
        est = reinforce_estimate(z, actions, R6[actions], b)
        cmp(f"REINFORCE with b = {b} (vs the exact gradient of E[R])", est, exact_grad, atol=6 * float(stderr.max()),
            rtol=0.0, hint="mean over the samples of (R - b) * (one_hot(a) - pi); b must not change the average")
    # On 5 samples the baseline does change the estimate: b times the mean score of those samples. Checked exactly.
    by_hand = ((R6[few] - 0.7)[:, None] * auto).mean(0)
    cmp("REINFORCE on 5 samples with b = 0.7 (vs (R - b) * autograd's score)", reinforce_estimate(z, few, R6[few], 0.7),
        by_hand, atol=1e-12, hint="subtract b from every reward before you weight its score: (R - b)[:, None] * score")

# %% [markdown]
# **2. Baselines on the rollout.** Write `centred_rewards(rewards, G, kind)`: $R_i-b_i$ with $b$ from `kind` —
# `"none"` ($b=0$), `"batch"` (the mean of every reward in the batch), `"group"` (the mean of $i$'s group, GRPO's and
# Dr. GRPO's choice) and `"leave_one_out"` (the mean of the *other* $G-1$ rewards of $i$'s group: a baseline that does
# not depend on $o_i$ at all). Before running it, predict the order of the mean squared sizes in the two views (the
# Solutions section has what we measured, and why).

# %%
def centred_rewards(rewards, G, kind):
    """rewards (B,) in consecutive groups of G -> R_i - b_i, (B,)."""
    ### BEGIN SOLUTION
    R = rewards.view(-1, G)
    if kind == "none":
        b = torch.zeros_like(R)
    elif kind == "batch":
        b = torch.full_like(R, float(rewards.mean()))
    elif kind == "group":
        b = R.mean(1, keepdim=True).expand_as(R)
    elif kind == "leave_one_out":
        b = (R.sum(1, keepdim=True) - R) / (G - 1)
    else:
        raise ValueError(kind)
    return (R - b).reshape(-1)
    ### END SOLUTION


KINDS = ("none", "batch", "group", "leave_one_out")
toy = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0], dtype=torch.float64)
with exercise(2, centred_rewards):
    cmp("R - b, b = 0", centred_rewards(toy, 4, "none"), toy)
    cmp("R - b, b = batch mean", centred_rewards(toy, 4, "batch"), toy - 0.625, hint="one mean over all 8 rewards")
    cmp("R - b, b = group mean", centred_rewards(toy, 4, "group"), group_advantages(toy, group_size=4, scale="none"),
        hint="groups are consecutive runs of G: view(-1, G), mean over dim 1")
    cmp("R - b, b = leave-one-out mean", centred_rewards(toy, 4, "leave_one_out"),
        torch.tensor([2 / 3, -2 / 3, -2 / 3, 2 / 3, 1 / 3, 1 / 3, 1 / 3, -1.0], dtype=torch.float64),
        hint="b_i = (sum of the group - R_i) / (G - 1)")
    def mean_square(weights, g):
        """E ||(R - b) g||^2 over the batch: the variance of a one-sample estimate, up to a constant."""
        return float(((weights[:, None] * g) ** 2).sum(1).mean())

    spread_first, spread_all = {}, {}
    for kind in KINDS:
        w = centred_rewards(R, G, kind)
        spread_first[kind], spread_all[kind] = mean_square(w, first_score), mean_square(w, per_sample)
        print(f"baseline {kind:13s}: mean squared size, first token's logits {spread_first[kind]:.4f}, "
              f"all parameters {spread_all[kind]:.4g}")
    check("first token's logits: the group-mean baseline is smaller than b = 0",
          spread_first["group"] < spread_first["none"], got=spread_first,
          hint="centre each reward on its own group's mean")
sq = (per_sample ** 2).sum(1)
b_star = float((R * sq).sum() / sq.sum())
spread_all["b*"] = mean_square(R - b_star, per_sample)
print(f"all parameters: b* = {b_star:.3f} (mean reward {R.mean():.3f}), mean squared size {spread_all['b*']:.4g}")
assert all(spread_all["b*"] <= spread_all[k] + 1e-9 for k in KINDS), "no constant beats b* (and no baseline here)"
# The statements of the Solutions section, checked on this run.
g_ratio = float(sq[~right].mean() / sq[right].mean())
sq_first = (first_score ** 2).sum(1)                                           # (B,) ||e_a - pi||^2, first token
g_ratio_first = float(sq_first[~right].mean() / sq_first[right].mean())
b_star_first = float((R * sq_first).sum() / sq_first.sum())
print(f"|g|^2 of a wrong answer / |g|^2 of a right one: all parameters {g_ratio:.1f}, first token {g_ratio_first:.2f}; "
      f"b* on the first token {b_star_first:.3f} (mean reward {R.mean():.3f})")
assert spread_first["group"] < spread_first["batch"] < spread_first["none"], "first token: group < batch < none"
assert all(spread_all[k] > spread_all["none"] for k in KINDS[1:]), "all parameters: every baseline is larger than none"
assert g_ratio > 3 and b_star < R.mean().item() / 2, "wrong answers have much larger scores, so b* is near 0"
assert g_ratio_first < 2 and abs(b_star_first - R.mean().item()) < abs(b_star - R.mean().item()), \
    "first token: scores of similar size, so b* stays near the mean reward"

# %% [markdown]
# **3. Importance sampling.** The samples come from $\pi_{old}$; the policy has since moved to $\pi_\theta$. Write
# `importance_weighted_mean(values, logp_new, logp_old)`: the estimate of $\mathbb E_{\pi_\theta}[f]$ from samples of
# $\pi_{old}$, $\frac1n\sum_j e^{\ell^\theta_j-\ell^{old}_j}f_j$. It must match the exact sum for a policy that moved a
# little; the plain mean of the old samples does not. Then check the claim of "Key equations" on a real response:
# at $\theta=\theta_{old}$ the gradient of $-r\,A$ is $-A\,\nabla\ell$, REINFORCE's.

# %%
def importance_weighted_mean(values, logp_new, logp_old):
    """(n,) values f(o_j), log pi_new(o_j), log pi_old(o_j) of samples o_j ~ pi_old -> estimate of E_new[f]."""
    ### BEGIN SOLUTION
    return (torch.exp(logp_new - logp_old) * values).mean()
    ### END SOLUTION


z_new = z + 0.4 * torch.randn(6, generator=gen, dtype=torch.float64)        # the policy after a few steps
logpi_old, logpi_new = torch.log_softmax(z, 0), torch.log_softmax(z_new, 0)
exact_new = float((logpi_new.exp() * R6).sum())
naive = float(R6[actions].mean())
with exercise(3, importance_weighted_mean):
    est = importance_weighted_mean(R6[actions], logpi_new[actions], logpi_old[actions])
    weights = torch.exp(logpi_new[actions] - logpi_old[actions])
    tol = 6 * float((weights * R6[actions]).std()) / math.sqrt(n_samples)
    print(f"E_new[R] exact {exact_new:.4f}, importance-weighted {float(est):.4f}, "
          f"plain mean of old samples {naive:.4f}")
    cmp("E_new[R] from old samples, importance-weighted", est, exact_new, atol=tol, rtol=0.0,
        hint="weight each old sample by pi_new / pi_old = exp(logp_new - logp_old)")
    check("the plain mean of old samples is off by more than the weighted one",
          abs(naive - exact_new) > abs(float(est) - exact_new))
# on the rollout's first response: d(-r A)/d logp at logp = logp_old is -A, token by token
row = 0
lp = rollout.old_logp[row].double().clone().requires_grad_(True)
A0 = float(group_advantages(R, group_size=G, scale="none")[row])
(g_sur,) = torch.autograd.grad(-(torch.exp(lp - rollout.old_logp[row].double()) * A0 * rollout.mask[row]).sum(), lp)
assert torch.allclose(g_sur, -A0 * rollout.mask[row].double()), "at theta = theta_old, grad(-r A) = -A grad(logp)"

# %% [markdown]
# ## Figure: baselines and importance weights
#
# Left: the mean squared size of a one-sample gradient estimate on the rollout (relative to no baseline), for the
# four baselines of exercise 2, in the two views.
# Right: what importance weights cost. As $\pi_\theta$ moves away from $\pi_{old}$ (logits shifted by a growing
# amount), the weights $r$ spread out. The effective number of samples $(\sum r)^2/\sum r^2$ falls below the number
# drawn, and keeps falling the further the policy moves: the samples with large weights count for more, the others for
# less (the cell prints how far it has fallen at the largest shift drawn). On a single categorical choice it falls
# slowly; a response's weight is a product of token ratios, and its spread grows with every token (lesson 6 measures
# it). This is why every objective after this lesson *clips* the ratio (lesson 3). It is also why GSPO and TEPO take a
# geometric mean over a response's tokens, not their product (lessons 5 and 6).

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
width = 0.38
xs = torch.arange(len(KINDS), dtype=torch.float64)
axes[0].bar(xs - width / 2, [spread_first[k] / spread_first["none"] for k in KINDS], width,
            label="first answer token's logits")
axes[0].bar(xs + width / 2, [spread_all[k] / spread_all["none"] for k in KINDS], width, label="all parameters")
axes[0].axhline(1.0, color="grey", lw=0.8)
axes[0].set_xticks(xs.tolist(), KINDS)
axes[0].set(ylabel="mean squared size / (b = 0)", title="REINFORCE on the rollout: which baseline?")
axes[0].legend(fontsize=8)
shifts = torch.linspace(0.0, 2.0, 11)
direction = torch.randn(6, generator=gen, dtype=torch.float64)
ess = []
for shift in shifts.tolist():
    w = torch.exp(torch.log_softmax(z + shift * direction, 0)[actions] - logpi_old[actions])
    ess.append(float(w.sum() ** 2 / (w ** 2).sum()) / n_samples)
axes[1].plot(shifts, ess, "o-")
axes[1].set(xlabel="how far pi_theta moved (logit shift)", ylabel="effective samples / samples",
            title="importance weights: the further, the fewer", ylim=(0, 1.05))
fig.tight_layout()
plt.savefig(OUT / "01b_policy_gradient.png", dpi=110)
plt.show()
plt.close()
assert ess[0] > 0.999 and ess[-1] < ess[0], "on-policy every sample counts; off-policy fewer do"
print(f"effective samples / samples: {ess[0]:.3f} on-policy, {ess[-1]:.3f} at a logit shift of {shifts[-1]:.0f}")
check("the effective sample fraction falls at every step of the shift", all(b < a for a, b in zip(ess, ess[1:])),
      got=[round(e, 3) for e in ess])

# %% [markdown]
# ## Why these papers
#
# Williams (1992, "Simple statistical gradient-following algorithms for connectionist reinforcement learning")
# introduced REINFORCE, the log-derivative estimator with a baseline. PPO (Schulman et al., arXiv 1707.06347) reuses a
# rollout for several epochs of mini-batches, which is what brings in the importance ratio, and clips it to keep the
# weights near 1 (lesson 3). GRPO (DeepSeekMath, arXiv 2402.03300) replaced PPO's learned value baseline by the mean
# reward of the group — exercise 2's `"group"` — and Dr. GRPO (arXiv 2503.20783) argued to keep just that, without
# dividing by the group's std (lesson 2). GSPO (arXiv 2507.18071) and TEPO (arXiv 2510.09369) return to the fact
# from the figure's right panel: a whole response's weight is a product of token ratios, and they tame it with its
# geometric mean (lessons 5 and 6).

# %% [markdown]
# ## Solutions
#
# **Exercise 2, the order.** On the first answer token's logits (the textbook case) the group mean gives the
# smallest estimates and `none` the largest, with the batch mean in between. There $\lVert e_a-\pi\rVert^2$ has a
# similar size for right and wrong answers (within a factor of 2; printed after exercise 2), so $b^*$ is near the
# mean reward. With rewards in $\{0,1\}$ and success rate $p$, the summed squared weights fall from $p$ (no
# baseline) to $p(1-p)$ (the mean as baseline). The group mean beats the batch mean because prompts differ in
# difficulty: each group gets its own $p$.
#
# Over *all parameters*, on this rollout, every baseline made the estimates *larger*. The printout says why. A
# wrong answer is an unlikely sequence, and an unlikely sequence has a large score: its $\lVert g\rVert^2$ was
# several times a right answer's (the ratio is printed after exercise 2). $b^*$ then falls below half the mean
# reward, towards the wrong answers' reward of 0. Subtracting the mean reward gives each wrong answer a weight
# $-\bar R$ on its huge score. The baseline's promise is "same mean, never worse *for the best* $b$". The mean reward
# is the best $b$ only when scores have similar sizes. GRPO uses it anyway, for a second reason you met in lesson 2:
# a centred advantage pushes wrong answers *down* in the same update, instead of only pushing right ones up, and
# all-equal groups give exactly zero.
#
# The group mean includes $R_i$ itself, which scales the expected gradient by $(G-1)/G$ but does not tilt its
# direction; leave-one-out is exactly unbiased (it is $G/(G-1)$ times the group-mean version).
