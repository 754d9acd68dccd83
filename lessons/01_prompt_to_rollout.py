# %% [markdown]
# # Lesson 1 — From prompt to rollout
#
# Reinforcement learning on a language model starts with a *rollout*: a batch of prompts, several
# sampled answers to each, and for every sampled token the numbers an objective will need later.
# This lesson builds one by hand, on a toy task small enough to print whole.
#
# ## What you will learn
#
# * what a **task** and its **verifier** are, and why a truncated answer earns nothing;
# * how text becomes **tokens** (one per character here) and what BOS, EOS and PAD are for;
# * how the **tiny GPT** samples a **group** of $G$ answers to one prompt;
# * the two numbers recorded for every sampled token: its **log-probability** $\ell_{i,t}$ and the
#   **entropy** $H_{i,t}$ of the distribution it was drawn from;
# * the **response mask** $m_{i,t}$: which positions of the padded `(B, T)` tensors are real;
# * how a model that has seen a little supervised training differs, token by token, from a fresh one;
# * the whole RL loop in one picture — prompt, group, rewards, advantages, per-token loss, optimizer step — with the
#   minitepo function that does each; this lesson builds its first three boxes.
#
# ## Key equations
#
# Notation of `spec/ALGORITHMS.md` §1. The model maps a prefix to logits $z\in\mathbb R^V$; sampling
# at temperature $\tau$ draws the next token from $\pi=\mathrm{softmax}(z/\tau)$. For token $o_{i,t}$ of
# response $i$:
#
# $$\ell_{i,t}=\log\pi(o_{i,t}\mid q,o_{i,<t})=\frac{z_{o_{i,t}}}{\tau}-\log\sum_{v=1}^{V}e^{z_v/\tau}
# \qquad\text{(log-softmax, then pick the sampled token: a "gather")}$$
#
# $$H_{i,t}=-\sum_{v=1}^{V}\pi_v\log\pi_v,\qquad 0\le H_{i,t}\le\log V
# \quad(\log V\text{ exactly when }\pi\text{ is uniform})$$
#
# $$m_{i,t}=\mathbb 1[\,t\le\text{position of the first EOS of }o_i\,],\qquad \lvert o_i\rvert=\sum_t m_{i,t}$$
#
# A response that reaches the length limit $L_{max}$ without an EOS is *truncated*: all its tokens are
# real ($m_{i,t}=1$), but the verifier gives it reward 0. Code: `minitepo/rollout.py` (`sample`,
# `score_rollout`, `entropy_of`, `collect_rollout`), `toy_tasks/base.py`
# (`Task.reward`).
#
# ## Pseudocode
#
# ```
# for each prompt q:   ids = [BOS] + encode(q)
# repeat each prompt G times (one group), left-pad to a common width
# for t = 0 .. L_max-1:
#     logits = model(prefix)[:, -1]                  # (B, V), with a KV cache
#     logprobs = log_softmax(logits / tau)
#     o_t ~ Categorical(exp(logprobs))               # rows that already ended get PAD
#     record  l_t = logprobs[o_t],  H_t = -sum exp(logprobs) * logprobs
#     stop early once every row has produced EOS
# mask = 1 up to and including each row's first EOS
# rewards = verifier(prompt, decode(response))      # 0 unless correct AND ended with EOS
# ```

# %%
import copy
import math
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyBboxPatch

import minitepo
from minitepo import (GPT, ModelConfig, SupervisedConfig, Tokenizer, collect_rollout, make_task, score_rollout,
                      train_supervised)

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
# ## The whole loop, in one picture
#
# Every lesson of the course opens one box of the loop below. One RL *iteration* draws a batch of prompts, samples a
# **group** of $G$ answers to each with the current policy, scores every answer with the task's verifier, turns the
# rewards into **advantages** by comparing each answer with its group, weighs every sampled token's log-probability
# in a per-token **loss**, and takes an **optimizer step**; the next iteration samples from the updated policy.
# Each box names the minitepo function that does it (the cell below checks that each name exists, so the picture
# cannot go stale quietly), what it hands on, and the lesson that opens it. `Trainer.iterate` (`minitepo/rl.py`) is
# this loop in code; lesson 9 reads it and lesson 10 has you write it. This lesson builds the three orange boxes.

# %%
# (what it is, the function that does it, what it hands on, the lesson that opens it)
FLOW = [("P prompts", "task.sample", "q: text, e.g. '700+800='", "lesson 1"),
        ("a group of G answers\nper prompt", "collect_rollout",
         "B = P·G rows; (B, T) tokens,\nold logp, old entropy, mask", "lesson 1"),
        ("rewards", "task.reward", "(B,) R_i: 1 if right\nand ended with EOS, else 0", "lessons 1, 2"),
        ("advantages", "group_advantages", "(B,) A_i: R_i against\nits group's mean", "lesson 2"),
        ("per-token loss", "tepo_loss", "on score_rollout's (B, T) logp:\neach token weighed by A_i", "lessons 3-6"),
        ("optimizer step", "Trainer.optimizer_step", "θ ← AdamW(θ, ∇L):\nthe new policy", "lessons 9, 10")]


def resolve(name):
    """What a name in the figure refers to: the task's method for ``task.<name>``, else ``minitepo.<name>``; None
    where it does not exist."""
    head, *rest = name.split(".")
    found = make_task("add", levels=(1,)) if head == "task" else getattr(minitepo, head, None)
    for part in rest:
        found = getattr(found, part, None)
    return found


check("every function the figure names exists (in minitepo, or on the task)",
      all(callable(resolve(name)) for _, name, _, _ in FLOW),
      got=[name for _, name, _, _ in FLOW if not callable(resolve(name))],
      hint="a function was renamed or moved: update FLOW (and the text) to its new name")

STEP, W, H = 2.2, 1.85, 1.6                                       # box pitch, width and height (axis units)
fig, ax = plt.subplots(figsize=(13, 3.4))
ax.set(xlim=(0, len(FLOW) * STEP), ylim=(-1.6, 1.0))
ax.set_axis_off()
for k, (what, name, hands_on, lesson) in enumerate(FLOW):
    x = 0.2 + STEP * k
    ax.add_patch(FancyBboxPatch((x, -0.8), W, H, boxstyle="round,pad=0.03,rounding_size=0.12", edgecolor="0.3",
                                facecolor="#fde9c9" if k < 3 else "#e8eef7"))     # orange: this lesson's boxes
    ax.text(x + W / 2, 0.62, what, ha="center", va="top", fontsize=10, weight="bold")
    ax.text(x + W / 2, 0.05, name, ha="center", va="center", fontsize=8.5, family="monospace", color="tab:blue")
    ax.text(x + W / 2, -0.2, hands_on, ha="center", va="top", fontsize=7.5, color="0.2")
    ax.text(x + W / 2, -0.72, lesson, ha="center", va="bottom", fontsize=8, color="0.35", style="italic")
    if k + 1 < len(FLOW):
        ax.annotate("", xy=(x + STEP - 0.02, 0.0), xytext=(x + W + 0.02, 0.0),
                    arrowprops=dict(arrowstyle="-|>", color="0.2", lw=1.5))
x_step, x_group = 0.2 + STEP * (len(FLOW) - 1) + W / 2, 0.2 + STEP + W / 2    # back from the step to the sampler
ax.plot([x_step, x_step, x_group], [-0.83, -1.2, -1.2], color="tab:red", lw=1.5)
ax.annotate("", xy=(x_group, -0.83), xytext=(x_group, -1.2), arrowprops=dict(arrowstyle="-|>", color="tab:red", lw=1.5))
ax.text((x_step + x_group) / 2, -1.28, "the next iteration samples from the updated policy", ha="center", va="top",
        color="tab:red", fontsize=9)
fig.suptitle("One RL iteration (Trainer.iterate): each box names the minitepo function that does it")
fig.tight_layout()
plt.savefig(OUT / "01_data_flow.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# ## The task and its verifier
#
# `add` at level 1 asks for the sum of two one-digit numbers. Every number is written least-significant
# digit first, the operands zero-padded to three digits: 7 + 8 is the prompt `700+800=` and the answer
# `51`. Ones first makes column addition easier for a left-to-right model (`toy_tasks/base.py`,
# `write_number`); the padding puts the k-th digits of both operands and of the answer at the same
# distances in every column and at every level (`toy_tasks/add.py` says why that matters). The verifier reads the text
# up to the first EOS and returns a reward and an `info` dict that says why.

# %%
tokenizer = Tokenizer()
task = make_task("add", levels=(1,))
EOS = tokenizer.decode([tokenizer.eos_id])   # the text the EOS token decodes to
example = task.sample(random.Random(7))
print(example)
print("correct, with EOS:   ", task.reward(example.prompt, example.answer + EOS))
print("correct, no EOS:     ", task.reward(example.prompt, example.answer))
print("wrong digits:        ", task.reward(example.prompt, "9" + EOS)[0])
print("response-length limit L_max =", task.max_new_tokens, "tokens (EOS included)")

# %% [markdown]
# ## Tokens
#
# The tokenizer has one token per character of a small arithmetic alphabet, plus three special
# tokens: BOS starts every prompt, EOS ends a response, PAD fills the unused cells of a
# rectangular tensor. One token per digit is what lets a tiny model learn addition column by column.

# %%
ids = [tokenizer.bos_id] + tokenizer.encode(example.prompt)
V = tokenizer.vocab_size
print(f"vocabulary V = {V}: {tokenizer.alphabet!r} + BOS={tokenizer.bos_id}, EOS={tokenizer.eos_id}, "
      f"PAD={tokenizer.pad_id}")
print(f"{example.prompt!r} -> {ids} -> {tokenizer.decode(ids)!r}")

# %% [markdown]
# ## The tiny GPT, and sampling a group
#
# A 2-layer transformer of width 64 (about 0.1M parameters). `collect_rollout` encodes the prompts,
# samples `group_size` answers to each (rows of one group are contiguous), decodes them and asks the
# verifier. A seeded `torch.Generator` makes the sampling reproducible.

# %%
config = ModelConfig(vocab_size=V, n_layer=2, n_head=2, n_embd=64)
model = GPT(config)
print(f"{model.num_params():,} parameters")

G = 8
examples = [task.sample(random.Random(100 + i)) for i in range(2 if not FULL else 4)]
untrained = collect_rollout(model, tokenizer, task, examples, group_size=G, temperature=1.0,
                            generator=torch.Generator().manual_seed(0))
B, T = untrained.response_ids.shape
print(f"B = {B} responses ({len(examples)} prompts x G = {G}), padded response width T = {T}")


SHORT = {tokenizer.bos_id: "B", tokenizer.eos_id: "E", tokenizer.pad_id: "."}   # special tokens, one letter


def char(token_id):
    """One printable character per token: the digit or sign itself, B/E/. for BOS/EOS/PAD."""
    return SHORT.get(token_id) or repr(tokenizer.decode([token_id]))[1:-1]


def show(rollout, rows):
    """Print a few rows: the tokens, the mask, the log-probs, the entropies and the reward."""
    for i in rows:
        toks = [char(t) for t in rollout.response_ids[i].tolist()]
        print(f"row {i:2d} {examples[i // G].prompt:>8} tokens {' '.join(f'{t:>5}' for t in toks)}"
              f"   reward {rollout.rewards[i]:.0f}")
        print(f"{'':16}mask   {' '.join(f'{m:5.0f}' for m in rollout.mask[i].tolist())}")
        print(f"{'':16}logp   {' '.join(f'{x:5.2f}' for x in rollout.old_logp[i].tolist())}")
        print(f"{'':16}H      {' '.join(f'{x:5.2f}' for x in rollout.old_entropy[i].tolist())}")


show(untrained, rows=range(3))
print(f"log V = {math.log(V):.3f}")

# %% [markdown]
# ## Log-probs, entropy, EOS, padding and the mask
#
# Read the printout above column by column. A fresh model's next-token distribution is close to
# uniform, so every entropy sits just under $\log V\approx3.22$ nats and every log-prob near
# $-\log V$: it picks characters almost at random, rarely emits EOS, and so most of its answers run
# to the length limit and are truncated (reward 0 whatever the digits). `E` is EOS, `.` is PAD, `B` a (nonsensical) sampled BOS.
#
# Three rules keep the padded tensors honest:
#
# * a row's real tokens run **up to and including its first EOS**; everything after is PAD, with
#   `mask = 0`, `logp = 0` and `entropy = 0`;
# * the mask is built **by position** from where the first EOS fell, never by comparing token ids
#   with PAD;
# * a truncated row has `mask = 1` everywhere and `finished = False`.
#
# Every objective in later lessons multiplies by `mask` or sums over it: padding must never count.

# %%
print("lengths |o_i|:", untrained.lengths.tolist())
print("finished     :", untrained.finished.int().tolist())
print("rewards      :", untrained.rewards.int().tolist())
assert bool((untrained.old_logp[untrained.mask == 0] == 0).all()), "padding holds no log-prob"

# %% [markdown]
# ## The same numbers from one teacher-forced pass
#
# The sampler computed $\ell_{i,t}$ one token at a time (with a KV cache). An RL objective needs
# them *with gradient*, for the current weights, and gets them from one forward pass over
# `[prompt | response]`: `score_rollout`. On the same weights the two agree up to float round-off,
# which is why the rollout's numbers can serve as the behaviour policy's $\ell^{old}$ later.
#
# Here is that pass spelled out, because the exercise below starts from its logits. Prompts are
# left-padded, so each token's position is counted from its row's first real token; and the logits
# at column $c$ predict the token at column $c+1$, so the response is predicted by the columns
# starting one before it.

# %%
def teacher_forced_logits(model, rollout):
    """The logits that predict each response token, from one pass over [prompt | response].   (B, T, V)"""
    ids = torch.cat([rollout.prompt_ids, rollout.response_ids], 1)                   # (B, Tp + T)
    key_mask = torch.cat([rollout.prompt_mask, torch.ones_like(rollout.response_ids, dtype=torch.bool)], 1)
    positions = (key_mask.long().cumsum(-1) - 1).clamp(min=0)                         # position within the row
    Tp = rollout.prompt_ids.size(1)
    with torch.no_grad():
        return model(ids[:, :-1], positions=positions[:, :-1], key_mask=key_mask[:, :-1])[:, Tp - 1:]


with torch.no_grad():
    logp_tf, entropy_tf = score_rollout(model, untrained)
real = untrained.mask.bool()
print("max |score_rollout - sampler| on real tokens:",
      f"logp {(logp_tf - untrained.old_logp)[real].abs().max():.1e}, entropy {(entropy_tf - untrained.old_entropy)[real].abs().max():.1e}")

# A second rollout of the same fresh model, sampled cooler (temperature 0.6): the exercise is checked on it,
# so that an answer which forgets the temperature cannot pass by accident (at temperature 1 it would).
cool = collect_rollout(model, tokenizer, task, examples, group_size=G, temperature=0.6,
                       generator=torch.Generator().manual_seed(2))
cool_logits = teacher_forced_logits(model, cool)                                     # (B, T, V)
with torch.no_grad():
    cool_logp_tf, _ = score_rollout(model, cool)
cool_real = cool.mask.bool()

# %% [markdown]
# ## A briefly warm-started model
#
# RL needs a policy that is sometimes right: if every answer in a group earns 0 there is nothing to
# prefer (lesson 2). A few seconds of supervised training on the reference answers gets there.
# Then sample the *same* prompts again with the same seed and compare.
#
# The loop is `train_supervised` in `minitepo/sft.py`, read it top to bottom: each step draws a batch of
# `BOS prompt answer EOS` rows, takes the cross-entropy on the answer tokens only (never the prompt), clips the
# gradient and steps AdamW under a warmup and cosine schedule; it returns one record per step.

# %%
# 200 steps in both settings: longer, and the model is right nearly always and the figure says less.
# train_supervised trains the model it is given in place: train a copy, so that re-running this cell in a notebook
# starts again from the fresh model instead of training the warm one further.
warm_model = copy.deepcopy(model)
sft = train_supervised(warm_model, tokenizer, task, SupervisedConfig(steps=200, batch_size=64, lr=3e-3, warmup=10),
                       eval_every=200)
print(f"warm start: loss {sft[0]['losses/sft']:.2f} -> {sft[-1]['losses/sft']:.2f} in {len(sft)} steps, "
      f"held-out greedy accuracy {sft[-1]['eval/greedy_acc/all']:.2f}")
warm = collect_rollout(warm_model, tokenizer, task, examples, group_size=G, temperature=1.0,
                       generator=torch.Generator().manual_seed(0))
show(warm, rows=range(3))
print(f"reward: untrained {untrained.rewards.mean():.2f}, warm-started {warm.rewards.mean():.2f}; "
      f"truncated: {(~untrained.finished).float().mean():.2f} -> {(~warm.finished).float().mean():.2f}")

# %% [markdown]
# ## Figure: entropy per token, before and after the warm start
#
# Each cell is one sampled token (its character written in the cell); its colour is the entropy of
# the distribution it was drawn from. Grey cells are padding; red lines separate the groups. **What to watch:** the untrained model
# is uniformly hot ($H\approx\log V$) and runs to the length limit; after the warm start the answers
# are short, end in EOS, and the entropy is low where the model is sure (often the EOS) and stays
# high where it is still guessing (often the first digit). All rows of a group share the first column's
# entropy — same prompt, same distribution — and part ways once they have sampled different tokens.
# Those uncertain tokens are where RL has
# something to choose between; later lessons (TEPO's mask, GTPO) look at entropy token by token.

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 0.35 * B + 1.5), sharey=True)
for ax, (name, ro) in zip(axes, [("untrained", untrained), ("warm-started", warm)]):
    Tw = ro.response_ids.size(1)
    grid = ro.old_entropy.masked_fill(ro.mask == 0, float("nan")).numpy()
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_bad("lightgrey")
    im = ax.imshow(grid, aspect="auto", cmap=cmap, vmin=0, vmax=math.log(V))
    for i in range(B):
        for t in range(Tw):
            if ro.mask[i, t]:
                ax.text(t, i, char(int(ro.response_ids[i, t])), ha="center", va="center", fontsize=7,
                        color="white" if ro.old_entropy[i, t] < 0.6 * math.log(V) else "black")
    for g in range(1, len(examples)):
        ax.axhline(g * G - 0.5, color="red", lw=1.5)                              # group boundary
    ax.set_title(f"{name}: reward {ro.rewards.mean():.2f}")
    ax.set_xlabel("response position t")
    ax.set_xticks(range(Tw))
axes[0].set_ylabel("response i (rows of a group are adjacent)")
axes[0].set_yticks(range(B))
fig.colorbar(im, ax=axes, label=f"entropy H (nats); log V = {math.log(V):.2f}")
plt.savefig(OUT / "01_entropy_heatmap.png", dpi=120, bbox_inches="tight")
plt.show()
plt.close()

# %% [markdown]
# ## Exercises
#
# **1. Log-softmax and gather by hand.** `cool_logits` above are the teacher-forced logits aligned with the
# response tokens of the rollout `cool`, `(B, T, V)`; `cool` was sampled at temperature 0.6. Compute each sampled
# token's log-probability and each position's entropy at the rollout's temperature, using only
# `torch.log_softmax`, `gather` and sums. On real tokens they must match both `score_rollout` and the sampler's
# `rollout.old_logp` / `rollout.old_entropy` (up to float round-off: the sampler used a KV cache, which adds up the same
# numbers in another order). The `add` prompts all have the same width, so the check runs once more on a rollout of the
# same fresh model on `mul` prompts of two widths (`1*3=` beside `46*9=`, the shorter left-padded), through
# `teacher_forced_logits` above.

# %%
def my_logp_entropy(logits, response_ids, temperature):
    """(B, T, V) logits and (B, T) token ids -> (log-prob of each token, entropy of each position), both (B, T)."""
    ### BEGIN SOLUTION
    logprobs = torch.log_softmax(logits.float() / temperature, dim=-1)           # (B, T, V)
    logp = logprobs.gather(-1, response_ids[..., None]).squeeze(-1)               # (B, T)
    entropy = -(logprobs.exp() * logprobs).sum(-1)                                # (B, T)
    return logp, entropy
    ### END SOLUTION


with exercise(1, my_logp_entropy):
    my_logp, my_entropy = my_logp_entropy(cool_logits, cool.response_ids, cool.temperature)
    temperature_hint = "sampling at temperature tau draws from softmax(z / tau): divide the logits first"
    cmp("logp on real tokens (vs score_rollout)", my_logp[cool_real], cool_logp_tf[cool_real], atol=1e-5,
        hint=temperature_hint + "; gather the sampled token's entry along the last dimension")
    cmp("logp on real tokens (vs the sampler)", my_logp[cool_real], cool.old_logp[cool_real], atol=1e-4,
        hint=temperature_hint)
    cmp("entropy on real tokens (vs the sampler)", my_entropy[cool_real], cool.old_entropy[cool_real], atol=1e-4,
        hint=temperature_hint + "; H = -sum_v p_v log p_v over the last dimension")
    mul = make_task("mul", levels=(1, 2))
    ragged = collect_rollout(model, tokenizer, mul, [mul.sample(random.Random(60 + i)) for i in range(4)],
                             group_size=G, temperature=0.6, generator=torch.Generator().manual_seed(3))
    ragged_real = ragged.mask.bool()
    my_logp, my_entropy = my_logp_entropy(teacher_forced_logits(model, ragged), ragged.response_ids, ragged.temperature)
    cmp("logp on real tokens, prompts of two widths (vs the sampler)", my_logp[ragged_real],
        ragged.old_logp[ragged_real], atol=1e-4, hint=temperature_hint)
    cmp("entropy on real tokens, prompts of two widths (vs the sampler)", my_entropy[ragged_real],
        ragged.old_entropy[ragged_real], atol=1e-4, hint=temperature_hint)
print(f"exercise 1: checked on the add rollout (prompt width {sorted(set(cool.prompt_mask.sum(-1).tolist()))}) and on "
      f"the mul rollout (prompt widths {sorted(set(ragged.prompt_mask.sum(-1).tolist()))})")
assert len(set(ragged.prompt_mask.sum(-1).tolist())) == 2, "the mul rollout's prompts have two widths"

# %% [markdown]
# **2. The largest possible entropy.** Show that uniform logits (all equal, any value) give entropy
# exactly $\log V$, and that no position of either rollout exceeds it. Use your function from
# exercise 1, on logits you construct (the check counts the calls: writing `math.log(V)` does not pass).

# %%
def uniform_entropy(V):
    """Entropy of the next-token distribution when all V logits are equal (use my_logp_entropy)."""
    ### BEGIN SOLUTION
    logits = torch.full((1, 1, V), 3.7)                                           # any constant works
    _, entropy = my_logp_entropy(logits, torch.zeros((1, 1), dtype=torch.long), 1.0)
    return float(entropy)
    ### END SOLUTION


with exercise(2, uniform_entropy):
    cmp("entropy of V equal logits", uniform_entropy(V), math.log(V), atol=1e-5,
        hint="build (1, 1, V) logits that are all equal and call my_logp_entropy on them")
    cmp("entropy of 2 equal logits", uniform_entropy(2), math.log(2), atol=1e-6, hint="pass V through, not a constant")
    yours, calls = my_logp_entropy, []                 # the instruction: the number must come from your function
    my_logp_entropy = lambda *args, **kwargs: calls.append(1) or yours(*args, **kwargs)   # noqa: E731  counts calls
    try:
        uniform_entropy(5)
    finally:
        my_logp_entropy = yours
    check("uniform_entropy calls my_logp_entropy (exercise 1's function), not a formula for log V", len(calls) > 0,
          hint="log V is what the check expects, not the answer: build equal logits and let my_logp_entropy find it")
check("no sampled position exceeds log V",
      float(untrained.old_entropy.max()) <= math.log(V) + 1e-5 and float(warm.old_entropy.max()) <= math.log(V) + 1e-5)

# %% [markdown]
# **3. A truncated answer earns 0.** Sample with a length limit of 1 token, too short for any answer
# plus its EOS: the only way to finish is an immediate EOS (an empty answer, wrong anyway), so nearly
# every response is truncated. Write `truncated(rollout)`, which finds the truncated rows
# from the tokens and the mask alone (a row is truncated when none of its real tokens is EOS), then check
# that it agrees with `rollout.finished` and that every truncated row got reward 0. Finally, confirm
# with the verifier that even the exact reference digits, without EOS, score 0.

# %%
def truncated(rollout):
    """(B,) bool: True where the response has no EOS among its real tokens."""
    ### BEGIN SOLUTION
    is_eos = (rollout.response_ids == tokenizer.eos_id) & rollout.mask.bool()    # (B, T)
    return ~is_eos.any(-1)
    ### END SOLUTION


short = collect_rollout(warm_model, tokenizer, task, examples, group_size=G, temperature=1.0, max_new_tokens=1,
                        generator=torch.Generator().manual_seed(1))
with exercise(3, truncated):
    eos_hint = "a row is truncated when no REAL token (mask = 1) is EOS: combine the two with &, then any(-1)"
    cmp("truncated rows, length limit 1", truncated(short), ~short.finished, hint=eos_hint)
    cmp("truncated rows, warm rollout", truncated(warm), ~warm.finished, hint=eos_hint)
    padded = copy.copy(short)                     # one more padding column, holding EOS: junk the mask rules out
    padded.response_ids = torch.cat([short.response_ids, torch.full_like(short.response_ids[:, :1], tokenizer.eos_id)], 1)
    padded.mask = torch.cat([short.mask, torch.zeros_like(short.mask[:, :1])], 1)
    cmp("truncated rows, EOS written into a padded column", truncated(padded), ~short.finished, hint=eos_hint)
    check("most rows truncated at a 1-token limit", float(truncated(short).float().mean()) > 0.5)
    check("every truncated row got reward 0",
          bool((short.rewards == 0).all()) and bool((warm.rewards[truncated(warm)] == 0).all()))
assert task.reward(example.prompt, example.answer)[0] == 0.0, "the reference digits without EOS must score 0"
assert task.reward(example.prompt, example.answer + EOS)[0] == 1.0, "the reference digits with EOS must score 1"

# %% [markdown]
# ## Why these papers
#
# Everything in this lesson is shared by every objective in minitepo. GRPO (DeepSeekMath, arXiv
# 2402.03300) introduced the *group*: sample $G$ answers per prompt and judge each against its
# siblings, instead of training a value network. Its descendants (DAPO, Dr. GRPO, GSPO, TEPO, GTPO)
# differ in what they do with the rollout, never in how it is drawn: they all consume the
# `(B, T)` tensors `logp`, `mask` and, for TEPO and GTPO, `entropy`. DAPO (arXiv 2503.14476) made
# truncation a first-class concern (its overlong shaping, lesson 2), and TEPO (arXiv 2510.09369)
# and GTPO (arXiv 2508.04349) are built around the per-token entropy you saw in the figure — how
# minitepo reads those two papers is spelled out in the README ("TEPO: what is a reading of the
# paper") and in `docs/objectives.md`.
