# %% [markdown]
# # Lesson 6 — TEPO: a sequence ratio, a token-level mean, and a KL mask
#
# ## What you will learn
#
# * TEPO's policy term: GSPO's sequence ratio (lesson 5), built from each token's log-ratio clipped on the
#   pessimistic side of its advantage, routed to every token, and averaged over **tokens** like DAPO (lesson 4).
#   On-policy it equals DAPO; you check that on the gradient.
# * TEPO's KL mask: a penalty on tokens with a positive advantage whose entropy has dropped, which pulls each
#   back towards its log-probability at the rollout (down if it rose since, up if it fell). You watch it on a real
#   rollout of a tiny model, reused for four optimizer steps, done by hand with the calls the trainer makes, and see
#   what it does to the gradient of the tokens it masks: it slows some, and pushes others further up.
# * Why the mask is empty on the first optimizer step after a rollout, and what `TEPO_MASK_TOL` is for.
# * Why each token's log-ratio is clipped before the geometric mean: the first reading, which clipped $s_i$
#   itself, taken apart (Part 3).
# * What the mask changes in training, where a rollout serves 8 optimizer steps: a pre-registered ablation
#   (β_M = 1 against 0, 8 seeds each), read from committed curves (Part 4); and a one-minute version you run
#   yourself (off by default), with what its 4 seeds per arm can and cannot tell.
#
# **What is TEPO's and what is minitepo's.** The TEPO paper's public text fixes two things:
#
# 1. a sequence-level likelihood ratio, the length-normalised geometric mean $s_i$, links the group reward to every
#    token, and the loss is averaged over tokens;
# 2. a token-level KL mask acts on tokens with a positive advantage whose entropy decreased.
#
# Everything else is **minitepo's reading** of that text. Each choice is a switch of `tepo_loss`: where the ratio is
# clipped (`ratio_clip`), how "entropy decreased" is decided (`mask_criterion`), what the mask does
# (`mask_action`), and the round-off guard `mask_tol`. There is no reference model. A pre-registered search chose
# the defaults: the `token_log` clip, the measured mask with the k3 penalty, β_M = 1, and dynamic sampling in the
# trainer. The first reading (0.2 / 0.28 on $s_i$) collapsed on chain-of-thought addition. The first code cell
# reads the defaults from the library and checks them against this paragraph.
#
# References: TEPO is arXiv 2510.09369 (revised as 2604.12736). The readings: the README ("TEPO: what is a
# reading of the paper"), `docs/objectives.md`, spec §6 and `research/reading-search/README.md`.

# %% [markdown]
# ## Key equations
#
# TEPO as the library ships it. Let $x_{i,t}=\ell^\theta_{i,t}-\ell^{old}_{i,t}$ on real tokens. A token is
# **held** when it moved past $\pm\delta$ on the side its advantage pushes it (the pessimistic side, as in PPO's
# min):
#
# $$\text{held}_{i,t}=\big(A_i>0\wedge x_{i,t}>\delta_h\big)\vee\big(A_i<0\wedge x_{i,t}<-\delta_l\big),\qquad
# \tilde x_{i,t}=\begin{cases}\mathrm{sg}[\mathrm{clamp}(x_{i,t},-\delta_l,\delta_h)]&\text{held}\\x_{i,t}&\text{otherwise}\end{cases}$$
#
# $$\tilde s_i=\exp\Big(\frac1{|o_i|}\sum_tm_{i,t}\tilde x_{i,t}\Big),\qquad
# \tilde s_{i,t}=\mathrm{sg}[\tilde s_i]\,e^{\tilde x_{i,t}-\mathrm{sg}[\tilde x_{i,t}]},\qquad
# M_{i,t}=\mathrm{sg}\big[\mathbb 1[A_i>0]\,\mathbb 1[H^\theta_{i,t}<H^{old}_{i,t}-\tau]\big]\,m_{i,t}$$
#
# $$\mathcal L_{TEPO}=\frac1N\sum_{i}\sum_{t}m_{i,t}\Big[-A_i\,\tilde s_{i,t}+\beta_M\,M_{i,t}\,k_3(\ell^\theta_{i,t},\ell^{old}_{i,t})\Big],
# \qquad k_3=e^{-x}+x-1$$
#
# with $\delta_l=\delta_h=0.4$, $\beta_M=1$, and $N$ the real tokens of the optimizer step. $\tau$ is the round-off
# guard (`mask_tol`); the trainer passes `TEPO_MASK_TOL` $=10^{-4}$ nats. A held token carries no gradient; the
# other tokens of its response keep theirs. On-policy ($x=0$: nothing held, $\tilde s_i=1$, $M=0$) the gradient is
# DAPO's, $-\frac1N\sum_iA_i\sum_t\nabla\ell^\theta_{i,t}$.
#
# At $\theta=\theta_{old}$ the entropies are equal, so the measured mask is **empty by construction** on the first
# optimizer step after a rollout. It acts only when a rollout serves several steps. The trainer's default is four
# mini-batches (`--minibatches 4`).
#
# Code: `tepo_loss` and `tepo_mask` in `minitepo/losses/tepo.py`.

# %% [markdown]
# ## Pseudocode (one iteration of the trainer, `minitepo/rl.py:Trainer.iterate`)
#
# ```
# rollout = collect_rollout(model, tokenizer, task, prompts, group_size=G)   # records old logp, old entropy
# A       = group_advantages(rollout.rewards, rollout.group_ids)
# for rows in shuffle(rollout).split(4):                                     # 4 optimizer steps, one rollout
#     logp, entropy = score_rollout(model, rollout.select(rows))            # teacher-forced, current theta
#     loss, stats   = tepo_loss(logp, old_logp, A, mask, entropy, old_entropy, mask_tol=TEPO_MASK_TOL)
#     loss.backward(); optimizer.step()                                    # theta moves: the next rows see
# ```                                                                      # a policy that differs from old

# %%
import copy
import json
import math
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from minitepo import (GPT, TEPO_MASK_TOL, ModelConfig, SupervisedConfig, Tokenizer, Trainer, TrainerConfig,
                      collect_rollout, dapo_loss, grpo_loss, group_advantages, make_task, score_rollout, tepo_loss,
                      tepo_mask, train_supervised)
from minitepo.lab.stats import holm, min_detectable_effect_of, welch_test
from minitepo.losses import gspo_loss, objective_default, predicted_entropy_drop_score

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
FULL = os.environ.get("MINITEPO_LESSONS") == "full"
OUT = Path("runs/lessons")
OUT.mkdir(parents=True, exist_ok=True)

# The reading's defaults, read from the library (never typed here: a search may change them).
DEFAULTS = {name: objective_default("tepo", name) for name in ("eps_low", "eps_high", "agg", "ratio_clip", "delta_low",
                                                                "delta_high", "beta_mask", "mask_criterion", "mask_kl",
                                                                "mask_action")}
print("tepo_loss defaults:", DEFAULTS)
assert (DEFAULTS["ratio_clip"], DEFAULTS["mask_criterion"], DEFAULTS["mask_action"], DEFAULTS["beta_mask"]) == \
    ("token_log", "measured", "kl", 1.0), "the text above states another default than the library ships: update it"
SEQ = dict(ratio_clip="sequence")                     # the first reading: Part 1 and Part 3 take it apart
SHIPPED = dict(ratio_clip="token_log", delta_low=0.4, delta_high=0.4, mask_criterion="measured", mask_action="kl",
               mask_kl="k3")                          # the reading of "Key equations", named in every call
assert all(DEFAULTS[k] == v for k, v in SHIPPED.items()), "the key equations state another reading than the library"

# %% [markdown]
# ## A worked example by hand
#
# Two responses, three token slots. Response 0 has $A=+1$ and three tokens with $x=(0.1,\,0.5,\,-0.2)$. Response 1
# has $A=-1$, two tokens with $x=(-0.6,\,0.2)$, and one padded slot. The entropy of response 0's last token dropped;
# no other entropy moved. **Work out, before running the cell:** which tokens are held, $\tilde s_0$ and $\tilde s_1$,
# which token is masked, the loss, and $N\,\partial\mathcal L/\partial\ell^\theta$ on each token. (Answers: the printout.)

# %%
x_hand = torch.tensor([[0.1, 0.5, -0.2], [-0.6, 0.2, 0.0]], dtype=torch.float64)
mask_hand = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]], dtype=torch.float64)
adv_hand = torch.tensor([1.0, -1.0], dtype=torch.float64)
old_hand = torch.full((2, 3), -1.0, dtype=torch.float64)                     # any old log-probs: x is what counts
h_old_hand = torch.ones(2, 3, dtype=torch.float64)
h_new_hand = h_old_hand - torch.tensor([[0.0, 0.0, 0.3], [0.0, 0.0, 0.0]], dtype=torch.float64)
lp_hand = (old_hand + x_hand).requires_grad_(True)
loss_hand, st_hand = tepo_loss(logp=lp_hand, old_logp=old_hand, advantages=adv_hand, mask=mask_hand, entropy=h_new_hand,
                               old_entropy=h_old_hand, beta_mask=1.0, mask_tol=0.0, **SHIPPED)
(g_hand,) = torch.autograd.grad(loss_hand, lp_hand)
# By hand: token (0, 1) is held at 0.4 (A > 0, x > 0.4), token (1, 0) at -0.4 (A < 0, x < -0.4).
s0, s1 = math.exp((0.1 + 0.4 - 0.2) / 3), math.exp((-0.4 + 0.2) / 2)        # e^0.1 = 1.105, e^-0.1 = 0.905
k3_masked = math.exp(0.2) - 0.2 - 1                                          # k3 at x = -0.2: 0.0214
N_hand = 5
loss_by_hand = (-1 * s0 * 3 + 1 * s1 * 2 + k3_masked) / N_hand
grad_by_hand = torch.tensor([[-s0, 0.0, -s0 + (1 - math.exp(0.2))], [0.0, s1, 0.0]], dtype=torch.float64) / N_hand
print(f"s~_0 = {s0:.4f}, s~_1 = {s1:.4f}, k3 on the masked token = {k3_masked:.4f}")
print(f"loss: by hand {loss_by_hand:.5f}, tepo_loss {loss_hand.item():.5f}")
print("N * dL/dlogp, by hand:    ", [[round(v, 4) for v in row] for row in (grad_by_hand * N_hand).tolist()])
print("N * dL/dlogp, tepo_loss:  ", [[round(v, 4) for v in row] for row in (g_hand * N_hand).tolist()])
assert abs(loss_hand.item() - loss_by_hand) < 1e-12 and torch.allclose(g_hand, grad_by_hand, atol=1e-12), \
    "the worked example by hand equals tepo_loss, value and gradient"

# %% [markdown]
# ## Part 1: where TEPO comes from, checked on the gradient
#
# A hand-made batch: two groups of four responses with random lengths and random log-probs, in float64, so the
# checks are exact. On-policy, TEPO as shipped equals DAPO. Off-policy, we take apart TEPO's **first reading**
# (`ratio_clip="sequence"`: the clip 0.2 / 0.28 on $s_i$ itself, no per-token clip). That reading is GSPO's
# sequence ratio with DAPO's token-mean; the checks below say exactly how.

# %%
gen = torch.Generator().manual_seed(0)


def make_batch(lengths, drift):
    """(old_logp, logp, advantages, mask) for responses of the given lengths; logp = old_logp + drift * noise."""
    lengths = torch.as_tensor(lengths)
    B, T = lengths.numel(), int(lengths.max())
    mask = (torch.arange(T)[None, :] < lengths[:, None]).double()                  # (B, T)
    old = -torch.rand(B, T, generator=gen, dtype=torch.float64) * 3 * mask
    new = old + drift * torch.randn(B, T, generator=gen, dtype=torch.float64) * mask
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0])[:B]
    return old, new, group_advantages(rewards, group_size=4).double(), mask


def value_and_grad(fn, logp_value):
    """(loss value, d loss / d logp) of fn(logp), for a loss function or an objective returning (loss, stats)."""
    logp = logp_value.clone().requires_grad_(True)
    out = fn(logp)
    loss = out[0] if isinstance(out, tuple) else out
    loss.backward()
    return loss.item(), logp.grad


def gradient(objective, old, new, adv, mask, **kwargs):
    logp = new.clone().requires_grad_(True)
    loss, stats = objective(logp=logp, old_logp=old, advantages=adv, mask=mask, **kwargs)
    loss.backward()
    return logp.grad, stats


lengths = [2, 5, 3, 7, 1, 4, 6, 2]
old, new, adv, mask = make_batch(lengths, drift=0.0)                 # on-policy: logp = old_logp
# TEPO with the rollout's entropies: on-policy they are the current ones, so the measured mask is empty
ent = torch.rand(old.shape, generator=gen, dtype=torch.float64) * mask
g_tepo, st = gradient(tepo_loss, old, new, adv, mask, entropy=ent, old_entropy=ent, **SHIPPED)
g_dapo, _ = gradient(dapo_loss, old, new, adv, mask)
print(f"on-policy:  max |grad TEPO - grad DAPO| = {(g_tepo - g_dapo).abs().max().item():.1e}   "
      f"mask_frac {st['mask_frac'].item():.2f}")
assert torch.allclose(g_tepo, g_dapo, atol=1e-15) and st["mask_frac"] == 0, "on-policy TEPO = DAPO"

old, new, adv, mask = make_batch(lengths, drift=0.1)                 # off-policy: they part
g_tepo, _ = gradient(tepo_loss, old, new, adv, mask, beta_mask=0.0, **SEQ)
g_dapo, _ = gradient(dapo_loss, old, new, adv, mask)
print(f"off-policy: max |grad TEPO - grad DAPO| = {(g_tepo - g_dapo).abs().max().item():.1e}   "
      "(token ratio against sequence ratio)")

# %% [markdown]
# Now the first reading against GSPO with the same clip range (GSPO's own default is $3\times10^{-4}/4\times10^{-4}$;
# we give both 0.2 / 0.28). At equal lengths the two gradients are identical, off-policy and clipped or not.
# At unequal lengths TEPO's gradient is GSPO's times $B'|o_i|/N$: longer responses count more.

# %%
EPS = dict(eps_low=0.2, eps_high=0.28, ratio_clip="sequence")
EPS_GSPO = dict(eps_low=0.2, eps_high=0.28)
old, new, adv, mask = make_batch([5] * 8, drift=0.3)
g_tepo, st_tepo = gradient(tepo_loss, old, new, adv, mask, beta_mask=0.0, **EPS)
g_gspo, st_gspo = gradient(gspo_loss, old, new, adv, mask, **EPS_GSPO)
print(f"equal lengths:   max |grad TEPO - grad GSPO| = {(g_tepo - g_gspo).abs().max().item():.1e}   "
      f"(responses clipped: {st_gspo['clip_frac'].item():.2f})")
assert torch.allclose(g_tepo, g_gspo, atol=1e-15), "equal lengths: TEPO = GSPO"

old, new, adv, mask = make_batch(lengths, drift=0.3)
g_tepo, _ = gradient(tepo_loss, old, new, adv, mask, beta_mask=0.0, **EPS)
g_gspo, _ = gradient(gspo_loss, old, new, adv, mask, **EPS_GSPO)
N, B_nonempty, resp_len = mask.sum(), (mask.sum(-1) > 0).sum(), mask.sum(-1, keepdim=True)
print(f"unequal lengths: max |grad TEPO - grad GSPO| = {(g_tepo - g_gspo).abs().max().item():.1e}")
assert torch.allclose(g_tepo, g_gspo * B_nonempty * resp_len / N, atol=1e-15), "TEPO = GSPO x B'|o_i|/N"

# %% [markdown]
# ## Part 2: the mask on a real rollout
#
# A policy that is never right gets zero advantages everywhere, and then TEPO's mask (which needs
# $A>0$) has nothing to act on. So we first give a tiny model (2 layers, width 64) a few seconds of
# supervised training on 1-digit addition: enough to answer in the right format and sometimes correctly.

# %%
tokenizer = Tokenizer()
task = make_task("add", levels=(1,))
torch.manual_seed(0)                                 # the same initial weights each time this cell runs
warm_model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=2, n_head=2, n_embd=64))
sft_steps = 400 if FULL else 150
warm = train_supervised(warm_model, tokenizer, task, SupervisedConfig(steps=sft_steps, batch_size=64, lr=3e-3,
                                                                      warmup=10),
                        eval_every=sft_steps)                               # lesson 1's loop (minitepo/sft.py)
print(f"warm start: {len(warm)} steps, held-out greedy accuracy {warm[-1]['eval/greedy_acc/all']:.2f}")

# %% [markdown]
# One rollout: 16 prompts, 8 answers each, at temperature 1. Then four optimizer steps on it, each on a quarter of
# the rows, shuffled as the trainer does. The calls are those of the trainer's `optimizer_step`, without its
# micro-batching, learning-rate schedule and gradient clipping. For each mini-batch we record the tensors the mask
# is built from; you rebuild the mask from them in the exercises.
#
# What to watch: not the loss value. Watch `mask_frac` (0 on the first step, by construction), `seq_ratio_mean` (how
# far the policy has moved from the one that sampled) and `clip_frac`.
#
# The four steps use the reading of "Key equations", named in the call. The learning rate is 3e-4, as in lesson 10
# (the trainer's default is 1e-4, with gradient clipping). The cell ends by judging its step size by lesson 9's
# rule: a clip fraction that climbs toward tens of percent means steps too large for the trust region. The cell
# trains a *copy* of the warm model, so a rerun with another `LR` starts from the same place.

# %%
n_prompts, G, n_minibatches = (32 if FULL else 16), 8, 4
examples = [task.sample(random.Random(1000 + i)) for i in range(n_prompts)]
rollout = collect_rollout(warm_model, tokenizer, task, examples, group_size=G, temperature=1.0,
                          generator=torch.Generator().manual_seed(0))
advantages = group_advantages(rollout.rewards, rollout.group_ids)                   # (B,)
print(f"rollout: {rollout.rewards.numel()} answers, reward {rollout.rewards.mean().item():.3f}, "
      f"{(advantages > 0).sum().item()} with A > 0, response width {rollout.mask.shape[1]}")

LR = 3e-4                                                  # AdamW learning rate of the 4 steps
READING = dict(SHIPPED, beta_mask=1.0)


def four_steps(lr, tol=TEPO_MASK_TOL, verbose=True):
    """Four optimizer steps on the rollout, from a fresh copy of the warm model; a record per mini-batch."""
    model = copy.deepcopy(warm_model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    order = torch.randperm(rollout.mask.size(0), generator=torch.Generator().manual_seed(0))
    out = []
    for k, rows in enumerate(order.tensor_split(n_minibatches)):
        mb = rollout.select(rows)
        logp, entropy = score_rollout(model, mb)                                   # (b, T) each, current theta
        loss, stats = tepo_loss(logp=logp, old_logp=mb.old_logp, advantages=advantages[rows], mask=mb.mask,
                                entropy=entropy, old_entropy=mb.old_entropy, mask_tol=tol, **READING)
        M = tepo_mask(advantages[rows], mb.mask, entropy=entropy, old_entropy=mb.old_entropy, tol=tol)
        out.append(dict(rows=rows, logp=logp.detach(), old_logp=mb.old_logp, adv=advantages[rows], mask=mb.mask,
                        entropy=entropy, old_entropy=mb.old_entropy, stats=stats, M=M, loss=loss.item()))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if verbose:
            print(f"mini-batch {k + 1}: loss {loss.item():+.4f}  mask_frac {stats['mask_frac'].item():.3f}  "
                  f"masked tokens {int(M.sum())} of {int(mb.mask.sum())}  seq_ratio_mean "
                  f"{stats['seq_ratio_mean'].item():.4f}  clip_frac {stats['clip_frac'].item():.3f}  "
                  f"mask_kl {stats['mask_kl'].item():.1e}")
    return out


record = four_steps(LR)

mask_fracs = [r["stats"]["mask_frac"].item() for r in record]
worst_clip = max(r["stats"]["clip_frac"].item() for r in record)
print(f"largest clip_frac of the four steps: {worst_clip:.3f} -> by lesson 9's rule this step size is "
      + ("too large for the trust region (a real run would lower the learning rate)" if worst_clip >= 0.1
         else "within the trust region"))
assert mask_fracs[0] == 0.0, "theta = theta_old on the first step: the measured mask is empty"
assert all(0.0 <= f <= 1.0 and math.isfinite(f) for f in mask_fracs), "mask_frac is a fraction"
assert all(math.isfinite(r["loss"]) for r in record), "every loss is finite"
for r in record:                                            # M is inside {A > 0} and {real tokens}, never more
    assert not (r["M"] & ~((r["adv"] > 0)[:, None] & r["mask"].bool())).any(), "M lies inside {A > 0} and the mask"

# %% [markdown]
# **Why the guard.** On the first mini-batch the weights are those that sampled the rollout. Yet the two entropies
# are not bit-for-bit equal. The sampler computed them one token at a time with a KV cache; `score_rollout` computes
# them in one teacher-forced pass; float32 rounds the two sums differently. With an exact test ($\tau=0$), some
# tokens count as "entropy decreased" from round-off alone.

# %%
first = record[0]
gap = (first["entropy"] - first["old_entropy"])[first["mask"].bool()].abs().max().item()
exact = tepo_mask(first["adv"], first["mask"], entropy=first["entropy"], old_entropy=first["old_entropy"], tol=0.0)
print(f"first mini-batch: max |H_theta - H_old| = {gap:.1e} nats; tokens flagged with tol=0: {int(exact.sum())}, "
      f"with TEPO_MASK_TOL={TEPO_MASK_TOL}: {int(first['M'].sum())}")
assert gap < TEPO_MASK_TOL, "the sampler's and the teacher-forced entropies differ by round-off only"

# %% [markdown]
# ## Figure: which characters the mask held back
#
# Each panel is one mini-batch. It shows the answers with $A>0$ (the only ones the mask can touch) and two with
# $A\le0$. The prompt is in black; each response character is coloured:
#
# * red: in the mask (positive advantage, entropy dropped, penalised by $k_3$ to the old policy);
# * green: positive advantage, not masked;
# * grey: advantage $\le0$.
#
# `#` is the end-of-sequence token, `^` a sampled beginning-of-sequence token (nonsense, but sampled), `_` padding.
# Below, each mini-batch's mask fraction: 0 on the first, by construction. It is non-zero afterwards only because
# the earlier optimizer steps moved the policy. Which tokens land in the mask depends on the seed and the learning
# rate, so do not read more into one rollout than that.

# %%
SPECIAL = {tokenizer.eos_id: "#", tokenizer.bos_id: "^", tokenizer.pad_id: "_"}   # one character each
fig = plt.figure(figsize=(13, 6.5))
grid = fig.add_gridspec(2, n_minibatches, height_ratios=[3, 1.2])
colour = {"mask": "tab:red", "pos": "tab:green", "other": "0.6"}
for k, r in enumerate(record):
    ax = fig.add_subplot(grid[0, k])
    ax.set_axis_off()
    ax.set_title(f"mini-batch {k + 1}: mask_frac {mask_fracs[k]:.3f}", fontsize=10)
    positive = (r["adv"] > 0).nonzero().squeeze(-1).tolist()
    others = (r["adv"] <= 0).nonzero().squeeze(-1).tolist()
    shown = positive[:10] + others[:2]
    for line, i in enumerate(shown):
        y = 1.0 - (line + 1) / 13
        row = r["rows"][i].item()
        prompt = examples[row // G].prompt
        ax.text(0.0, y, prompt, family="monospace", fontsize=10, color="black", transform=ax.transAxes)
        n_real = int(r["mask"][i].sum())
        for t in range(n_real):
            token = rollout.response_ids[row, t].item()
            char = SPECIAL.get(token) or tokenizer.decode([token])
            kind = "mask" if r["M"][i, t] else ("pos" if r["adv"][i] > 0 else "other")
            ax.text(0.42 + 0.07 * t, y, char, family="monospace", fontsize=10, color=colour[kind],
                    weight="bold" if kind == "mask" else "normal", transform=ax.transAxes)
        ax.text(0.82, y, f"A={r['adv'][i].item():+.1f}", fontsize=7, color="0.3", transform=ax.transAxes)
ax = fig.add_subplot(grid[1, :])
ax.bar(range(1, n_minibatches + 1), mask_fracs, color="tab:red")
ax.set_xticks(range(1, n_minibatches + 1))
ax.set_xlabel("mini-batch (optimizer step) on the same rollout")
ax.set_ylabel("mask_frac")
fig.suptitle("Lesson 6: TEPO's KL mask on one rollout reused for 4 optimizer steps "
             "(red = masked, green = A > 0 not masked, grey = A <= 0)", fontsize=11)
fig.tight_layout()
plt.savefig(OUT / "06_tepo_mask.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# ## Figure: token-level credit under GRPO, DAPO and TEPO
#
# Which token gets how much push? We score the last mini-batch of Part 2 (off-policy after three steps) three
# ways. Each cell is $-N\,\partial\mathcal L/\partial\ell^\theta_{i,t}$ on a real token; the factor $N$ makes the
# numbers read per token. Blue: the loss pushes the token up; red: down; grey: padding.
#
# **The colour scale** is symmetric about 0 and ends at the 98th percentile of $\lvert N\,\partial\mathcal
# L/\partial\ell^\theta\rvert$ over the real tokens of all three panels (the cell prints it). A single token far
# beyond it would otherwise set the scale and leave every other cell pale; such tokens are drawn at full colour and
# carry their value, written in the cell.
#
# * GRPO: the weight depends on the response's length (its $1/|o_i|$). Its KL term to a reference is off here
#   ($\beta=0$).
# * DAPO: $-r_{i,t}A_i$ per token, clipped per token.
# * TEPO: $-\tilde s_iA_i$, one value for a whole response, 0 on held tokens, plus the mask's pull.
#
# **What to watch:** under DAPO, a single token whose ratio moved far gets the largest push (its own ratio). TEPO
# spreads that move over the response. The check below compares the largest values.

# %%
last_mb = record[-1]
credit_args = dict(old_logp=last_mb["old_logp"], advantages=last_mb["adv"], mask=last_mb["mask"])
N_last = last_mb["mask"].sum()
credit = {
    "GRPO": value_and_grad(lambda lp: grpo_loss(logp=lp, beta=0.0, **credit_args), last_mb["logp"])[1] * N_last,
    "DAPO": value_and_grad(lambda lp: dapo_loss(logp=lp, **credit_args), last_mb["logp"])[1] * N_last,
    "TEPO": value_and_grad(lambda lp: tepo_loss(logp=lp, entropy=last_mb["entropy"], old_entropy=last_mb["old_entropy"],
                                                mask_tol=TEPO_MASK_TOL, **READING, **credit_args),
                           last_mb["logp"])[1] * N_last,
}
order_rows = torch.argsort(last_mb["adv"], descending=True)                         # A > 0 on top
real_mb = last_mb["mask"].bool()
all_credit = torch.cat([g[real_mb] for g in credit.values()]).abs()                 # every real token, 3 objectives
limit = float(all_credit.quantile(0.98))           # the colour scale: one outlier must not wash out the rest
fig, axes = plt.subplots(1, 3, figsize=(12, 6), sharey=True)
for ax, (name, g) in zip(axes, credit.items()):
    shown = torch.where(real_mb, -g, torch.full_like(g, float("nan")))[order_rows]  # (b, T), NaN at padding
    image = ax.imshow(shown.float().numpy(), cmap="RdBu", vmin=-limit, vmax=limit, aspect="auto")
    for i, t in (shown.abs() > limit).nonzero().tolist():                           # off the scale: write the value
        ax.text(t, i, f"{shown[i, t].item():+.1f}", ha="center", va="center", fontsize=8, color="white",
                weight="bold")
    ax.set_facecolor("0.85")
    ax.set(title=name, xlabel="token position")
axes[0].set_ylabel("response (sorted by advantage, A > 0 on top)")
fig.colorbar(image, ax=axes, extend="both", label=f"-N dL/dlogp (blue: pushed up), colours clipped at ±{limit:.2f}")
fig.suptitle(f"Token-level credit on one off-policy mini-batch (colour scale ±{limit:.2f}: the 98th percentile of "
             f"|credit|; cells beyond it carry their value)")
plt.savefig(OUT / "06_token_credit.png", dpi=110)
plt.show()
plt.close()
beyond = {name: int((g[real_mb].abs() > limit).sum()) for name, g in credit.items()}
print(f"colour scale ±{limit:.2f} (98th percentile of |N dL/dlogp| over the {real_mb.sum().item()} real tokens x 3 "
      f"objectives); tokens beyond it, written in their cells: {beyond}")
off_mask = last_mb["mask"].bool() & ~last_mb["M"]
values_per_row = [{round(v, 6) for v in credit["TEPO"][i][off_mask[i]].tolist()} - {0.0} for i in range(len(off_mask))]
check("off the mask, TEPO's credit is one value per response (-s~_i A_i), or 0 on a held token",
      all(len(v) <= 1 for v in values_per_row), got=max(len(v) for v in values_per_row))
check("GRPO's and DAPO's credit differ when responses differ in length", not torch.allclose(credit["GRPO"], credit["DAPO"]))
largest = {name: float(g.abs().max()) for name, g in credit.items()}
print("largest |N dL/dlogp|:", {k: round(v, 2) for k, v in largest.items()})
check("DAPO's largest per-token credit exceeds TEPO's on this mini-batch", largest["DAPO"] > largest["TEPO"], got=largest)

# %% [markdown]
# ## Part 3: why the two ingredients
#
# ### Why a geometric mean: the product of token ratios explodes or vanishes with length
#
# A response's probability is the product of its tokens' probabilities. So the *true* sequence importance weight is
# $\prod_t r_{i,t}=\exp\big(\sum_t(\ell^\theta_{i,t}-\ell^{old}_{i,t})\big)$. Its log is a sum of $\lvert o_i\rvert$
# small drifts. Its spread grows like $\sqrt{\lvert o_i\rvert}$, and on long responses the weight spans orders of
# magnitude: one response would dominate the batch, another would count for nothing. The $1/\lvert o_i\rvert$ power
# (GSPO's $s_i$, TEPO's sequence likelihood) averages the drifts instead. Its log's spread *shrinks* like
# $1/\sqrt{\lvert o_i\rvert}$, so $s_i$ stays near 1, where a clip range means something.
#
# Our toy's responses are a few tokens long, so this part uses a **model**, not real responses: independent Gaussian
# token log-ratios, with the spread measured on the last mini-batch of Part 2, at lengths up to 512. Real token
# drifts are neither Gaussian nor independent. The model shows what length does, not what a real run will see.
#
# **The figure.** Left, on a log scale: the product's 90% band fans out over many decades (the title says how many),
# while $s_i$ stays near 1. On that scale the clip range 0.8 .. 1.28 (grey) is a thin line, so the right panel zooms
# on it with a linear scale. There the product's band (red) lies beyond both ends of the clip range at every length,
# and the blue band of $s_i$ narrows into it; the dotted line marks the length from which the whole blue band is
# inside (the cell prints both).

# %%
last = record[-1]
drift = (last["logp"] - last["old_logp"])[last["mask"].bool()]
sigma = max(float(drift.std()), 1e-3)
print(f"token log-ratio spread on the last mini-batch of Part 2: {sigma:.3f} nats")
lengths_grid = torch.tensor([1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
n_draws = 2000
draws = torch.randn(n_draws, int(lengths_grid.max()), generator=torch.Generator().manual_seed(3),
                    dtype=torch.float64) * sigma                                   # (draws, L_max) log-ratios
cum = draws.cumsum(-1)[:, lengths_grid - 1]                                        # (draws, lengths) sum of logs
log_prod, log_geo = cum, cum / lengths_grid                                        # log prod r, log s
qs = torch.tensor([0.05, 0.5, 0.95], dtype=torch.float64)
band_prod, band_geo = log_prod.quantile(qs, dim=0).exp(), log_geo.quantile(qs, dim=0).exp()   # (3, lengths)
for L, lo, hi, glo, ghi in zip(lengths_grid.tolist(), band_prod[0], band_prod[2], band_geo[0], band_geo[2]):
    print(f"|o| = {L:4d}: 90% of prod_t r_t in [{lo:9.3g}, {hi:9.3g}]   "
          f"of s = (prod)^(1/|o|) in [{glo:.4f}, {ghi:.4f}]")
assert band_prod[2, -1] / band_prod[0, -1] > band_geo[2, -1] / band_geo[0, -1], "the product spreads more"

inside = [L for L, lo, hi in zip(lengths_grid.tolist(), band_geo[0].tolist(), band_geo[2].tolist())
          if 0.8 < lo and hi < 1.28]
outside = [L for L, lo, hi in zip(lengths_grid.tolist(), band_prod[0].tolist(), band_prod[2].tolist())
           if lo < 0.8 and hi > 1.28]
print(f"90% bands against the clip range 0.8 .. 1.28: s_i's lies inside it from |o| = {inside[0]} on; the "
      f"product's reaches past both ends at {len(outside)} of the {len(lengths_grid)} lengths, and at |o| = "
      f"{lengths_grid[-1].item()} spans {math.log10(band_prod[2, -1] / band_prod[0, -1]):.0f} decades")
assert inside and inside == [L for L in lengths_grid.tolist() if L >= inside[0]], \
    "the text below: from some length on, s_i's band lies inside the clip range"
assert outside == lengths_grid.tolist(), "the text below: the product's band runs past the clip range at every length"

fig, (ax, zoom) = plt.subplots(1, 2, figsize=(12, 4.2))
ax.fill_between(lengths_grid, band_prod[0], band_prod[2], color="tab:red", alpha=0.25)
for panel in (ax, zoom):
    panel.plot(lengths_grid, band_prod[1], "o-", color="tab:red", label="product of token ratios (median, 90% band)")
    panel.fill_between(lengths_grid, band_geo[0], band_geo[2], color="tab:blue", alpha=0.35)
    panel.plot(lengths_grid, band_geo[1], "s-", color="tab:blue", label="its 1/|o| power, s_i (median, 90% band)")
    panel.axhspan(0.8, 1.28, color="0.55", alpha=0.35, zorder=0, label="clip range 0.8 .. 1.28")
    panel.set(xscale="log", xlabel="response length |o_i| (tokens)")
ax.set(yscale="log", ylabel="sequence weight", title=f"log scale: the product's band spans "
       f"{math.log10(band_prod[2, -1] / band_prod[0, -1]):.0f} decades at |o| = {lengths_grid[-1].item()}")
zoom.axvline(inside[0], color="tab:blue", ls=":", lw=1.2)
zoom.annotate(f"s_i's 90% band inside\nthe clip range from |o| = {inside[0]}", (inside[0], 0.62), xytext=(6, 0),
              textcoords="offset points", fontsize=8, color="tab:blue")
for y, edge, end in ((1.6, 2, "top"), (0.5, 0, "bottom")):                      # the product's band, off the panel
    zoom.annotate(f"product's 90% band: {'up' if edge else 'down'} to {band_prod[edge, -1].item():.0e} at |o| = "
                  f"{lengths_grid[-1].item()}", (lengths_grid[-1].item(), y), xytext=(-8, 6 if end == "bottom" else -6),
                  textcoords="offset points", ha="right", va=end, fontsize=8, color="tab:red",
                  arrowprops=dict(arrowstyle="->", color="tab:red"))
zoom.set(ylim=(0.5, 1.6), ylabel="sequence weight (linear)", title="zoomed on the clip range, linear scale")
fig.suptitle(f"Model draws: independent Gaussian token log-ratios, spread {sigma:.3f} nats", fontsize=10)
ax.legend(fontsize=8, loc="lower left")
fig.tight_layout()
plt.savefig(OUT / "06_product_vs_geometric_mean.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# ### Why the shipped reading clips each token's log-ratio instead
#
# The figure has a second message. The grey band is the first reading's clip range, 0.8 .. 1.28. On long responses
# the blue band of $s_i$ falls inside it (the right panel's dotted line; the cell below prints from which length).
# There the clip on $s_i$ **almost never binds**, although the same draws move single tokens by far more than 0.2
# or 0.28. A clip meant to stop tokens that moved too far sees only their average. The shipped `token_log` clip
# (GMPO's) clips *before* averaging, as in "Key equations": a held token carries no gradient, and the rest of its
# response keeps theirs.
#
# Below, on the same model draws with $A_i>0$, over length: the share of responses the first reading clips ($s_i$
# above 1.28) against the share of tokens the shipped reading holds ($x_{i,t}>0.4$). Then the same two clips on
# Part 2's real mini-batches. Their responses are short, and there both clips bind. You write this clip yourself in
# lesson 10.
#
# References: GMPO is arXiv 2507.20673.

# %%
seq_binds = (log_geo > math.log(1.28)).double().mean(0)                            # (lengths,) responses clipped
token_binds = torch.stack([(draws[:, :L] > 0.4).double().mean() for L in lengths_grid.tolist()])   # tokens held
for L, a, b in zip(lengths_grid.tolist(), seq_binds.tolist(), token_binds.tolist()):
    print(f"|o| = {L:4d}, A > 0: first reading clips {a:6.1%} of responses; token_log holds {b:6.1%} of tokens")
old_32 = torch.full((n_draws, 32), -3.0, dtype=torch.float64)                      # any old log-probs: x is what counts
clip_check = dict(old_logp=old_32, mask=torch.ones(n_draws, 32).double(),
                  advantages=torch.ones(n_draws, dtype=torch.float64), beta_mask=0.0)
st_seq = tepo_loss(logp=old_32 + draws[:, :32], ratio_clip="sequence", eps_low=0.2, eps_high=0.28, **clip_check)[1]
st_tok = tepo_loss(logp=old_32 + draws[:, :32], ratio_clip="token_log", delta_low=0.4, delta_high=0.4,
                   **clip_check)[1]
print(f"tepo_loss on the 32-token draws, A = 1: clip_frac {st_seq['clip_frac'].item():.3f} (sequence) "
      f"against {st_tok['clip_frac'].item():.3f} (token_log)")
assert abs(st_tok["clip_frac"].item() - token_binds[lengths_grid.tolist().index(32)].item()) < 1e-12, \
    "token_log's clip_frac is the share of tokens with x > delta_high when A > 0"
assert seq_binds[-1] < 0.01 < token_binds[-1], "on long responses the clip on s_i stops binding, the token clip does not"
print(f"the 90% band of s_i lies inside 0.8 .. 1.28 from |o| = {inside[0]} on (model draws)")
both_bind = []
for k, r in enumerate(record[1:], start=2):                  # the real mini-batches, off-policy from the second on
    real_args = dict(logp=r["logp"], old_logp=r["old_logp"], advantages=r["adv"], mask=r["mask"], beta_mask=0.0)
    c_seq = tepo_loss(ratio_clip="sequence", eps_low=0.2, eps_high=0.28, **real_args)[1]["clip_frac"].item()
    c_tok = tepo_loss(ratio_clip="token_log", delta_low=0.4, delta_high=0.4, **real_args)[1]["clip_frac"].item()
    print(f"real mini-batch {k} (responses of at most {int(r['mask'].sum(-1).max())} tokens): clip_frac {c_seq:.3f} "
          f"(first reading) against {c_tok:.3f} (token_log)")
    both_bind.append(c_seq > 0 and c_tok > 0)
assert any(both_bind), "on the short real responses both clips bind on some mini-batch"

fig, ax = plt.subplots(figsize=(6.5, 3.6))
ax.plot(lengths_grid, seq_binds, "s-", color="tab:blue", label="first reading: responses with s_i > 1.28")
ax.plot(lengths_grid, token_binds, "o-", color="tab:green", label="token_log: tokens with x > 0.4")
ax.set(xscale="log", xlabel="response length |o_i| (tokens)", ylabel="share clipped (A > 0)",
       title=f"where each clip binds (token spread {sigma:.3f} nats)")
ax.legend(fontsize=8)
ax.grid(alpha=0.3)
fig.tight_layout()
plt.savefig(OUT / "06_which_clip_binds.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# ### What the mask does to a real update, and what it cannot do
#
# Take the mini-batch of Part 2 with the most masked tokens. On each masked token, look at
# $N\cdot\partial\mathcal L/\partial\ell^\theta$ (times $N$, so the numbers read per token). With the `kl` action the
# gradient is the sum of
#
# * the **policy push** $-\tilde s_iA_i$ (minus: the loss goes down when $\ell^\theta$ goes up; 0 on a held token),
#   the same as with $\beta_M=0$;
# * the **penalty's pull** $\beta_M\,\partial k_3/\partial\ell^\theta=\beta_M(1-e^{-\Delta})$, with
#   $\Delta=\ell^\theta-\ell^{old}$ the change of the token's log-probability since the rollout: it pulls the
#   token back towards the old policy, down if it rose ($\Delta>0$), up if it fell.
#
# On a token that rose, $0<1-e^{-\Delta}<1$: the pull is always smaller than $\beta_M$. A masked token has $A_i>0$
# and $\tilde s_i\approx1$. So with $\beta_M=1$ the penalty slows a token that rose, and cannot stop one with
# $A_i\ge1$ (a lone right answer in a group of 8 has $A=2.47$, lesson 2). With $\beta_M=10$ it can stop it once $\Delta$ is
# large enough. On a masked token that *fell* since the rollout the pull points the same way as the push: the penalty
# pushes it further up (the cell counts both kinds). The `gate` action instead removes a masked token's policy
# gradient: exactly zero, whatever $A_i$.

# %%
k_most = max(range(len(record)), key=lambda k: int(record[k]["M"].sum()))
r = record[k_most]
demo_mask = r["M"] if r["M"].any() else tepo_mask(r["adv"], r["mask"], criterion="positive")   # fallback: A > 0
N_mb = r["mask"].sum()
base = dict(old_logp=r["old_logp"], advantages=r["adv"], mask=r["mask"], entropy=r["entropy"],
            old_entropy=r["old_entropy"], mask_tol=TEPO_MASK_TOL, ratio_clip="token_log", delta_low=0.4, delta_high=0.4,
            mask_criterion="measured" if r["M"].any() else "positive", mask_kl="k3")
_, g_free = value_and_grad(lambda lp: tepo_loss(logp=lp, beta_mask=0.0, **base), r["logp"])
_, g_kl1 = value_and_grad(lambda lp: tepo_loss(logp=lp, beta_mask=1.0, mask_action="kl", **base), r["logp"])
_, g_kl10 = value_and_grad(lambda lp: tepo_loss(logp=lp, beta_mask=10.0, mask_action="kl", **base), r["logp"])
_, g_gate = value_and_grad(lambda lp: tepo_loss(logp=lp, beta_mask=1.0, mask_action="gate", **base), r["logp"])
rise = (r["logp"] - r["old_logp"])                                                 # Delta, (b, T)
print(f"mini-batch {k_most + 1}, {int(demo_mask.sum())} masked tokens; N * dL/dlogp on each:")
print("   A_i    Delta   policy push   k3 pull (beta 1)   net (beta 1)   net (beta 10)   gate")
for i, t in demo_mask.nonzero().tolist():
    pull = (g_kl1 - g_free)[i, t] * N_mb
    print(f"{r['adv'][i].item():+6.2f} {rise[i, t].item():+8.4f} {g_free[i, t].item() * N_mb:+13.4f} "
          f"{pull.item():+18.4f} {g_kl1[i, t].item() * N_mb:+14.4f} {g_kl10[i, t].item() * N_mb:+15.4f} "
          f"{g_gate[i, t].item() * N_mb:+6.1f}")
pull_all = (g_kl1 - g_free)[demo_mask] * N_mb
predicted_pull = (1 - torch.exp(-rise[demo_mask])).to(pull_all.dtype)
assert torch.allclose(pull_all, predicted_pull, atol=1e-5), "the k3 pull is beta_M (1 - e^-Delta)"
rose = rise[demo_mask] > 0
assert bool((pull_all[rose] < 1.0).all()), "with beta_M = 1 the pull on a token that rose never reaches 1"
assert bool((g_gate[demo_mask] == 0).all()), "the gate leaves a masked token no policy gradient"
assert torch.equal(g_gate[~demo_mask], g_free[~demo_mask]), "the gate leaves the other tokens alone"
slowed = int(((pull_all > 0) & (g_free[demo_mask] < 0)).sum())                    # pull against the push
pushed = int(((pull_all < 0) & (g_free[demo_mask] < 0)).sum())                    # pull with the push
print(f"of the {int(demo_mask.sum())} masked tokens, the k3 pull slows {slowed} (they rose) and pushes {pushed} "
      f"further up (they fell)")
check("the k3 pull points down exactly on the masked tokens that rose", torch.equal(pull_all > 0, rose))

# %% [markdown]
# ### On the first step the penalty is inert, under every criterion
#
# The measured mask is empty at $\theta=\theta_{old}$. Other criteria do not look at $\theta$'s entropy: the
# `predicted` one below, or `positive` (every token with $A>0$). They give a non-empty mask there. Does the penalty
# act then? No: $k_3$, $k_2$ and $\lvert k_1\rvert$ all have zero value and zero *gradient* at
# $\ell^\theta=\ell^{old}$. Whatever the criterion, the penalty acts only from the second optimizer step on a
# rollout.

# %%
old1, new1, adv1, mask1 = make_batch(lengths, drift=0.0)                          # theta = theta_old
ent1 = torch.rand(old1.shape, generator=gen, dtype=torch.float64) * mask1
score1 = torch.randn(old1.shape, generator=gen, dtype=torch.float64)               # any S(a): half "decrease"
TOKEN_CLIP = dict(ratio_clip="token_log", delta_low=0.4, delta_high=0.4)
g_off, _ = gradient(tepo_loss, old1, new1, adv1, mask1, beta_mask=0.0, **TOKEN_CLIP)
for criterion in ("measured", "predicted", "positive"):
    for kind in ("k3", "k2", "k1_abs"):
        g_on, st_on = gradient(tepo_loss, old1, new1, adv1, mask1, beta_mask=10.0, mask_action="kl", mask_kl=kind,
                               mask_criterion=criterion, entropy=ent1, old_entropy=ent1, entropy_drop_score=score1,
                               **TOKEN_CLIP)
        assert torch.equal(g_on, g_off) and st_on["mask_kl"] == 0, f"{criterion}/{kind} must be inert on-policy"
    print(f"first step, criterion {criterion:9s}: mask_frac {st_on['mask_frac'].item():.2f}, "
          "gradient with beta_M = 10 identical to beta_M = 0 for k3, k2 and |k1|")

# %% [markdown]
# ### The `predicted` criterion
#
# Instead of waiting for the entropy to drop, predict it. For $\pi=\mathrm{softmax}(z)$, raising $\log\pi_a$ of the
# sampled token moves the logits along $e_a-\pi$. To first order the entropy changes by $-\eta\,S(a)$, with
# $S(a)=\pi_a(\log\pi_a+H)-\sum_v\pi_v^2(\log\pi_v+H)$ (`predicted_entropy_drop_score`). When $S(a)>0$,
# reinforcing $a$ sharpens the distribution. Typically $a$ is then already likely; reinforcing an unlikely token
# flattens the distribution. We check this on a small softmax with a real gradient step. Then we apply it to Part 2's
# first mini-batch: there the measured mask is empty and the predicted one is not (but, as above, inert on that
# step).

# %%
z = torch.randn(6, generator=gen, dtype=torch.float64)
agree = 0
for a in range(6):
    zz = z.clone().requires_grad_(True)
    torch.log_softmax(zz, 0)[a].backward()                                        # d log pi_a / dz
    h_before = -(torch.softmax(z, 0) * torch.log_softmax(z, 0)).sum()
    z_after = z + 1e-4 * zz.grad
    h_after = -(torch.softmax(z_after, 0) * torch.log_softmax(z_after, 0)).sum()
    S = predicted_entropy_drop_score(torch.log_softmax(z, 0)[None, None], torch.tensor([[a]]))[0, 0]
    agree += int((S > 0) == (h_after < h_before))
    print(f"token {a}: pi_a {torch.softmax(z, 0)[a]:.3f}  S(a) {S.item():+.4f}  "
          f"entropy change {h_after - h_before:+.2e}")
assert agree == 6, "the sign of S(a) predicts the entropy change of a small step"
first_mb = rollout.select(record[0]["rows"])
with torch.no_grad():
    _, _, logprobs0 = score_rollout(warm_model, first_mb, return_logprobs=True)
S0 = predicted_entropy_drop_score(logprobs0, first_mb.response_ids)
M_pred = tepo_mask(record[0]["adv"], first_mb.mask, criterion="predicted", entropy_drop_score=S0)
n_positive = int(((record[0]["adv"] > 0)[:, None] & first_mb.mask.bool()).sum())
print(f"Part 2's first mini-batch: measured mask {int(record[0]['M'].sum())} tokens, predicted mask "
      f"{int(M_pred.sum())} of the {n_positive} tokens with A > 0")

# %% [markdown]
# ## Part 4: the mask in training (β_M = 1 against β_M = 0)
#
# In Part 2 the mask held a handful of tokens, and only after the first step. To see what it changes in training,
# the mask needs a rollout that serves many optimizer steps, so that the policy drifts far from the one that
# sampled. The project ran that as a pre-registered experiment (experiment B). The task is `add_or_cot`: 3-digit
# sums, answered either directly or in worked steps (lesson 12). Each rollout serves **8 optimizer steps** (two
# passes over 4 mini-batches). Each run has 40 iterations; each arm has 8 seeds (1000-1007). Otherwise every arm is
# TEPO as shipped, with dynamic sampling. The three arms differ only in the mask:
#
# | arm | mask |
# |---|---|
# | B1 | as shipped: β_M = 1 on tokens with $A>0$ whose entropy fell |
# | B2 | β_M = 0: no mask |
# | B3 | β_M = 1 on every token with $A>0$ (`mask_criterion="positive"`) |
#
# Three predictions were fixed before the runs. **B-H1**: B1 keeps a higher policy entropy than B2. The entropy is
# taken over *all* sampled answers (`charts/entropy_sampled`), not only the groups that train, and averaged over the
# last 10 iterations. **B-H2**: B1 ends with a higher pass@4 than B2. **B-H3**: B1 learns faster than B3 (mean
# held-out accuracy over the evaluations).
#
# References: protocol and results in `research/mechanisms/README.md`, experiment B. The curves are
# `lessons/data/mechanisms_mask.json`, made by `lessons/data/thin_mask.py` (`lessons/data/README.md` says which
# runs).

# %%
MASK_DATA = json.loads((LESSONS_DIR / "data" / "mechanisms_mask.json").read_text())
MASK_ARMS = {"B1": "tepo", "B2": "tepo:beta_mask=0", "B3": "tepo:mask_criterion=positive"}
for arm, entry in MASK_ARMS.items():
    print(f"{arm}: {MASK_DATA['entries'][entry]['label']}")
check("every arm of experiment B has seeds 1000-1007",
      all(list(MASK_DATA["runs"][e]) == [str(s) for s in range(1000, 1008)] for e in MASK_ARMS.values()),
      got={a: list(MASK_DATA["runs"][e]) for a, e in MASK_ARMS.items()})


def arm_curve(arm, key):
    """(iterations, mean, lowest, highest) over the arm's seeds of ``key``, at the rows that record it."""
    runs = list(MASK_DATA["runs"][MASK_ARMS[arm]].values())
    steps = [s for s, v in zip(runs[0]["step"], runs[0][key]) if v is not None]
    columns = list(zip(*[[v for v in run[key] if v is not None] for run in runs]))   # (rows, seeds)
    return steps, [sum(c) / len(c) for c in columns], [min(c) for c in columns], [max(c) for c in columns]


def mask_per_seed(arm, fn):
    """``fn(run)`` for every seed of ``arm``."""
    return [fn(run) for run in MASK_DATA["runs"][MASK_ARMS[arm]].values()]


def recorded(run, key):
    return [v for v in run[key] if v is not None]


def entropy_end(run):
    """The tested number of B-H1: the mean all-sample entropy of the last 10 iterations."""
    return sum(recorded(run, "charts/entropy_sampled")[-10:]) / 10


def pass4_end(run):
    return recorded(run, "eval/pass@4")[-1]


def mean_accuracy(run):
    accs = recorded(run, "eval/greedy_acc/all")
    return sum(accs) / len(accs)


# The curves are rounded to 5 digits; the tests used the unrounded summaries. The two must agree.
for arm, entry in MASK_ARMS.items():
    for name, fn, metric in (("entropy over the last 10 iterations", entropy_end, "entropy_sampled_last"),
                             ("final pass@4", pass4_end, "pass_at_k_final"),
                             ("mean held-out accuracy", mean_accuracy, "acc_auc")):
        cmp(f"{arm}: {name}, from the curves against the summary", mask_per_seed(arm, fn),
            [MASK_DATA["summary"][entry][s][metric] for s in MASK_DATA["runs"][entry]], atol=1e-5, quiet=True)
print("the curves give every seed's tested numbers (entropy at the end, pass@4, mean accuracy)")

# %% [markdown]
# ### Figure: the mask ablation
#
# Top row: mean over the 8 seeds, with a band from the lowest to the highest seed. Left: the entropy over all
# sampled answers (log scale). Right: the share of tokens the mask flags on the later optimizer steps of a rollout.
# B2 measures this share without applying the mask.
#
# Bottom row: held-out accuracy, evaluated every 10 iterations. Left and middle: greedy accuracy and pass@4 (the share
# of prompts with a right answer among 4 samples), each arm's mean over its 8 seeds with a bar from its lowest to its
# highest seed; the arms are drawn side by side at each evaluation, not on top of each other. Right: each arm's mean
# greedy accuracy minus B2's (no mask), with a band of ±1 standard error of that difference (Welch's, from the 8 seeds
# of each arm). A band that covers 0 is a difference these seeds do not resolve.

# %%
MASK_STYLE = {"B1": ("tab:red", "-"), "B2": ("0.25", "-"), "B3": ("tab:green", "--")}
MASK_LABEL = {"B1": "B1: mask as shipped (beta_M 1)", "B2": "B2: no mask (beta_M 0)",
              "B3": "B3: mask on every A > 0 token"}


def evals_per_seed(arm, key):
    """(iterations, values) of an evaluation ``key``: one row per seed of ``arm``, one column per evaluation."""
    runs = list(MASK_DATA["runs"][MASK_ARMS[arm]].values())
    steps = [s for s, v in zip(runs[0]["step"], runs[0][key]) if v is not None]
    return steps, torch.tensor([recorded(run, key) for run in runs], dtype=torch.float64)   # (seeds, evals)


fig = plt.figure(figsize=(14, 8))
grid = fig.add_gridspec(2, 6)
ax_entropy, ax_mask = fig.add_subplot(grid[0, :3]), fig.add_subplot(grid[0, 3:])
ax_greedy, ax_pass, ax_diff = (fig.add_subplot(grid[1, 2 * k:2 * k + 2]) for k in range(3))
for ax, key, title in ((ax_entropy, "charts/entropy_sampled", "entropy over all samples (nats)"),
                       (ax_mask, "tepo/mask_frac_later_steps", "mask fraction, later steps")):
    for arm in MASK_ARMS:
        steps, mean, low, high = arm_curve(arm, key)
        color, ls = MASK_STYLE[arm]
        ax.plot(steps, mean, color=color, ls=ls, label=MASK_LABEL[arm])
        ax.fill_between(steps, low, high, color=color, alpha=0.15)
    ax.set(title=title + " (band: lowest to highest seed)", xlabel="iteration")
    ax.grid(alpha=0.3)
ax_entropy.set_yscale("log")
ax_entropy.legend(fontsize=8)
DODGE = {"B1": -1.2, "B2": 0.0, "B3": 1.2}                                       # iterations, to set the arms apart
for ax, key, title in ((ax_greedy, "eval/greedy_acc/all", "greedy accuracy"), (ax_pass, "eval/pass@4", "pass@4")):
    for arm in MASK_ARMS:
        steps, values = evals_per_seed(arm, key)
        mean = values.mean(0)
        color, ls = MASK_STYLE[arm]
        ax.errorbar([s + DODGE[arm] for s in steps], mean, yerr=torch.stack([mean - values.min(0).values,
                                                                             values.max(0).values - mean]),
                    color=color, ls=ls, marker="o", ms=4, capsize=3, label=arm)
    ax.set(title=f"{title} (mean; bar: lowest to highest seed)", xlabel="iteration", ylim=(None, 1.01))
    ax.grid(alpha=0.3)
ax_greedy.legend(fontsize=8, loc="lower right")
eval_steps, control = evals_per_seed("B2", "eval/greedy_acc/all")
acc_diff = {}
for arm in ("B1", "B3"):
    _, values = evals_per_seed(arm, "eval/greedy_acc/all")
    diff = values.mean(0) - control.mean(0)
    se = (values.var(0) / values.size(0) + control.var(0) / control.size(0)).sqrt()    # Welch's standard error
    acc_diff[arm] = (diff, se)
    color, ls = MASK_STYLE[arm]
    ax_diff.plot(eval_steps, diff, color=color, ls=ls, marker="o", ms=4, label=f"{arm} - B2")
    ax_diff.fill_between(eval_steps, diff - se, diff + se, color=color, alpha=0.2)
ax_diff.axhline(0, color="0.25", lw=1)
ax_diff.set(title="greedy accuracy minus B2's (band: ±1 s.e.)", xlabel="iteration")
ax_diff.grid(alpha=0.3)
ax_diff.legend(fontsize=8)
fig.suptitle("Experiment B: add_or_cot, 8 optimizer steps per rollout, 8 seeds per arm")
fig.tight_layout()
plt.savefig(OUT / "06_mask_ablation.png", dpi=110)
plt.show()
plt.close()
for arm, (diff, se) in acc_diff.items():
    print(f"{arm} - B2, mean greedy accuracy at iterations {eval_steps}: "
          + ", ".join(f"{d:+.3f} ± {e:.3f}" for d, e in zip(diff.tolist(), se.tolist())))

end = {arm: mask_per_seed(arm, entropy_end) for arm in MASK_ARMS}
start = {arm: arm_curve(arm, "charts/entropy_sampled")[1][0] for arm in MASK_ARMS}
mask_curves = {arm: arm_curve(arm, "tepo/mask_frac_later_steps")[1] for arm in MASK_ARMS}   # iterations 1-40
mask_mean = {arm: sum(c) / len(c) for arm, c in mask_curves.items()}
for arm in MASK_ARMS:
    print(f"{arm}: entropy {start[arm]:.3f} at iteration 1 -> {sum(end[arm]) / 8:.4f} over the last 10 "
          f"(seeds {min(end[arm]):.4f} .. {max(end[arm]):.4f}); mask fraction on later steps, run mean "
          f"{mask_mean[arm]:.3f}")
check("text: every arm ends below a fifth of its starting entropy",
      all(sum(end[a]) / 8 < start[a] / 5 for a in MASK_ARMS), got={a: (start[a], sum(end[a]) / 8) for a in MASK_ARMS})
entropy_mean = {arm: arm_curve(arm, "charts/entropy_sampled")[1] for arm in MASK_ARMS}       # iterations 1-40
check("text: the first rollout is the same in B1 and B2 (same seed, same warm start)",
      entropy_mean["B1"][0] == entropy_mean["B2"][0], got=(entropy_mean["B1"][0], entropy_mean["B2"][0]))
check("text: from iteration 2 on, B1's mean entropy is above B2's at every iteration",
      all(a > b for a, b in zip(entropy_mean["B1"][1:], entropy_mean["B2"][1:])),
      got=[i + 2 for i, (a, b) in enumerate(zip(entropy_mean["B1"][1:], entropy_mean["B2"][1:])) if a <= b])
check("text: every B1 seed ends with more entropy than every B2 seed", min(end["B1"]) > max(end["B2"]),
      got=(min(end["B1"]), max(end["B2"])))
check("text: B1 ends with more than 1.5 times B2's entropy", sum(end["B1"]) > 1.5 * sum(end["B2"]),
      got=sum(end["B1"]) / sum(end["B2"]))
check("text: B2 measures about the same mask fraction as B1 (run means within 0.01)",
      abs(mask_mean["B1"] - mask_mean["B2"]) < 0.01, got=mask_mean)
check("text: B3's mask flags four to six times as many tokens as B1's", 4 < mask_mean["B3"] / mask_mean["B1"] < 6,
      got=mask_mean["B3"] / mask_mean["B1"])
gap, gap_se = acc_diff["B1"]                                                    # B1 - B2 at each evaluation
at = {step: k for k, step in enumerate(eval_steps)}
check("text: B1's mean greedy accuracy trails B2's at iterations 10 and 20, by less than 0.1 and under 2 s.e. each",
      all(-0.1 < gap[at[i]] < 0 and -gap[at[i]] < 2 * gap_se[at[i]] for i in (10, 20)),
      got=[(round(gap[at[i]].item(), 3), round(gap_se[at[i]].item(), 3)) for i in (10, 20)])
check("text: by iteration 40 the gap is under 0.01", abs(gap[at[40]]) < 0.01, got=gap[at[40]].item())

# %% [markdown]
# **Reading the figure.** All three arms lose most of their entropy: each ends below a fifth of where it started.
# The mask slows that fall; it does not stop it. The first rollout is the same in B1 and B2. From the second
# iteration on, B1's mean entropy is above B2's at every iteration. Every B1 seed ends above every B2 seed, and B1
# ends with more than 1.5 times B2's entropy.
#
# The mask fraction is about the same in B1 and B2. So the mask does not make fewer tokens qualify; it makes moving
# them cost (Part 3's $k_3$ pull). B3 flags four to six times as many tokens, because it drops the entropy
# condition. Greedy accuracy and pass@4 end near the ceiling in every arm. On the way, B1's mean greedy accuracy
# trails B2's at iterations 10 and 20, by less than 0.1 (the bottom-right panel; the cell prints each difference with
# its standard error). Each gap is under two standard errors, so these seeds do not resolve it evaluation by
# evaluation, and by iteration 40 it is under 0.01.
#
# ### The pre-registered tests
#
# Each test compares two arms' per-seed numbers with Welch's t, two-sided. Holm's method corrects for the three
# tests, at 5%. A test is **supported** when its Holm p is at most 0.05 with the predicted sign (**contradicted**
# with the other sign), and **not distinguishable** when its Holm p is above 0.05. Each test is printed beside the
# smallest difference its seeds would detect with 80% power. The cell recomputes the tests from the curves.
#
# References: the official verdicts are in `research/mechanisms/README.md`, computed by `research/mechanisms/mechanisms.py` from the
# unrounded summaries; a recomputed p-value may differ in its last digits.

# %%
MASK_TESTS = {"B-H1 entropy": ("B1", "B2", entropy_end), "B-H2 pass@4": ("B1", "B2", pass4_end),
              "B-H3 entropy condition": ("B1", "B3", mean_accuracy)}
mask_results = {name: welch_test(mask_per_seed(a, fn), mask_per_seed(b, fn)) for name, (a, b, fn) in MASK_TESTS.items()}
mask_holm = holm({name: r["p"] for name, r in mask_results.items()})
mask_verdicts, mask_mde = {}, {}
for name, (a, b, fn) in MASK_TESTS.items():
    r = mask_results[name]
    mask_verdicts[name] = ("not distinguishable" if mask_holm[name] > 0.05
                           else "supported" if r["diff"] > 0 else "contradicted")
    mask_mde[name] = min_detectable_effect_of(mask_per_seed(a, fn), mask_per_seed(b, fn), alpha=0.05 / len(MASK_TESTS))
    print(f"{name:23s} {a} - {b}: {r['diff']:+.4f} [{r['low']:+.4f}, {r['high']:+.4f}], p {r['p']:.2g}, "
          f"Holm {mask_holm[name]:.2g}, detectable {mask_mde[name]:.4f} -> {mask_verdicts[name]}")
final_pass = {arm: sum(mask_per_seed(arm, pass4_end)) / 8 for arm in MASK_ARMS}
mean_acc = {arm: sum(mask_per_seed(arm, mean_accuracy)) / 8 for arm in MASK_ARMS}
print("final pass@4, mean over seeds:", {a: round(v, 3) for a, v in final_pass.items()},
      "  mean held-out accuracy:", {a: round(v, 3) for a, v in mean_acc.items()})
check("text: the verdicts are those of research/mechanisms/README.md",
      mask_verdicts == {"B-H1 entropy": "supported", "B-H2 pass@4": "not distinguishable",
                        "B-H3 entropy condition": "not distinguishable"}, got=mask_verdicts,
      hint="the data no longer fit the paragraph below: rewrite it from what the cell prints")
check("text: B1's entropy lead is between 0.01 and 0.02 nats, 2.5 to 3.5 times the detectable difference",
      0.01 < mask_results["B-H1 entropy"]["diff"] < 0.02
      and 2.5 < mask_results["B-H1 entropy"]["diff"] / mask_mde["B-H1 entropy"] < 3.5,
      got=(mask_results["B-H1 entropy"]["diff"], mask_mde["B-H1 entropy"]))
check("text: every arm's pass@4 ends above 0.95 (a ceiling)", min(final_pass.values()) > 0.95, got=final_pass)
check("text: B1's mean held-out accuracy is no higher than B2's", mean_acc["B1"] <= mean_acc["B2"], got=mean_acc)
final_acc = {arm: sum(mask_per_seed(arm, lambda run: recorded(run, "eval/greedy_acc/all")[-1])) / 8
             for arm in MASK_ARMS}
check("text: every arm ends above 0.95 greedy accuracy (near the ceiling)", min(final_acc.values()) > 0.95,
      got=final_acc)

# %% [markdown]
# **What the tests say.**
#
# * **B-H1, entropy: supported.** The mask keeps the entropy over all samples higher, by between 0.01 and 0.02 nats
#   (the printout has the number). That is about three times the smallest difference these seeds detect.
# * **B-H2, pass@4: not distinguishable.** Every arm ends with pass@4 above 0.95. At that ceiling there is little
#   left to tell apart.
# * **B-H3, the entropy condition: not distinguishable.** Masking every token with $A>0$ learned no slower, by these
#   seeds.
#
# Beside the tests (descriptive, not pre-registered): B1's mean held-out accuracy is no higher than B2's. The mask
# keeps a little more entropy. Whether that entropy buys accuracy or pass@4 this experiment could not tell: every arm
# ends near the ceiling, where there is little left to gain. A second, pre-registered round asked it where accuracy
# has headroom (`countdown` at about 35%, pass@32 from 32 samples, 4, 8 and 16 steps per rollout, 24 runs per arm):
# the mask kept the entropy higher at 16 steps only, and every pass@32 and accuracy difference stayed within ±0.03
# (lesson 12's last part; `research/mechanisms/round2.md`). The task is a toy and the model is tiny; the paper trains
# large models on math reasoning.

# %% [markdown]
# ### Run it yourself: a one-minute ablation
#
# Experiment B took 24 runs of 40 iterations. This is a version you run yourself in under a minute (the cell prints
# its CPU time): the mask as shipped (B1) against $\beta_M=0$ (B2), each run trained by the core's `Trainer` from a
# copy of this lesson's warm model (Part 2: one-digit sums, a tiny model). It keeps experiment B's 8 optimizer steps
# per rollout (2 passes over 4 mini-batches), its temperature 0.7 and its 40 iterations, with 16 prompts x 8 answers
# per rollout and 4 seeds per arm (0-3). The learning rate is 1e-3, five times experiment B's 2e-4 (the cell checks
# both of experiment B's settings against `research/mechanisms/mechanisms.py`), so that the short run lowers the
# entropy in every run (checked; the cell prints by how much). B1 and B2 share each seed's first rollout (checked).
#
# It is **off by default**, so that the lesson stays quick: set `RUN_ABLATION = True` in the cell (or run the lesson
# with `MINITEPO_ABLATION=1`). The cell prints each seed's entropy over all samples in the last 10 iterations
# (B-H1's number), the difference B1 - B2 with Welch's 95% interval, and the smallest difference 4 seeds per arm
# would detect (80% power, 5% two-sided; with so few seeds that formula is optimistic, so the true smallest
# difference is, if anything, larger), next to experiment B's; the figure puts your curves beside experiment B's.
#
# **What it can show, and what it cannot.** It shows the mechanism at work in a real training loop: in B1 the $k_3$
# penalty is paid, in B2 it is never paid, and both arms flag tokens on the later steps of a rollout (B2 measures
# the mask without applying it). Whether the mask keeps the entropy higher it can show only if Welch's test resolves
# the difference (p at most 0.05; the verdict line says); otherwise the run is an illustration, not a test. Four seeds
# are few, and the task, the model, the warm start and the learning rate all differ from experiment B's, so neither
# the size nor the sign of what you see carries over to experiment B, or back.

# %%
RUN_ABLATION = os.environ.get("MINITEPO_ABLATION") == "1"   # set True to run it (under a minute)
ABLATION = dict(algo="tepo", iterations=40, prompts=16, group_size=8, minibatches=4, epochs=2, lr=1e-3,
                temperature=0.7)                       # TrainerConfig's other fields keep their defaults
ABLATION_ARMS = {"B1": {}, "B2": {"beta_mask": 0.0}}   # the mask as shipped; the mask's penalty off
ABLATION_SEEDS = (0, 1, 2, 3)


def run_ablation():
    """{arm: [one history per seed]}: every run trains a fresh copy of the warm model with the core's Trainer."""
    return {arm: [Trainer(TrainerConfig(objective=objective, seed=seed, **ABLATION), copy.deepcopy(warm_model),
                          tokenizer, task).train(eval_every=ABLATION["iterations"]) for seed in ABLATION_SEEDS]
            for arm, objective in ABLATION_ARMS.items()}


def yours_curve(runs, key):
    """(iterations, mean, lowest, highest) over seeds of the per-iteration ``key`` (the step-0 record left out)."""
    rows = torch.tensor([[h[key] for h in hist[1:]] for hist in runs], dtype=torch.float64)   # (seeds, iterations)
    return list(range(1, rows.size(1) + 1)), rows.mean(0), rows.min(0).values, rows.max(0).values


if RUN_ABLATION:
    experiment_b = (LESSONS_DIR.parent / "research" / "mechanisms" / "mechanisms.py").read_text()
    check("text: experiment B sampled at temperature 0.7 and trained at learning rate 2e-4 (its protocol's settings)",
          "--temperature 0.7 " in experiment_b and "--lr 2e-4 " in experiment_b)
    print(f"setting: {ABLATION}, seeds {ABLATION_SEEDS}; arms {ABLATION_ARMS}")
    cpu_start = sum(os.times()[:2])
    yours = run_ablation()
    cpu_ablation = sum(os.times()[:2]) - cpu_start
    yours_end = {arm: [sum(h["charts/entropy_sampled"] for h in hist[-10:]) / 10 for hist in runs]
                 for arm, runs in yours.items()}                           # B-H1's number: the last 10 iterations
    for arm, runs in yours.items():
        print(f"{arm}: entropy over all samples, last 10 iterations, seeds {ABLATION_SEEDS}: "
              f"{[round(v, 4) for v in yours_end[arm]]} (mean {sum(yours_end[arm]) / len(runs):.4f}); greedy "
              f"accuracy {runs[0][0]['eval/greedy_acc/all']:.2f} -> "
              f"{[round(hist[-1]['eval/greedy_acc/all'], 2) for hist in runs]}")
        first = sum(hist[1]["charts/entropy_sampled"] for hist in runs) / len(runs)
        print(f"    entropy, mean over seeds: {first:.3f} at iteration 1 -> {sum(yours_end[arm]) / len(runs):.3f} over "
              f"the last 10 iterations ({sum(yours_end[arm]) / len(runs) / first:.0%} of the start)")
    yours_test = welch_test(yours_end["B1"], yours_end["B2"])
    yours_mde = min_detectable_effect_of(yours_end["B1"], yours_end["B2"], alpha=0.05)
    b2_mean = sum(yours_end["B2"]) / len(yours_end["B2"])
    b_mde = min_detectable_effect_of(mask_per_seed("B1", entropy_end), mask_per_seed("B2", entropy_end), alpha=0.05)
    b_b2 = sum(mask_per_seed("B2", entropy_end)) / 8
    print(f"your run: B1 - B2 = {yours_test['diff']:+.4f} [{yours_test['low']:+.4f}, {yours_test['high']:+.4f}] nats, "
          f"p {yours_test['p']:.2g}; detectable with {len(ABLATION_SEEDS)} seeds per arm: {yours_mde:.4f} nats "
          f"({yours_mde / b2_mean:.0%} of B2's mean)")
    print(f"experiment B: B1 - B2 = {mask_results['B-H1 entropy']['diff']:+.4f} nats "
          f"({mask_results['B-H1 entropy']['diff'] / b_b2:.0%} of B2's mean); detectable with "
          f"{len(mask_per_seed('B2', entropy_end))} seeds per arm: "
          f"{b_mde:.4f} nats ({b_mde / b_b2:.0%})")
    print("verdict: " + (f"resolved (p <= 0.05): B1 keeps {'more' if yours_test['diff'] > 0 else 'less'} entropy "
                         "than B2 in this setting" if yours_test["p"] <= 0.05
                         else "not resolved (p > 0.05): an illustration, not a test")
          + f"; the ablation took {cpu_ablation:.0f} s of CPU")
    check("your run: each seed's first rollout is the same in B1 and B2 (same seed, same warm model)",
          all(a[1]["charts/entropy_sampled"] == b[1]["charts/entropy_sampled"]
              for a, b in zip(yours["B1"], yours["B2"])))
    check("your run: B1 pays the k3 penalty, B2 never does",
          all(sum(h["losses/mask_kl"] for h in hist[1:]) > 0 for hist in yours["B1"])
          and all(h["losses/mask_kl"] == 0 for hist in yours["B2"] for h in hist[1:]))
    check("your run: both arms flag tokens on the later steps of a rollout",
          all(sum(h["tepo/mask_frac_later_steps"] for h in hist[1:]) > 0 for runs in yours.values() for hist in runs))
    check("text: the entropy falls in every run (first iteration against the mean of the last 10)",
          all(end < hist[1]["charts/entropy_sampled"] for arm, runs in yours.items()
              for hist, end in zip(runs, yours_end[arm])),
          got={arm: [(round(hist[1]["charts/entropy_sampled"], 3), round(end, 3)) for hist, end in
                     zip(runs, yours_end[arm])] for arm, runs in yours.items()})
    fig, (ax_yours, ax_b) = plt.subplots(1, 2, figsize=(12, 4))
    for arm in ABLATION_ARMS:
        color, ls = MASK_STYLE[arm]
        for ax, (steps, mean, low, high) in ((ax_yours, yours_curve(yours[arm], "charts/entropy_sampled")),
                                             (ax_b, arm_curve(arm, "charts/entropy_sampled"))):
            ax.plot(steps, mean, color=color, ls=ls, label=MASK_LABEL[arm])
            ax.fill_between(steps, low, high, color=color, alpha=0.15)
    ax_yours.set(title=f"your run: 1-digit add, {len(ABLATION_SEEDS)} seeds per arm", yscale="log",
                 xlabel="iteration", ylabel="entropy over all samples (nats)")
    ax_b.set(title="experiment B (committed): add_or_cot, 8 seeds per arm", yscale="log", xlabel="iteration")
    for ax in (ax_yours, ax_b):
        ax.grid(alpha=0.3)
    ax_yours.legend(fontsize=8)
    fig.suptitle("The mask (B1) against beta_M = 0 (B2): mean over seeds, band from the lowest to the highest seed")
    fig.tight_layout()
    plt.savefig(OUT / "06_mask_ablation_yours.png", dpi=110)
    plt.show()
    plt.close()
else:
    print("the one-minute ablation is off: set RUN_ABLATION = True above (or MINITEPO_ABLATION=1) and rerun this cell")

# %% [markdown]
# ## Exercises
#
# **1. Build the mask by hand.** From a mini-batch's advantages (B,), response mask, current and old
# entropies, and the guard $\tau$, build $M$ as a (B, T) bool tensor. It must equal `tepo_mask` and give
# `stats["mask_frac"]` on every recorded mini-batch, and obey the spec on a random batch with an empty row (a response
# cut to nothing) and on a batch from a fresh (untrained) model, whose prompts have two lengths. Remember that values
# at padded positions are junk.

# %%
def my_mask(advantages, mask, entropy, old_entropy, tol):
    """M_it = [A_i > 0] and [H_theta_it < H_old_it - tol] and [m_it = 1]."""
    ### BEGIN SOLUTION
    real = mask.bool()
    dropped = entropy < old_entropy - tol
    return (advantages > 0)[:, None] & dropped & real
    ### END SOLUTION


mask_hint = "M = (A > 0)[:, None] & (entropy < old_entropy - tol) & mask.bool(): strictly A > 0, and never padding"
with exercise(1, my_mask):
    for k, r in enumerate(record):
        M = my_mask(r["adv"], r["mask"], r["entropy"], r["old_entropy"], TEPO_MASK_TOL)
        cmp(f"mask M, mini-batch {k + 1}", M, r["M"], hint=mask_hint)
        cmp(f"mask_frac, mini-batch {k + 1}", M.sum().item() / r["mask"].sum().item(), r["stats"]["mask_frac"].item(),
            atol=1e-6, hint="mask_frac = masked tokens / real tokens")
    old, new, adv, mask = make_batch([2, 5, 3, 7, 1, 0, 6, 2], drift=0.1)          # row 5: A > 0 and no real token
    adv = torch.where(adv.abs() > 0.9, adv, torch.zeros_like(adv))                 # some advantages exactly 0
    h_old = torch.rand(old.shape, generator=gen, dtype=torch.float64) * mask
    h_new = h_old + 0.1 * torch.randn(old.shape, generator=gen, dtype=torch.float64)   # junk at padding too
    cmp("mask M, random batch with A = 0 rows, an empty row and junk at padding", my_mask(adv, mask, h_new, h_old, 0.0),
        tepo_mask(adv, mask, entropy=h_new, old_entropy=h_old, tol=0.0), hint=mask_hint)
    # a fresh (untrained) model on `mul` prompts of two lengths (`1*3=` is left-padded beside `46*9=`), one step on it:
    # most of its answers run to the length limit, and it may sample PAD as a real token (the printout counts both)
    with torch.random.fork_rng():
        torch.manual_seed(6)
        fresh_model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=2, n_head=2, n_embd=64))
    mul = make_task("mul", levels=(1, 2))
    fresh = collect_rollout(fresh_model, tokenizer, mul, [mul.sample(random.Random(60 + i)) for i in range(4)],
                            group_size=4, temperature=1.0, generator=torch.Generator().manual_seed(6))
    fresh_adv = torch.randn(fresh.mask.shape[0], generator=torch.Generator().manual_seed(6))   # both signs
    fresh_optimizer = torch.optim.AdamW(fresh_model.parameters(), lr=LR)

    def fresh_loss():
        logp_f, entropy_f = score_rollout(fresh_model, fresh)                     # (B, T) each, current theta
        return entropy_f, *tepo_loss(logp=logp_f, old_logp=fresh.old_logp, advantages=fresh_adv, mask=fresh.mask,
                                     entropy=entropy_f, old_entropy=fresh.old_entropy, mask_tol=TEPO_MASK_TOL,
                                     **READING)

    _, loss_f, _ = fresh_loss()                                                   # theta = theta_old: M is empty
    fresh_optimizer.zero_grad()
    loss_f.backward()
    fresh_optimizer.step()
    entropy_f, _, stats_f = fresh_loss()                                          # after one step: M is not
    M_fresh = my_mask(fresh_adv, fresh.mask, entropy_f.detach(), fresh.old_entropy, TEPO_MASK_TOL)
    cmp("mask M, fresh model, prompts of two lengths", M_fresh, tepo_mask(fresh_adv, fresh.mask, entropy=entropy_f,
        old_entropy=fresh.old_entropy, tol=TEPO_MASK_TOL), hint=mask_hint)
    cmp("mask_frac, fresh model", M_fresh.sum().item() / fresh.mask.sum().item(), stats_f["mask_frac"].item(),
        atol=1e-6, hint="mask_frac = masked tokens / real tokens")
widths = sorted(set(fresh.prompt_mask.sum(-1).tolist()))
pad_sampled = int(((fresh.response_ids == tokenizer.pad_id) & fresh.mask.bool()).sum())
print(f"fresh model: prompt widths {widths}, {int((~fresh.finished).sum())} of {fresh.mask.shape[0]} answers "
      f"truncated, {pad_sampled} PAD tokens sampled as real; "
      f"{int(M_fresh.sum())} of {int(fresh.mask.sum())} real tokens masked")
assert len(widths) == 2 and 0 < M_fresh.sum() < fresh.mask.sum(), "the fresh batch has two prompt widths and a mask"
print("exercise 1: the hand-built mask matches tepo_mask and stats['mask_frac'] on all 4 mini-batches, on a batch with "
      "an empty row and on a fresh model's")

# %% [markdown]
# **2. The mask-free loss.** Write TEPO's policy term by hand, as in "Key equations": the held tokens, $\tilde s_i$,
# the token-routed $\tilde s_{i,t}$, $-A_i\tilde s_{i,t}$, `token-mean`; no mask penalty. With `beta_mask=0`,
# `tepo_loss` must give exactly this loss and gradient, and so must the mask switched off (`mask_criterion="none"`).
# Checked on two tiny cases you can do by hand (one with a held token), on the recorded mini-batches, which after the
# first step are off-policy, and on a batch with an empty row (a response cut to nothing: it adds no term and must not
# turn the loss or its gradient into NaN). A last check shows that the penalty only adds gradient on masked tokens.

# %%
def my_tepo_pg_loss(logp, old_logp, advantages, mask, delta_low=0.4, delta_high=0.4):
    """(1/N) sum_i sum_t m_it (-A_i s~_it), s~_it = sg[s~_i] exp(x~_it - sg[x~_it]), held tokens' x~ a constant."""
    ### BEGIN SOLUTION
    real = mask.bool()
    x = torch.where(real, logp - old_logp, torch.zeros_like(logp))                    # (B, T), 0 at padding
    A = advantages[:, None]                                                           # (B, 1)
    held = (((A > 0) & (x > delta_high)) | ((A < 0) & (x < -delta_low))) & real       # the pessimistic side only
    x_clip = torch.where(held, x.detach().clamp(-delta_low, delta_high), x)           # a held token: a constant
    s = torch.exp(x_clip.sum(-1) / mask.sum(-1).clamp(min=1))                         # (B,) s~_i
    s_tok = s.detach()[:, None] * torch.exp(x_clip - x_clip.detach())                 # value s~_i, gradient per token
    lam = -A * s_tok
    return torch.where(real, lam, torch.zeros_like(lam)).sum() / mask.sum()
    ### END SOLUTION


pg_hint = ("x = logp - old_logp; held = (A > 0 and x > 0.4) or (A < 0 and x < -0.4); x~ = sg[clamp(x)] on held "
           "tokens; s~_i = exp(mean over real tokens of x~); s~_it = sg[s~_i] exp(x~ - sg[x~]); "
           "lambda = -A s~_it; sum over real tokens / N")
with exercise(2, my_tepo_pg_loss):
    v_fixed = my_tepo_pg_loss(torch.tensor([[math.log(1.1), math.log(1.1)]]), torch.zeros(1, 2),
                              torch.tensor([1.0]), torch.ones(1, 2))
    cmp("loss at s = 1.1, A = 1 (no token held)", v_fixed, -1.1, atol=1e-6, hint=pg_hint)
    v_held, g_held = value_and_grad(lambda lp: my_tepo_pg_loss(lp, torch.zeros(1, 2, dtype=torch.float64),
                                                               torch.tensor([1.0]).double(), torch.ones(1, 2).double()),
                                    torch.tensor([[0.5, 0.1]], dtype=torch.float64))
    cmp("loss at x = (0.5, 0.1), A = 1 (token 0 held at 0.4)", v_held, -math.exp(0.25), atol=1e-9, hint=pg_hint)
    cmp("gradient at x = (0.5, 0.1), A = 1", g_held, torch.tensor([[0.0, -math.exp(0.25) / 2]], dtype=torch.float64),
        atol=1e-9, hint="a held token's x~ is a constant (x.detach().clamp(...)): no gradient; the other keeps -A s~ / N")
    v_low, g_low = value_and_grad(lambda lp: my_tepo_pg_loss(lp, torch.zeros(1, 2, dtype=torch.float64),
                                                             torch.tensor([1.0]).double(), torch.ones(1, 2).double()),
                                  torch.tensor([[-0.5, 0.1]], dtype=torch.float64))
    cmp("gradient at x = (-0.5, 0.1), A = 1 (nothing held: token 0 moved the other way)", g_low,
        torch.full((1, 2), -math.exp(-0.2) / 2, dtype=torch.float64), atol=1e-9,
        hint="hold a token only on the pessimistic side: x > delta_high when A > 0, x < -delta_low when A < 0")
    for k, r in enumerate(record):
        common = dict(old_logp=r["old_logp"], advantages=r["adv"], mask=r["mask"], entropy=r["entropy"],
                      old_entropy=r["old_entropy"], mask_tol=TEPO_MASK_TOL, **READING)
        common.pop("beta_mask")
        v_mine, g_mine = value_and_grad(lambda lp: my_tepo_pg_loss(lp, r["old_logp"], r["adv"], r["mask"]),
                                        r["logp"])
        v_zero, g_zero = value_and_grad(lambda lp: tepo_loss(logp=lp, beta_mask=0.0, **common), r["logp"])
        v_none, g_none = value_and_grad(lambda lp: tepo_loss(logp=lp, beta_mask=1.0,
                                                             **{**common, "mask_criterion": "none"}), r["logp"])
        v_full, g_full = value_and_grad(lambda lp: tepo_loss(logp=lp, beta_mask=1.0, **common), r["logp"])
        cmp(f"policy loss, mini-batch {k + 1}", v_mine, v_zero, atol=1e-6, hint=pg_hint)
        cmp(f"policy gradient dL/dlogp, mini-batch {k + 1}", g_mine, g_zero, atol=1e-7,
            hint="the gradient reaches every token through s_it = sg[s_i] exp(logp - sg[logp]); a clipped token "
                 "gets none")
        check(f"beta_mask=0 and mask_criterion='none' agree, mini-batch {k + 1}",
              v_zero == v_none and torch.equal(g_zero, g_none))
        cmp(f"loss with the penalty - loss without, mini-batch {k + 1}", v_full - v_zero,
            r["stats"]["mask_kl"].item(), atol=1e-6)
        cmp(f"gradient off the mask unchanged by the penalty, mini-batch {k + 1}", g_full[~r["M"]], g_zero[~r["M"]])
    old, new, adv, mask = make_batch([2, 5, 0, 7, 1, 4, 6, 2], drift=0.5)          # row 2 has no real token
    v_mine, g_mine = value_and_grad(lambda lp: my_tepo_pg_loss(lp, old, adv, mask), new)
    v_zero, g_zero = value_and_grad(lambda lp: tepo_loss(logp=lp, old_logp=old, advantages=adv, mask=mask,
                                                         beta_mask=0.0, **SHIPPED), new)
    empty_hint = ("an empty row has |o_i| = 0: divide by its length clamped to 1 (exp(0/0) is NaN, and NaN * 0 is "
                  "NaN), and drop padding with torch.where rather than a product")
    cmp("policy loss, a batch with an empty row", v_mine, v_zero, atol=1e-12, hint=empty_hint)
    cmp("policy gradient dL/dlogp, a batch with an empty row", g_mine, g_zero, atol=1e-12, hint=empty_hint)
print("exercise 2: beta_mask=0 gives the mask-free loss, also with an empty row; the penalty changes only masked "
      "tokens' gradients")

# %% [markdown]
# **3. (Discussion, no code.)** Predict first, then set `LR = 3e-5`, then `LR = 3e-6`, and rerun Part 2 (the cell
# starts from a copy of the warm model each time). What happens to `mask_frac`, and to `mask_kl`? Then set
# `mask_tol=0.0` in the loop: which mini-batch changes, and is that change TEPO's idea or float32's? (What we saw
# is in the Solutions section at the end.)
#
# ## Why these papers
#
# **TEPO** (arXiv 2510.09369, revised as 2604.12736, ACL 2026) describes two pieces. The first is a sequence-level
# likelihood that links the group-level reward to each token, with the loss aggregated at the token level. The
# second is a token-level KL mask on tokens with positive advantage and decreasing entropy, to damp abrupt policy
# updates. In this lesson's terms: GSPO's sequence ratio (lesson 5) with DAPO's token-level mean (lesson 4), plus a
# penalty on one kind of token, one that is reinforced while its next-token distribution sharpens. Our reading of
# the motivation (not a quote): that is where an update most likely squeezes out exploration.
#
# The paper reports state-of-the-art math accuracy and about half the convergence time of GRPO/DAPO. On this
# project's toy task, in minitepo's reading and on one tiny model, that speed-up was *not* reproduced
# (`research/claims/README.md`). Part 4 found the mask's entropy effect; a gain in accuracy or
# pass@4 its design could not have shown. The public
# text does not pin down the mask's exact form, its penalty or the clip range. Each choice here is a switch of
# `tepo_loss`, so a different reading is one keyword away.

# %% [markdown]
# ## Solutions
#
# **Exercise 3.** The cell below runs Part 2 at the three learning rates and with $\tau=0$, and checks what this
# paragraph says. `mask_frac` does not fall with the step size the way `mask_kl` does. Membership is a sign test:
# any entropy drop larger than $\tau$ counts. `mask_kl` falls by far more than the learning rate (the check asks for
# more than twentyfold per tenfold), because $k_3\approx\frac12(\ell^\theta-\ell^{old})^2$ near the old policy. At
# small steps the mask is there but almost free. With $\tau=0$, the first mini-batch ($\theta=\theta_{old}$) can get
# tokens flagged by round-off alone: float32's doing, not TEPO's.

# %%
sweep = {lr: four_steps(lr, verbose=False) for lr in (3e-4, 3e-5, 3e-6)}
for lr, rec in sweep.items():
    kl_text = ", ".join(f"{r['stats']['mask_kl'].item():.1e}" for r in rec)
    print(f"LR {lr:.0e}: mask_frac {[round(r['stats']['mask_frac'].item(), 3) for r in rec]}   mask_kl [{kl_text}]   "
          f"clip_frac {[round(r['stats']['clip_frac'].item(), 3) for r in rec]}")
kl2 = [sweep[lr][1]["stats"]["mask_kl"].item() for lr in (3e-4, 3e-5, 3e-6)]
frac_later = [sum(r["stats"]["mask_frac"].item() for r in sweep[lr][1:]) for lr in (3e-4, 3e-5, 3e-6)]
assert all(f > 0 for f in frac_later), "at every learning rate the later mini-batches mask some tokens"
assert all(a > 20 * b for a, b in zip(kl2, kl2[1:]) if b > 0), "mask_kl falls by far more than the learning rate"
at_zero = four_steps(LR, tol=0.0, verbose=False)
print(f"tau = 0: masked tokens per mini-batch {[int(r['M'].sum()) for r in at_zero]} "
      f"(tau = TEPO_MASK_TOL: {[int(r['M'].sum()) for r in record]})")
