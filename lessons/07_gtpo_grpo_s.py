# %% [markdown]
# # Lesson 7 — GTPO and GRPO-S: rewards shaped by entropy
#
# Every objective so far gave all tokens of a response the same advantage $A_i$: the right answer's
# confident "5" and its hesitant "8" were pushed up by exactly the same amount. GTPO and GRPO-S
# (arXiv 2508.04349) change the *reward* instead of the loss: they hand out a small bonus in
# proportion to the policy's entropy, token by token (GTPO) or response by response (GRPO-S), and
# then train with DAPO's loss unchanged.
#
# ## What you will learn
#
# * how GTPO turns one outcome reward per response into a reward per token, $\tilde r_{i,t}$, using the
#   entropies $H_{i,t}$ the sampler recorded;
# * why the entropy bonus only *redistributes* reward at each position (the conservation law), and
#   what "position-aligned" means for responses of different lengths;
# * how GRPO-S does the same with one mean entropy per response, and how both become advantages;
# * which parts are the paper's and which are minitepo's reading of it.

# %% [markdown]
# ## Key equations
#
# Notation of `spec/ALGORITHMS.md` §1 and §7. Split a group into its correct responses $\mathcal O^+$
# and its wrong ones $\mathcal O^-$. Positions are compared **by index** $t$: $\mathcal O^\pm_t$ are
# the responses of each kind still running at position $t$, and $d_t=\lvert\mathcal O^+_t\rvert$,
# $h_t=\lvert\mathcal O^-_t\rvert$ count them. Entropies are the rollout's, detached.
#
# GTPO token rewards (`minitepo.advantages.gtpo_token_rewards`):
#
# $$\tilde r^+_{i,t}=\alpha_1R_i+\alpha_2\,\frac{H_{i,t}}{\sum_{k\in\mathcal O^+_t}H_{k,t}}\,d_t
# \qquad i\in\mathcal O^+_t$$
#
# $$\tilde r^-_{j,t}=-\alpha_1-\alpha_2\,\frac{1/H_{j,t}}{\sum_{k\in\mathcal O^-_t}1/H_{k,t}}\,h_t
# \qquad j\in\mathcal O^-_t$$
#
# with $\alpha_1=1$, $\alpha_2=0.1$. The fractions are *shares*: at each position they sum to 1 over
# $\mathcal O^+_t$ (or $\mathcal O^-_t$). So an uncertain token of a right answer earns more than a
# confident one, and a **confident** token of a wrong answer (small $H$, large $1/H$) is punished more.
#
# Token advantages (`gtpo_advantages`): the z-score of $\tilde r_{i,t}$ over all real tokens of the
# group (`adv_norm="union"`, default) or separately inside $\mathcal O^+$ and $\mathcal O^-$ (`"split"`).
#
# GRPO-S (`grpo_s_rewards`, `grpo_s_advantages`): the same shares, one per response, from the mean
# token entropy $\hat H_i=\frac1{\lvert o_i\rvert}\sum_t m_{i,t}H_{i,t}$, with $n^\pm$ the group's number of
# right / wrong responses:
#
# $$\hat r^+_i=\alpha_1R_i+\alpha_2\frac{\hat H_i}{\sum_{k\in\mathcal O^+}\hat H_k}\,n^+,\qquad
# \hat r^-_j=-\alpha_1-\alpha_2\frac{1/\hat H_j}{\sum_{k\in\mathcal O^-}1/\hat H_k}\,n^-,$$
#
# then the usual group z-score. Both methods then train with **DAPO's loss** (token ratio, clip
# 0.2 / 0.28, `token-mean`): `minitepo.losses.gtpo_loss` and `grpo_s_loss` are DAPO's loss under
# another name; the method lives entirely in the advantages.
#
# **What is the paper's and what is minitepo's reading** (spec §7 says so explicitly). The public
# text fixes only the weight $H_{i,t}/\sum_kH_{k,t}$ "and similar variants". Everything else above —
# the $1/H$ weights for wrong answers, the counts $d_t$ and $h_t$, the $-\alpha_1$ for wrong answers,
# the defaults $\alpha_1=1,\alpha_2=0.1$, and the `union` / `split` normalisations — is minitepo's
# reading. A later version of the paper describes GTPO as rewarding high-entropy tokens of correct
# answers and *suppressing high-entropy* tokens of wrong ones (the opposite of the $1/H$ weight here);
# that variant is the switch `wrong_weight="entropy"` (default `"inverse_entropy"`, the $1/H$ above).
#
# ## Pseudocode
#
# ```
# for each group, for each position t:
#     P = correct responses still running at t,  W = wrong ones still running at t
#     for i in P:  r[i,t] = a1*R[i] + a2 * H[i,t] / sum(H[k,t] for k in P) * len(P)
#     for j in W:  r[j,t] = -a1     - a2 * (1/H[j,t]) / sum(1/H[k,t] for k in W) * len(W)
# A[i,t] = (r[i,t] - mean over the group's real tokens) / (std + eps)
# loss   = DAPO loss with the token advantages A[i,t]
# ```

# %%
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from minitepo import Tokenizer, group_advantages, make_task
from minitepo.advantages import (grpo_s_advantages, grpo_s_rewards, gtpo_advantages, gtpo_token_rewards,
                                 informative_groups)

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
# ## One group, by hand
#
# One prompt, `740+830=`, whose reference answer is `58`: that is 47 + 38 = 85 as minitepo's `add` task
# writes it, every number least-significant digit first and the operands zero-padded to three digits.
# Eight responses; the `add` verifier confirms which are right. The entropies are made up to show how GTPO shares
# out a column, low where a response was sure and high at a fork; no single model would record them. Every row of a
# group is drawn from the same first-token distribution, so a real rollout gives all eight rows the same entropy at
# $t=0$ (lesson 1), and the three identical `58E` rows the same entropy at every position; there the $t=0$ column
# would split evenly, and entropy would decide the shares only from the first position where responses part ways.
# Here each row has its own, so that every column shows a split. `E` stands for the EOS token. Three
# responses are right; the wrong ones include a confident wrong first digit (`68`), an early stop (`5E`)
# and an answer one digit too long (`581E`), so the responses have different lengths.

# %%
responses = ["58E", "58E", "58E", "57E", "48E", "581E", "5E", "68E"]
entropy_rows = [[0.9, 0.3, 0.1],          # right, hesitant on the first digit
                [0.2, 0.2, 0.1],          # right, confident everywhere
                [0.5, 1.1, 0.4],          # right, hesitant on the second digit
                [0.3, 1.2, 0.2],          # wrong second digit, chosen while unsure
                [1.4, 0.3, 0.1],          # wrong first digit, chosen while unsure
                [0.3, 0.2, 0.6, 0.3],     # one digit too many
                [0.4, 0.05],              # stopped too early, and was sure about it
                [0.1, 0.2, 0.1]]          # wrong first digit, chosen confidently
B, T = len(responses), max(len(r) for r in responses)
mask = torch.zeros(B, T, dtype=torch.bool)
entropy = torch.zeros(B, T, dtype=torch.float64)
for i, row in enumerate(entropy_rows):
    mask[i, :len(row)] = True
    entropy[i, :len(row)] = torch.tensor(row, dtype=torch.float64)
rewards = torch.tensor([1.0 if r == "58E" else 0.0 for r in responses], dtype=torch.float64)   # (B,)
tokenizer = Tokenizer()
EOS = tokenizer.decode([tokenizer.eos_id])                                       # the text of the EOS token
assert [make_task("add").reward("740+830=", r.replace("E", EOS))[0] for r in responses] == rewards.tolist(), \
    "the rewards are the verifier's"
correct = rewards > 0
alpha1, alpha2 = 1.0, 0.1

shaped = gtpo_token_rewards(rewards, entropy, mask, alpha1=alpha1, alpha2=alpha2)   # (B, T), 0 at padding
adv_tok = gtpo_advantages(rewards, entropy, mask, alpha1=alpha1, alpha2=alpha2)     # (B, T)
seq_rewards = grpo_s_rewards(rewards, entropy, mask, alpha1=alpha1, alpha2=alpha2)   # (B,)
adv_seq = grpo_s_advantages(rewards, entropy, mask, alpha1=alpha1, alpha2=alpha2)   # (B,)
plain = group_advantages(rewards)                                                    # (B,) GRPO / DAPO

d = (mask & correct[:, None]).sum(0)     # (T,) d_t: right responses still running at t
h = (mask & ~correct[:, None]).sum(0)    # (T,) h_t: wrong responses still running at t
print("d_t =", d.tolist(), "  h_t =", h.tolist())
for i, text in enumerate(responses):
    cells = "  ".join(f"{x:+.3f}" for x in shaped[i, :len(text)].tolist())
    print(f"{text:5s} R={rewards[i]:.0f}  GTPO r~: {cells:36s} GRPO-S r^ {seq_rewards[i]:+.3f}  "
          f"A(GRPO) {plain[i]:+.2f}  A(GRPO-S) {adv_seq[i]:+.2f}")

# %% [markdown]
# Read the table column by column — GTPO compares tokens **at the same position**, never across positions:
#
# * At $t=0$ the right answers share a bonus of $\alpha_2 d_0 = 0.3$ in proportion to 0.9 : 0.2 : 0.5, so
#   the hesitant first `5` of response 0 gets the largest reward of the column.
# * The wrong answers split a penalty of $\alpha_2 h_t$ in proportion to $1/H$: the confident `6` of
#   `68E` (H = 0.1) takes about half of the $t=0$ penalty, the unsure `4` of `48E` (H = 1.4) almost none.
# * At $t=3$ only `581E` is still running, so it gets the whole penalty: $-\alpha_1-\alpha_2\cdot1\cdot1=-1.1$.
#   At $t=2$ the early stop `5E` has already ended and no longer takes part.
# * GRPO-S gives one number per response, from the mean entropy: response 2 (mean 0.67) gets the biggest
#   bonus of the right answers.
#
# The bonus is small next to the outcome term ($\alpha_2=0.1$ against $\alpha_1=1$): entropy shaping
# re-weights tokens *within* a verdict; with rewards $R_i\ge0$ it never lets a token of a wrong answer
# out-score a token of a right one.

# %%
assert d.tolist() == [3, 3, 3, 0] and h.tolist() == [5, 5, 4, 1], \
    "d_t and h_t count the right and wrong answers still running at t"
assert abs(shaped[5, 3].item() - (-alpha1 - alpha2)) < 1e-12, "the lone runner at t = 3 takes the whole penalty"
assert bool((shaped[correct][mask[correct]] > 0).all()) and bool((shaped[~correct][mask[~correct]] < 0).all()), \
    "right answers' tokens earn, wrong answers' tokens lose"
assert shaped[0, 0] > shaped[2, 0] > shaped[1, 0], "more entropy, more reward (right answers)"
assert shaped[7, 0] < shaped[3, 0] < shaped[4, 0], "more confidence, more penalty (wrong answers)"

# %% [markdown]
# ## Figure: the shaped token rewards
#
# Left: the entropies the sampler recorded. Middle: GTPO's token rewards $\tilde r_{i,t}$, written in
# each cell with its token; the colour shows only their *entropy part*, $\tilde r_{i,t}-\alpha_1R_i$ for
# right answers and $\tilde r_{j,t}+\alpha_1$ for wrong ones, because next to $\pm\alpha_1$ it would be
# invisible. Grey cells are padding. Right: the entropy part of GRPO-S's one reward per response.
# What to watch: in each column the blue cells add up to $\alpha_2 d_t$ and the red ones to $-\alpha_2 h_t$;
# entropy decides only who gets which share.

# %%
outcome = torch.where(correct, alpha1 * rewards, -alpha1 * torch.ones_like(rewards))   # (B,) the outcome term
bonus_tok = torch.where(mask, shaped - outcome[:, None], torch.zeros_like(shaped))       # (B, T)
bonus_seq = seq_rewards - outcome                                                        # (B,)
fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), gridspec_kw={"width_ratios": [1, 1.25, 0.7]})
labels = [f"{r}  ({'right' if c else 'wrong'})" for r, c in zip(responses, correct.tolist())]
cmap_h = plt.get_cmap("viridis").copy()
cmap_h.set_bad("lightgrey")
cmap_r = plt.get_cmap("RdBu").copy()
cmap_r.set_bad("lightgrey")
im0 = axes[0].imshow(np.ma.masked_where(~mask.numpy(), entropy.numpy()), cmap=cmap_h, aspect="auto")
im1 = axes[1].imshow(np.ma.masked_where(~mask.numpy(), bonus_tok.numpy()), cmap=cmap_r, vmin=-0.3, vmax=0.3,
                     aspect="auto")
for i, text in enumerate(responses):
    for t, ch in enumerate(text):
        axes[0].text(t, i, f"{ch}\n{entropy[i, t]:.2f}", ha="center", va="center", fontsize=7,
                     color="black" if entropy[i, t] > 0.8 else "white")
        axes[1].text(t, i, f"{ch}\n{shaped[i, t]:+.3f}", ha="center", va="center", fontsize=7,
                     color="white" if abs(bonus_tok[i, t]) > 0.2 else "black")
for ax, title in ((axes[0], "entropy $H_{i,t}$ (nats)"),
                  (axes[1], r"GTPO reward $\tilde r_{i,t}$ (colour: entropy part)")):
    ax.set_xticks(range(T))
    ax.set_xlabel("position t")
    ax.set_yticks(range(B))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_title(title)
fig.colorbar(im0, ax=axes[0], fraction=0.05)
fig.colorbar(im1, ax=axes[1], fraction=0.05)
axes[2].barh(range(B), bonus_seq.numpy(), color=["tab:blue" if c else "tab:red" for c in correct.tolist()])
for i in range(B):
    axes[2].text(-0.01 if correct[i] else 0.01, i, f"$\\hat r$ = {seq_rewards[i]:+.3f}", va="center", fontsize=7,
                 ha="right" if correct[i] else "left")                      # on the other side of 0 from the bar
axes[2].set_xlim(-0.3, 0.3)
axes[2].set_ylim(B - 0.5, -0.5)
axes[2].set_yticks(range(B))
axes[2].set_yticklabels(responses, fontsize=8)
axes[2].axvline(0, color="black", lw=0.8)
axes[2].set_title(r"GRPO-S: entropy part of $\hat r_i$")
fig.suptitle("One group of 8 responses to 740+830= (47 + 38, reference 58): entropy-shaped rewards")
fig.tight_layout()
fig.savefig(OUT / "07_gtpo_rewards.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# ## From rewards to advantages, and a group with no signal
#
# The loss sees advantages, not rewards. With the default `union` normalisation every real token of
# the group enters one z-score, so a right answer's tokens all stay positive here and the wrong
# answers' all negative; the entropy bonus only spreads them. With `adv_norm="split"` each side is
# centred on its own mean, so a right answer's *least* uncertain tokens get a negative advantage: a
# much stronger intervention, which is why it is a switch and not the default.
#
# A group whose rewards are all equal (all right, or all wrong) carries no outcome signal, and spec §7
# gives it zero advantages: the papers build on DAPO, whose dynamic sampling drops such groups before
# any shaping. Entropy differences alone would otherwise create advantages out of nothing — the
# switch `equal_groups="shape"` shows what that looks like; the default `"zero"` gives such a group
# exactly the zero advantages `informative_groups` predicts, as below.

# %%
adv_split = gtpo_advantages(rewards, entropy, mask, alpha1=alpha1, alpha2=alpha2, adv_norm="split")
print("union advantages of the right answers:", [f"{a:+.2f}" for a in adv_tok[correct][mask[correct]].tolist()])
print("split advantages of the right answers:", [f"{a:+.2f}" for a in adv_split[correct][mask[correct]].tolist()])
assert bool((adv_tok[correct][mask[correct]] > 0).all()) and bool((adv_split[correct][mask[correct]] < 0).any()), \
    "union keeps right answers positive; split can make some negative"

# two groups: ours, and one where all eight answers were right
rewards2 = torch.cat([rewards, torch.ones(B, dtype=torch.float64)])
entropy2, mask2 = torch.cat([entropy, entropy]), torch.cat([mask, mask])
ids2 = torch.arange(2 * B) // B
keep = informative_groups(rewards2, ids2)                                   # (2B,) False for the all-right group
adv2 = gtpo_advantages(rewards2, entropy2, mask2, ids2)                     # default equal_groups="zero"
out_of_nothing = gtpo_advantages(rewards2, entropy2, mask2, ids2, equal_groups="shape")
print("all-right group, equal_groups='shape': advantage std",
      f"{out_of_nothing[B:][mask2[B:]].std():.2f} made of entropy differences alone")
assert keep.tolist() == [True] * B + [False] * B and bool((adv2[B:] == 0).all()), \
    "the all-equal group is not informative and gets zero advantages"
assert bool((out_of_nothing[B:][mask2[B:]] != 0).any()), \
    "shaping alone would give the all-equal group non-zero advantages"

# %% [markdown]
# ## Exercises
#
# **Exercise 1 — the conservation law.** The docstring of `gtpo_token_rewards` says the entropy terms
# only redistribute: at every position $t$ of a group,
# $\sum_{i\in\mathcal O^+_t}(\tilde r_{i,t}-\alpha_1R_i)=\alpha_2\,d_t$ and
# $\sum_{j\in\mathcal O^-_t}\tilde r_{j,t}=-(\alpha_1+\alpha_2)\,h_t$. Write `position_totals`, which
# returns these two sums per position for one group, and check the law on our group and on random
# groups (random lengths, entropies, rewards in $[0,1]$ and $\alpha$'s).

# %%
def position_totals(shaped, rewards, mask, correct, alpha1):
    """Per position t: (sum over running right answers of r~ - alpha1 R, sum over running wrong answers of r~).  -> (T,), (T,)"""
    ### BEGIN SOLUTION
    m = mask.bool()
    pos = m & correct[:, None]                                              # (B, T)
    neg = m & ~correct[:, None]
    bonus = torch.where(pos, shaped - alpha1 * rewards[:, None], torch.zeros_like(shaped)).sum(0)
    penalty = torch.where(neg, shaped, torch.zeros_like(shaped)).sum(0)
    return bonus, penalty
    ### END SOLUTION


def random_group(gen, G=6, T=5):
    """A random group: ragged prefix masks (every response has >= 1 token), entropies in (0, 3), some right."""
    lengths = torch.randint(1, T + 1, (G,), generator=gen)
    m = torch.arange(T)[None, :] < lengths[:, None]                         # (G, T)
    H = 0.02 + 3.0 * torch.rand(G, T, generator=gen, dtype=torch.float64)
    R = torch.where(torch.rand(G, generator=gen) < 0.5, torch.rand(G, generator=gen, dtype=torch.float64),
                    torch.zeros(G, dtype=torch.float64))                    # right answers get a reward in (0, 1)
    return R, H, m


gen = torch.Generator().manual_seed(7)
totals_hint = "sum over responses (dim 0) of the running (mask = 1) rows only: right answers' r~ - alpha1 R_i, " \
              "wrong answers' r~"
with exercise(1, position_totals):
    bonus, penalty = position_totals(shaped, rewards, mask, correct, alpha1)
    cmp("bonus per position (right answers)", bonus, alpha2 * d.double(), hint=totals_hint)
    cmp("penalty per position (wrong answers)", penalty, -(alpha1 + alpha2) * h.double(), hint=totals_hint)
    for trial in range(20):
        R, H, m = random_group(gen)
        a1, a2 = float(torch.rand(1, generator=gen)) * 2, float(torch.rand(1, generator=gen))
        r = gtpo_token_rewards(R, H, m, alpha1=a1, alpha2=a2)
        b_t, p_t = position_totals(r, R, m, R > 0, a1)
        d_t, h_t = (m & (R > 0)[:, None]).sum(0).double(), (m & (R <= 0)[:, None]).sum(0).double()
        cmp(f"bonus per position, random group {trial}", b_t, a2 * d_t, hint=totals_hint, quiet=True)
        cmp(f"penalty per position, random group {trial}", p_t, -(a1 + a2) * h_t, hint=totals_hint, quiet=True)
    print("ok   the conservation law holds on 20 random groups")

# %% [markdown]
# **Exercise 2 — one GRPO-S bonus by hand.** Write `grpo_s_bonus(i, ...)`: the entropy term of response
# $i$'s GRPO-S reward, $\hat r^+_i-\alpha_1R_i$ for a right answer or $\hat r^-_i+\alpha_1$ for a wrong
# one, with plain Python loops over the group (no minitepo). Then work out response 2's bonus on paper, from
# the entropies printed above, before running the check (the worked answer is in the Solutions section).

# %%
def grpo_s_bonus(i, rewards, entropy, mask, correct, alpha2):
    """The entropy term of response i's GRPO-S reward, from the formula, with Python loops."""
    ### BEGIN SOLUTION
    def mean_entropy(k):
        values = [float(entropy[k, t]) for t in range(entropy.shape[1]) if bool(mask[k, t])]
        return sum(values) / len(values)

    same_side = [k for k in range(len(rewards)) if bool(correct[k]) == bool(correct[i])]
    if bool(correct[i]):
        weights = {k: mean_entropy(k) for k in same_side}
        return alpha2 * weights[i] / sum(weights.values()) * len(same_side)
    weights = {k: 1.0 / mean_entropy(k) for k in same_side}
    return -alpha2 * weights[i] / sum(weights.values()) * len(same_side)
    ### END SOLUTION


bonus_hint = ("right answer: alpha2 * n+ * H_i / sum of the right answers' mean entropies; wrong answer: "
              "-alpha2 * n- * (1/H_i) / sum of the wrong answers' 1/H; H_i = mean over REAL tokens only")
lib_bonus = seq_rewards - torch.where(correct, alpha1 * rewards, -alpha1 * torch.ones_like(rewards))
with exercise(2, grpo_s_bonus):
    cmp("GRPO-S bonus of response 2 (worked on paper)", grpo_s_bonus(2, rewards, entropy, mask, correct, alpha2),
        0.1 * 3 * 2.0 / 3.8, atol=1e-12, hint=bonus_hint)
    cmp("GRPO-S bonus of every response", [grpo_s_bonus(i, rewards, entropy, mask, correct, alpha2) for i in range(B)],
        lib_bonus, atol=1e-9, hint=bonus_hint)
    for trial in range(10):
        R, H, m = random_group(gen)
        lib = grpo_s_rewards(R, H, m, alpha1=1.0, alpha2=0.3) - torch.where(R > 0, R, -torch.ones_like(R))
        cmp(f"GRPO-S bonus, random group {trial}", [grpo_s_bonus(i, R, H, m, R > 0, 0.3) for i in range(len(R))],
            lib, atol=1e-9, hint=bonus_hint, quiet=True)
    print("ok   the GRPO-S bonus matches grpo_s_rewards on 10 random groups")

# %% [markdown]
# **Think about it** (no code): set $\alpha_2=0$. What do GTPO's token advantages become, and how do
# they differ from DAPO's (one advantage per response, z-scored over responses, not tokens)? Spec §8
# item 13 states the answer as a tested invariant.
#
# ## Why these papers
#
# Group-relative methods give every token of a response the same credit, although most tokens of a
# reasoning trace are forced and only a few are real decisions. The GTPO / GRPO-S paper
# (arXiv 2508.04349) uses the policy's own entropy as a cheap, label-free proxy for "this was a
# decision", and moves a small, conserved amount of reward toward those tokens. It sits next to the
# other entropy-aware ideas in this course: DAPO's clip-higher protects entropy from collapsing, and
# TEPO's KL mask damps updates exactly where positive-advantage tokens are losing entropy. GTPO acts on the reward, TEPO on the loss — two different places to put the same
# intuition, and minitepo lets you train both from the same warm start (`minitepo compare --algos
# tepo,gtpo,grpo_s`).

# %% [markdown]
# ## Solutions
#
# **Exercise 2, on paper.** Response 2's mean entropy is $(0.5+1.1+0.4)/3=2.0/3$, the right answers' mean
# entropies sum to $(1.3+0.5+2.0)/3=3.8/3$ and $n^+=3$, so the bonus is $0.1\cdot3\cdot(2.0/3)/(3.8/3)=0.1\cdot3\cdot2.0/3.8$.
