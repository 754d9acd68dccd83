# %% [markdown]
# # Lesson 9 — A full run, and how to read its curves
#
# The earlier lessons took one RL step apart. This one puts the whole loop back together and looks at
# what it leaves behind: one metrics record per iteration (the lines of a run folder's `metrics.jsonl`). First a
# tiny live run, to see the mechanics end to end in a few seconds; then the curves of a real run — the 250 TEPO
# iterations of today's quickstart on 3-digit addition, committed in `lessons/data/` — and what each of them
# tells you.
#
# ## What you will learn
#
# * how the core's `Trainer` (`minitepo/rl.py`) turns a warm-started model into one metrics record per
#   iteration, and which checks every run must pass (finite numbers, an empty TEPO mask on each rollout's first
#   step, fractions in $[0, 1]$);
# * how to read the four curves that matter — reward, entropy, clip fraction and TEPO's mask
#   fraction — against held-out accuracy, and why the loss value is not one of them;
# * why so many groups carry no learning signal (prompts are unequally hard: Jensen), and what DAPO's
#   dynamic sampling, which the quickstart uses, pays to train on informative groups only.

# %% [markdown]
# ## Key equations
#
# One iteration of `minitepo.rl.Trainer.iterate` (spec §2 and §6, the loss in `tepo_loss`): sample $G$
# responses to each of $P$ prompts, reward them, keep only the groups whose answers differ (dynamic
# sampling: sample $P$ more prompts, up to $1+{}$`max_resample_rounds` rounds in all — 4 by default, 3 in the
# quickstart — until $P$ such groups are in hand; if the rounds run out first, train on the groups found), compute
# group z-score advantages $A_i$, then take $K$ optimizer steps (`minibatches`) on the loss of TEPO's
# default reading (lesson 6), with $x_{i,t}=\ell^\theta_{i,t}-\ell^{old}_{i,t}$:
#
# $$\tilde x_{i,t}=\begin{cases}\min(x_{i,t},\delta_h)&A_i>0\\ \max(x_{i,t},-\delta_l)&A_i<0\end{cases},\qquad
# \tilde s_i=\exp\Big(\frac1{|o_i|}\sum_t m_{i,t}\tilde x_{i,t}\Big),\qquad
# \tilde s_{i,t}=\mathrm{sg}[\tilde s_i]\,e^{\tilde x_{i,t}-\mathrm{sg}[\tilde x_{i,t}]},$$
#
# $$\mathcal L_{TEPO}=\frac1N\sum_{i}\sum_{t}m_{i,t}\Big[-A_i\,\tilde s_{i,t}+\beta_M\,M_{i,t}\,k_3(\ell^\theta_{i,t},\ell^{old}_{i,t})\Big],
# \qquad \delta_l=\delta_h=0.4,\ \beta_M=1.$$
#
# The curves, one record per iteration (names in `minitepo/rl.py`; `minitepo rl` writes the same records to its run
# folder's `metrics.jsonl`):
#
# | name | what it is |
# |---|---|
# | `charts/reward_mean` | mean outcome reward of every sampled response (all rounds), at the sampling temperature |
# | `charts/entropy_sampled` | $\frac1N\sum_{i,t}m_{i,t}H^{old}_{i,t}$, nats per token, of the sampling distribution over every sampled response (all rounds): the entropy this lesson shows |
# | `charts/entropy_trained` | the same over the groups trained on only: with dynamic sampling, only the mixed ones (older runs' files call it `charts/entropy`) |
# | `losses/clip_frac` | fraction of real tokens whose log-ratio the clip held: $A>0,\ x>\delta_h$ (`clip/pos_high`) or $A<0,\ x<-\delta_l$ (`clip/neg_low`); such a token carries no gradient |
# | `tepo/mask_frac` | fraction of real tokens in TEPO's mask $M$; `tepo/mask_frac_first_step` and `_later_steps` split it by optimizer step |
# | `charts/zero_spread_groups` | fraction of the sampled groups (all rounds) whose $G$ rewards are all equal ($A=0$: no signal) |
# | `charts/sample_rounds` | rounds of $P$ prompts sampled to fill the batch with informative groups (1 without dynamic sampling) |
# | `eval/greedy_acc/all` | held-out greedy accuracy, every `eval_every` iterations |
#
# ## Pseudocode
#
# ```
# model = warm start (supervised)                     # RL needs some reward to start from
# for iteration in 1..I:
#     rollout = {}
#     repeat (at most 1 + max_resample_rounds rounds):  # dynamic sampling
#         sample P prompts x G responses; reward; keep the groups whose rewards differ
#     until rollout holds P groups (or the rounds are spent: train on fewer)
#     advantages = group z-scores
#     for k in 1..K:  one optimizer step on a K-th of the rollout    # k = 1: theta = theta_old, mask empty
#     log reward, entropy, clip fraction, mask fraction, rounds ...; every E iterations: held-out accuracy
# ```

# %%
import json
import math
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from minitepo import (GPT, TEPO_MASK_TOL, ModelConfig, SupervisedConfig, Tokenizer, Trainer, TrainerConfig, make_task,
                      train_supervised)
from minitepo.losses.tepo import TEPO_DEFAULTS
from minitepo.lab.quickstart import QuickstartConfig, rl_stage

try:                    # the named checks of the exercises (lessons/checks.py), and the lessons' own folder
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
DATA = LESSONS_DIR / "data"                      # found from any working directory

# %% [markdown]
# ## A live run, for the mechanics
#
# A 2-layer model, a few seconds of supervised warm start on 1-digit addition (enough to answer a minority of the
# held-out prompts right; the longer warm start of `MINITEPO_LESSONS=full` answers most of them right), then a
# handful of TEPO iterations with TEPO's default reading and dynamic sampling (the learning rate, group sizes and
# temperature are this cell's). It is far too short to learn anything — never read improvement into a run this
# small — but every part of the loop runs, and its records must pass the same checks as a real run's.
#
# The warm start is lesson 1's loop (`train_supervised`, `minitepo/sft.py`). The RL loop is the core's `Trainer`:
# `Trainer.train` evaluates held-out greedy accuracy, then calls `Trainer.iterate` once per iteration and returns the
# records. `Trainer.iterate` in `minitepo/rl.py` is the iteration of "Key equations", read it top to bottom: sample and
# reward (with dynamic sampling's rounds), advantages, $K$ optimizer steps, one record. `minitepo rl` runs the same
# `Trainer` and adds what a long run needs (a run folder with `metrics.jsonl`, checkpoints, resume, a progress bar).

# %%
tokenizer = Tokenizer()
task = make_task("add", levels=(1,))
torch.manual_seed(0)                                 # the same initial weights each time this cell runs
model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=2, n_head=2, n_embd=64))
sft_steps, iterations = (400, 30) if FULL else (150, 4)
warm = train_supervised(model, tokenizer, task, SupervisedConfig(steps=sft_steps, batch_size=32, lr=5e-3, warmup=10,
                                                                 seed=0), eval_every=sft_steps)
live_config = TrainerConfig(algo="tepo", iterations=iterations, prompts=8, group_size=8, minibatches=4, lr=2e-4,
                            temperature=0.7, seed=0)
live = Trainer(live_config, model, tokenizer, task).train(eval_every=iterations)   # trains the model in place
print(f"warm start: held-out accuracy {warm[-1]['eval/greedy_acc/all']:.2f}; RL: {live[-1]['step']} iterations, "
      f"dynamic sampling {'on' if live_config.uses_dynamic_sampling else 'off'} "
      f"(at most {live_config.max_resample_rounds + 1} rounds)")
for r in live[1:]:
    print(f"iteration {r['step']}  rounds {r['charts/sample_rounds']}  groups trained {r['charts/groups_trained']}  "
          f"reward {r['charts/reward_mean']:.3f}  entropy (all samples) {r['charts/entropy_sampled']:.3f}  "
          f"(trained rows) {r.get('charts/entropy_trained', float('nan')):.3f}  "
          f"clip {r.get('losses/clip_frac', 0.0):.3f}  mask (first step) {r.get('tepo/mask_frac_first_step', 0.0):.3f}  "
          f"mask (later steps) {r.get('tepo/mask_frac_later_steps', 0.0):.3f}  loss {r.get('losses/loss', 0.0):+.4f}")

# %% [markdown]
# The checks every run must pass, whatever it learned. The first optimizer step after each rollout
# has $\theta=\theta_{old}$, so the measured entropy cannot have dropped and TEPO's mask must be empty
# there (the trainer's `mask_tol`, `TEPO_MASK_TOL` nats, printed below, absorbs the float32 round-off between the
# sampler and the teacher-forced pass). A run with a non-zero first-step mask has a bug in how old entropies are recorded
# (or, on a GPU under bf16, a `mask_tol` too small for its round-off: see `docs/gpu-and-speed.md`).
# An iteration whose every round came back with no informative group has nothing to train on: it takes no
# optimizer step and logs no loss (rare, but a tiny model at the start of a run can do it).

# %%
print(f"TEPO_MASK_TOL = {TEPO_MASK_TOL:g} nats; tepo_loss defaults: delta_low {TEPO_DEFAULTS['delta_low']}, "
      f"delta_high {TEPO_DEFAULTS['delta_high']}, beta_mask {TEPO_DEFAULTS['beta_mask']}")
warm_acc = warm[-1]["eval/greedy_acc/all"]
check("text: this warm start gets " + ("most answers right (the full setting)" if FULL else "a minority right"),
      warm_acc > 0.5 if FULL else warm_acc < 0.5, got=warm_acc)
check("text: delta_l = delta_h = 0.4 and beta_M = 1 are tepo_loss's defaults",
      (TEPO_DEFAULTS["delta_low"], TEPO_DEFAULTS["delta_high"], TEPO_DEFAULTS["beta_mask"]) == (0.4, 0.4, 1.0),
      got=(TEPO_DEFAULTS["delta_low"], TEPO_DEFAULTS["delta_high"], TEPO_DEFAULTS["beta_mask"]))
assert len(live) == iterations + 1 and live[0]["step"] == 0, "the record before training, then one per iteration"
assert all(math.isfinite(v) for r in live for v in r.values() if isinstance(v, float)), \
    "every logged number is finite"
trained = [r for r in live[1:] if r["charts/groups_trained"] > 0]
assert all(r["tepo/mask_frac_first_step"] == 0.0 for r in trained), "the mask is empty on each rollout's first step"
assert all(0.0 <= r[k] <= 1.0 for r in trained for k in ("losses/clip_frac", "tepo/mask_frac", "charts/reward_mean")), \
    "fractions lie in [0, 1]"
assert all(1 <= r["charts/sample_rounds"] <= live_config.max_resample_rounds + 1 for r in live[1:]), \
    "dynamic sampling takes at least one round and at most 1 + max_resample_rounds"
assert all(b["charts/opt_steps"] - a["charts/opt_steps"] == (4 if b["charts/groups_trained"] else 0)
           for a, b in zip(live, live[1:])), "K = 4 optimizer steps per iteration that has groups to train on"

# %% [markdown]
# ## The real curves: the quickstart's run
#
# `lessons/data/quickstart_rl_metrics.jsonl` is a thinned copy of the metrics of one run of the README's main
# job, `python3 -m minitepo quickstart` (seed 1; the commit, machine and thinning: `lessons/data/README.md`).
# A supervised warm start stops as soon as its greedy accuracy on held-out 3-digit sums reaches 30%. Then come
# TEPO iterations with the library's default reading. Each trains on up to $P$ informative groups of $G$ responses
# (dynamic sampling, in at most three rounds), with $K$ optimizer steps, a learning rate that decays (cosine) to
# a tenth of its peak, and sampling at temperature $T$. The code prints these settings from today's quickstart
# (`QuickstartConfig`) and checks that the committed run used them. Every evaluation row is kept, and of the others
# step 1 and the even steps.

# %%
def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


ref = read_jsonl(DATA / "quickstart_rl_metrics.jsonl")
warm_ref = read_jsonl(DATA / "quickstart_warmstart_metrics.jsonl")
train_rows = [r for r in ref if "charts/reward_mean" in r]
eval_rows = [r for r in ref if "eval/greedy_acc/all" in r]


def column(rows, key):
    return [r["step"] for r in rows if key in r], [r[key] for r in rows if key in r]


def mean(values):
    values = list(values)
    return sum(values) / len(values)


def smooth(values, alpha=0.15):
    """Exponential moving average, for reading a noisy curve (the raw values stay in the plot)."""
    out, current = [], values[0]
    for v in values:
        current = alpha * v + (1 - alpha) * current
        out.append(current)
    return out


QUICKSTART = rl_stage(QuickstartConfig(), init="its warm start")     # today's quickstart's RL settings
P, G, K = QUICKSTART.prompts, QUICKSTART.group_size, QUICKSTART.minibatches
print(f"today's quickstart: {QUICKSTART.iterations} iterations, P = {P} groups of G = {G}, K = {K} steps, "
      f"lr {QUICKSTART.lr:g} decaying to {QUICKSTART.lr * QUICKSTART.min_lr_frac:g}, T = {QUICKSTART.temperature}, "
      f"evaluation every {QUICKSTART.eval_every}")
print(f"{len(ref)} rows ({len(eval_rows)} evaluations); held-out greedy accuracy "
      f"{eval_rows[0]['eval/greedy_acc/all']:.1%} -> {eval_rows[-1]['eval/greedy_acc/all']:.1%}; "
      f"warm start: {warm_ref[-1]['step']} supervised steps, "
      f"3-digit accuracy {warm_ref[-1]['eval/greedy_acc/level/3']:.1%}")
assert [r["step"] for r in eval_rows] == list(range(0, QUICKSTART.iterations + 1, QUICKSTART.eval_every)), \
    "an evaluation every eval_every iterations, to the last"
# the committed run is today's quickstart (regenerate the data when the quickstart changes: lessons/data/README.md)
lrs = [r["charts/lr"] for r in train_rows]
check("data: the run's peak learning rate is today's quickstart's", math.isclose(max(lrs), QUICKSTART.lr, rel_tol=1e-3),
      got=max(lrs))
check("data: the run's last learning rate is a tenth of the peak",
      math.isclose(lrs[-1], QUICKSTART.lr * QUICKSTART.min_lr_frac, rel_tol=1e-2), got=lrs[-1])
MAX_ROUNDS = QUICKSTART.max_resample_rounds + 1                     # the quickstart's cap: 3 rounds
check("data: every iteration trained P informative groups, or fewer only when it spent every round",
      all(r["charts/groups_trained"] == P
          or (r["charts/groups_trained"] < P and r["charts/sample_rounds"] == MAX_ROUNDS) for r in train_rows))
check("data: K optimizer steps per iteration", all(r["charts/opt_steps"] == K * r["step"] for r in ref))
check("data: every evaluation row kept, and of the others step 1 and the even steps",
      all(r in eval_rows or r["step"] == 1 or r["step"] % 2 == 0 for r in ref)
      and {r["step"] for r in ref} == {0, 1, *range(2, QUICKSTART.iterations + 1, 2)})
check("data: each round sampled P prompts x G responses",
      all(r["charts/responses_sampled"] == r["charts/sample_rounds"] * P * G for r in train_rows))
check("data: the warm start stopped at or past the quickstart's 30%",
      QuickstartConfig().settle_at == 0.3 and warm_ref[-1]["eval/greedy_acc/level/3"] >= 0.3,
      got=warm_ref[-1]["eval/greedy_acc/level/3"])
assert all(r["tepo/mask_frac_first_step"] == 0.0 for r in train_rows), \
    "the mask is empty on each rollout's first step"
assert all(0.0 <= r["losses/clip_frac"] <= 1.0 and 0.0 <= r["tepo/mask_frac"] <= 1.0 for r in train_rows), \
    "fractions lie in [0, 1]"

# %% [markdown]
# The run in five phases, one line each (means over the thinned rows of each phase), before the figure. Every
# number the text below quotes is printed here or next to its check.

# %%
PHASES = ((1, 24), (25, 74), (75, 149), (150, 199), (200, 250))   # iterations, both ends included
SHOWN = (("charts/reward_mean", "reward"), ("charts/entropy_sampled", "entropy"), ("losses/clip_frac", "clip"),
         ("losses/clip/neg_low", "neg_low"), ("losses/clip/pos_high", "pos_high"),
         ("tepo/mask_frac_later_steps", "mask k>1"), ("charts/zero_spread_groups", "no-signal"),
         ("charts/sample_rounds", "rounds"), ("charts/groups_trained", "groups"), ("charts/lr", "lr"))
phase_means = {}
print("iterations " + " ".join(f"{label:>9s}" for _, label in SHOWN))
for lo, hi in PHASES:
    rows = [r for r in train_rows if lo <= r["step"] <= hi]
    phase_means[lo, hi] = {key: mean(r[key] for r in rows) for key, _ in SHOWN}
    print(f"{lo:4d}-{hi:<4d}  " + " ".join(f"{phase_means[lo, hi][key]:9.3g}" for key, _ in SHOWN))
first, last = phase_means[PHASES[0]], phase_means[PHASES[-1]]
neg_share = sum(r["losses/clip/neg_low"] for r in train_rows) / sum(r["losses/clip_frac"] for r in train_rows)
print(f"share of the held tokens with A < 0 (neg_low), over the run: {neg_share:.2f}")
accuracy = {r["step"]: r["eval/greedy_acc/all"] for r in eval_rows}
n_heldout = len(make_task("add", levels=(3,)).eval_set())
stderr = [math.sqrt(a * (1 - a) / n_heldout) for a in accuracy.values()]
print(f"{n_heldout} held-out prompts: one evaluation's standard error is {min(stderr):.1%} to {max(stderr):.1%} "
      f"over this run's accuracies")
length = mean(r["charts/response_len_sampled"] for r in train_rows)
print(f"sampled answers: {length:.2f} tokens on average (digits and the end token)")


def near(value, quoted, tol):
    return abs(value - quoted) <= tol


# what the text below says, checked against the data (if you regenerate the data, these tell you what changed)
check("text: 250 iterations, answers sampled at temperature 0.7, 64 groups of 4, four optimizer steps per rollout",
      (QUICKSTART.iterations, QUICKSTART.temperature, P, G, K) == (250, 0.7, 64, 4, 4),
      got=(QUICKSTART.iterations, QUICKSTART.temperature, P, G, K))
check("text: 200 held-out prompts, a standard error of 1 to 4 points",
      n_heldout == 200 and 0.01 <= min(stderr) and max(stderr) <= 0.04, got=(n_heldout, min(stderr), max(stderr)))
check("text: held-out accuracy goes from 33% to 96.5%", (accuracy[0], accuracy[QUICKSTART.iterations]) == (0.33, 0.965),
      got=(accuracy[0], accuracy[QUICKSTART.iterations]))
check("text: it zigzags (57.5% at 30, 48.5% at 60; 80.5% at 130, 67% at 150)",
      (accuracy[30], accuracy[60], accuracy[130], accuracy[150]) == (0.575, 0.485, 0.805, 0.67),
      got=(accuracy[30], accuracy[60], accuracy[130], accuracy[150]))
check("text: the sampled reward climbs from about 0.20 to about 0.91",
      near(first["charts/reward_mean"], 0.20, 0.01) and near(last["charts/reward_mean"], 0.91, 0.01),
      got=(first["charts/reward_mean"], last["charts/reward_mean"]))
above = [r["step"] for r in eval_rows
         if "charts/reward_mean" in r and r["charts/reward_mean"] >= r["eval/greedy_acc/all"]]
check("text: the sampled reward sits below greedy accuracy at all evaluations but 60, 140 and 150",
      above == [60, 140, 150], got=above)
check("text: at each of those three, greedy accuracy is below the evaluation before",
      all(accuracy[s] < accuracy[s - QUICKSTART.eval_every] for s in above),
      got=[(accuracy[s - QUICKSTART.eval_every], accuracy[s]) for s in above])
check("text: an answer of about 4.6 tokens", near(length, 4.6, 0.05), got=length)
check("text: entropy about 0.50 nats per token in iterations 1-24, about 0.05 in 200-250",
      near(first["charts/entropy_sampled"], 0.50, 0.01) and near(last["charts/entropy_sampled"], 0.05, 0.01),
      got=(first["charts/entropy_sampled"], last["charts/entropy_sampled"]))


def steadily(key, sign):
    values = [phase_means[ph][key] for ph in PHASES]
    return all(sign * (b - a) > 0 for a, b in zip(values, values[1:]))


check("text: from phase to phase the reward climbs, the entropy falls and the later steps' mask grows",
      steadily("charts/reward_mean", +1) and steadily("charts/entropy_sampled", -1)
      and steadily("tepo/mask_frac_later_steps", +1))
check("text: entropy falls to about a tenth",
      near(last["charts/entropy_sampled"] / first["charts/entropy_sampled"], 0.1, 0.02),
      got=last["charts/entropy_sampled"] / first["charts/entropy_sampled"])
check("text: the clip holds about 6% of tokens in iterations 1-24", near(first["losses/clip_frac"], 0.06, 0.01),
      got=first["losses/clip_frac"])
check("text: more than eight held tokens in ten have A < 0 (neg_low)", 0.8 < neg_share < 0.9, got=neg_share)
check("text: the clip fraction fades to about 1% as the lr decays", near(last["losses/clip_frac"], 0.01, 0.005),
      got=last["losses/clip_frac"])
lesson11 = json.loads((DATA / "compare_add.json").read_text())
lowest_entropy = min(v for runs in lesson11.values() for run in runs.values() for v in run["entropy"])
print(f"lesson 11's runs: lowest entropy of any objective, seed and evaluation {lowest_entropy:.2f} nats per token")
check("text: in lesson 11's runs no objective's entropy fell below 0.4 nats per token", lowest_entropy >= 0.4,
      got=lowest_entropy)
check("text: the later steps' mask fraction: about 15% in iterations 1-24, about 27% in 200-250",
      near(first["tepo/mask_frac_later_steps"], 0.15, 0.015) and near(last["tepo/mask_frac_later_steps"], 0.27, 0.015),
      got=(first["tepo/mask_frac_later_steps"], last["tepo/mask_frac_later_steps"]))

# %% [markdown]
# ## Figure: the four curves to watch

# %%
fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex=True)
ax = axes[0, 0]
x, y = column(train_rows, "charts/reward_mean")
ax.plot(x, y, color="tab:blue", alpha=0.25, lw=0.8)
ax.plot(x, smooth(y), color="tab:blue", label=f"sampled reward (T = {QUICKSTART.temperature}, every round), smoothed")
ex, ey = column(eval_rows, "eval/greedy_acc/all")
ax.plot(ex, ey, "o-", ms=3, color="tab:green", label=f"held-out greedy accuracy ({n_heldout} prompts)")
ax.set_title("reward and held-out accuracy")
ax.legend(fontsize=7)
ax = axes[0, 1]
x, y = column(train_rows, "charts/entropy_sampled")
ax.plot(x, y, color="tab:purple", alpha=0.25, lw=0.8)
ax.plot(x, smooth(y), color="tab:purple", label="every sampled response (entropy_sampled), smoothed")
x, y = column(train_rows, "charts/entropy_trained")
ax.plot(x, smooth(y), color="tab:purple", ls=":", label="the groups trained on (entropy_trained), smoothed")
ax.set_title(f"policy entropy (nats per response token, T = {QUICKSTART.temperature})")
ax.legend(fontsize=7)
ax = axes[1, 0]
for key, color, label in (("losses/clip_frac", "black", "clip fraction (all)"),
                          ("losses/clip/neg_low", "tab:red", "A < 0, x < -delta_low"),
                          ("losses/clip/pos_high", "tab:blue", "A > 0, x > delta_high")):
    x, y = column(train_rows, key)
    ax.plot(x, smooth(y), color=color, label=label)
x, y = column(train_rows, "charts/lr")
ax2 = ax.twinx()
ax2.plot(x, y, color="grey", ls=":", label="learning rate")
ax2.set_ylabel("learning rate", color="grey")
ax.set_title("clip fraction: tokens whose log-ratio was held (smoothed)")
ax.legend(fontsize=7)
ax = axes[1, 1]
for key, color, label in (("tepo/mask_frac_later_steps", "tab:orange", "optimizer steps 2-4 of a rollout"),
                          ("tepo/mask_frac", "tab:brown", "all steps"),
                          ("tepo/mask_frac_first_step", "black", "first step (0 by construction)")):
    x, y = column(train_rows, key)
    ax.plot(x, smooth(y) if "first" not in key else y, color=color, label=label)
ax.set_title("TEPO mask fraction (smoothed)")
ax.legend(fontsize=7)
for ax in axes[1]:
    ax.set_xlabel("iteration")
for ax in axes.flat:
    ax.grid(alpha=0.3)
fig.suptitle("TEPO (token_log clip, k3 mask, dynamic sampling) on 3-digit add: the quickstart's run (seed 1)")
fig.tight_layout()
fig.savefig(OUT / "09_reference_curves.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# ### What each curve says
#
# * **Reward and held-out accuracy** (top left). Greedy accuracy on prompts never trained on goes from 33% to
#   96.5%. It zigzags on the way up: 57.5% at iteration 30, 48.5% at 60; 80.5% at 130, then 67% at 150 before
#   it climbs for good. With 200 held-out prompts, one evaluation has a standard error of 1 to 4 points, and a
#   small model's greedy answers can flip together. The sampled reward climbs from about 0.20 to about 0.91 (phase
#   means). It sits below greedy accuracy at every evaluation but three (60, 140 and 150, each one where greedy
#   accuracy has fallen since the evaluation before). It is measured on answers sampled at temperature 0.7: an answer of about 4.6 tokens (digits
#   and the end token) must get every token right, with about 0.50 nats of entropy per token early on. It also
#   counts every sampled prompt, including the rounds whose groups dynamic sampling dropped.
#   The reward comes from fresh training prompts and the accuracy from held-out ones; the two rising together
#   is what says the policy learned addition. This pair is the only evidence of learning. The loss
#   (`losses/loss`) is not: its value depends on this iteration's advantages, which are centred at zero by
#   construction.
# * **Entropy** (top right) is the entropy of every sampled response (`charts/entropy_sampled`); the dotted line
#   is the same over the groups trained on (`charts/entropy_trained`). It falls steadily, from about 0.50 nats
#   per token in iterations 1-24 to about 0.05 in 200-250: about a tenth. The policy sharpens as
#   it becomes right. A steady decline alongside rising accuracy is healthy. Entropy collapsing to ~0 while
#   accuracy stalls would mean the policy stopped exploring — what clip-higher and TEPO's mask are meant to slow
#   down (lesson 11 compares objectives on this; in its runs no objective's entropy fell below 0.4 nats per token).
# * **Clip fraction** (bottom left) holds about 6% of tokens in iterations 1-24. Over the run, more than
#   eight held tokens in ten have $A<0$ (`neg_low`). Within the four optimizer steps on one rollout, tokens of
#   wrong answers whose log-probability has already fallen by more than $\delta_l=0.4$ nats stop being pushed
#   down, while the rest of their response keeps its gradient. The fraction fades to about 1% as the learning rate
#   decays (dotted): smaller steps, log-ratios closer to 0. A clip fraction that climbs toward tens of percent
#   means steps too large for the trust region.
# * **Mask fraction** (bottom right) is exactly 0 on each rollout's first step (θ = θ_old). On the later steps
#   it covers about 15% of tokens in iterations 1-24 and about 27% in 200-250. These are
#   positive-advantage tokens whose entropy the update has already reduced; the k3 penalty pulls them back toward
#   θ_old (with the bound of lesson 6: a pull below β_M). It can only cover tokens with $A>0$; here it grows
#   from phase to phase as the reward climbs (the table).

# %% [markdown]
# ## Exercises
#
# **Exercise 1 — how many groups carry no signal?** A group's $G$ answers all get the same reward when they
# are all right or all wrong; its advantages are then 0 and it teaches nothing. Write
# `no_signal_probability(p, G)`: the chance that $G$ independent samples, each right with probability $p$,
# carry no signal. Then compare it with the run's measured `charts/zero_spread_groups`, using each iteration's
# mean reward as $p$ — as if every prompt were equally hard.

# %%
def no_signal_probability(p, G):
    ### BEGIN SOLUTION
    return p ** G + (1 - p) ** G
    ### END SOLUTION


ns_hint = "no signal = all G right OR all G wrong: two disjoint events, each a product of G independent ones"
with exercise(1, no_signal_probability):
    cmp("P(no signal), p = 0.5, G = 8", no_signal_probability(0.5, 8), 2 / 256, atol=1e-15, hint=ns_hint)
    cmp("P(no signal), p = 0, G = 8", no_signal_probability(0.0, 8), 1.0, atol=1e-15, hint=ns_hint)
    cmp("P(no signal), p = 1, G = 3", no_signal_probability(1.0, 3), 1.0, atol=1e-15, hint=ns_hint)
    cmp("P(no signal), p = 0.25, G = 2", no_signal_probability(0.25, 2), 0.0625 + 0.5625, atol=1e-15, hint=ns_hint)
    cmp("P(no signal), p = 0.9, G = 1", no_signal_probability(0.9, 1), 1.0, atol=1e-12,
        hint="one answer alone always 'agrees with itself': a group of 1 never carries signal")
x, measured = column(train_rows, "charts/zero_spread_groups")
_, reward = column(train_rows, "charts/reward_mean")
iid = [no_signal_probability(p, G) for p in reward]
print(f"mean over the run: measured {mean(measured):.3f}, if every prompt were equally hard {mean(iid):.3f}")
assert mean(measured) > mean(iid), "unequal prompts give more all-equal groups (Jensen)"
no_signal = {(lo, hi): phase_means[lo, hi]["charts/zero_spread_groups"] for lo, hi in PHASES}
iid_phase = {(lo, hi): mean(f for step, f in zip(x, iid) if lo <= step <= hi) for lo, hi in PHASES}
lowest = min(PHASES, key=no_signal.get)
print("iterations  mean reward  no-signal measured  if equally hard")
for lo, hi in PHASES:
    print(f"{lo:4d}-{hi:<4d}  {phase_means[lo, hi]['charts/reward_mean']:11.2f}  {no_signal[lo, hi]:18.2f}  "
          f"{iid_phase[lo, hi]:15.2f}")
check("text: the measured fraction lies above the equal-difficulty prediction at every committed iteration",
      all(f > f_iid for f, f_iid in zip(measured, iid)))
check("text: U-shaped: lowest in the phase whose mean reward is nearest one half, not in the first or last",
      lowest == min(PHASES, key=lambda ph: abs(phase_means[ph]["charts/reward_mean"] - 0.5))
      and lowest not in (PHASES[0], PHASES[-1]), got=lowest)
check("text: it is highest in the last phase, above one half", max(no_signal.values()) == no_signal[PHASES[-1]] > 0.5,
      got=no_signal[PHASES[-1]])
most_right = 1 - (1 - last["charts/reward_mean"]) / 0.5         # Markov: P(p <= 1/2) <= E[1 - p] / (1/2)
print(f"last phase: mean reward {last['charts/reward_mean']:.2f}, so at least {most_right:.0%} of the prompts are "
      f"answered right more often than not")
check("text: late in the run most prompts are answered right more often than not", most_right > 0.5, got=most_right)

fig, ax = plt.subplots(figsize=(6.5, 3.6))
ax.plot(x, smooth(measured), label="measured: groups with all-equal rewards (smoothed)")
ax.plot(x, smooth(iid), label=rf"$p^G+(1-p)^G$ with $p$ = mean reward, $G$ = {G}")
ax.set_xlabel("iteration")
ax.set_ylabel("fraction of sampled groups")
ax.set_title("groups that carry no learning signal")
ax.grid(alpha=0.3)
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(OUT / "09_zero_spread.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# The measured curve lies *above* the equal-difficulty prediction at every committed iteration. The reason is that
# prompts are not equally hard: $p^G+(1-p)^G$ is convex in $p$, so averaging it over prompts with different $p$
# gives more than evaluating it at the average $p$ (Jensen's inequality). Some sums are nearly always right for
# this model and others nearly always wrong; both kinds of group would be wasted compute in the update.
#
# The measured fraction is U-shaped over this run (the table). It is lowest in the phase whose mean reward is
# nearest one half, and highest in the last phase, where more than half the groups carry no signal.
# $p^G+(1-p)^G$ is smallest at $p=\frac12$ and grows again past it. For a prompt the model answers right more
# often than not, a group of all-right answers is likelier than a group of all-wrong ones; late in the run most
# prompts are like that (a mean reward of 0.91 leaves at most 18% of them at or below one half: the printout).
#
# That is why the quickstart uses DAPO's **dynamic sampling**: it drops those groups and samples more prompts,
# so that the update sees up to 64 informative groups — and the sampler pays for them. The quickstart caps what
# it pays at three rounds; when the rounds run out, the update trains on the informative groups it has.
#
# **Exercise 2 — what does dynamic sampling cost?** Each round samples $P$ prompts; each of their groups is
# informative with probability $q$, independently (each prompt is a fresh draw, so $q$ already averages over
# how hard prompts are). Rounds continue until $P$ informative groups are in hand or `max_rounds` rounds are
# spent. Write `expected_rounds(q, P, max_rounds)`: the expected number of rounds. (Hint: $E[R]=\sum_{r\ge0}
# P(R>r)$, and more than $r$ rounds are needed exactly when the first $r$ rounds' $rP$ groups hold fewer than
# $P$ informative ones.) Predict first: with $q=0.8$ and $P=32$, how often does one round suffice?

# %%
def expected_rounds(q, P, max_rounds):
    ### BEGIN SOLUTION
    def fewer_than_P(n):                     # P(Binomial(n, q) < P)
        return sum(math.comb(n, k) * q ** k * (1 - q) ** (n - k) for k in range(min(P, n + 1)))

    return 1 + sum(fewer_than_P(r * P) for r in range(1, max_rounds))
    ### END SOLUTION


def simulated_rounds(q, P, max_rounds, trials=20000, seed=0):
    """The trainer's rule played out with coins: the mean number of rounds over ``trials`` iterations."""
    rng, total = random.Random(seed), 0
    for _ in range(trials):
        kept, rounds = 0, 0
        while rounds < max_rounds and kept < P:
            rounds += 1
            kept += sum(rng.random() < q for _ in range(P))
        total += rounds
    return total / trials


with exercise(2, expected_rounds):
    rounds_hint = "E[R] = 1 + sum over r = 1 .. max_rounds - 1 of P(Binomial(r P, q) < P): r rounds were not enough"
    cmp("E[rounds], every group informative (q = 1)", expected_rounds(1.0, 32, 4), 1.0, atol=1e-12, hint=rounds_hint)
    cmp("E[rounds], no group informative (q = 0)", expected_rounds(0.0, 32, 4), 4.0, atol=1e-12,
        hint="with q = 0 no round fills the batch: every allowed round is spent")
    cmp("E[rounds], one prompt per round (P = 1, q = 0.5)", expected_rounds(0.5, 1, 4), 1 + 0.5 + 0.25 + 0.125,
        atol=1e-12, hint="with P = 1 each round fails with probability 1 - q: 1 + (1-q) + (1-q)^2 + ...")
    cmp("E[rounds], a single round allowed", expected_rounds(0.3, 32, 1), 1.0, atol=1e-12, hint=rounds_hint)
    for q, prompts in ((0.6, 8), (0.5, 32)):        # (not P: that name is the quickstart's, used below)
        cmp(f"E[rounds] against the simulated rule (q = {q}, P = {prompts}, 4 rounds)", expected_rounds(q, prompts, 4),
            simulated_rounds(q, prompts, 4, trials=4000), atol=0.04, hint=rounds_hint)

print(f"one round suffices with q = 0.8, P = 32: {0.8 ** 32:.1e} of the time; with P = {P}: {0.8 ** P:.1e}")
predicted_rounds = {r["step"]: expected_rounds(1 - r["charts/zero_spread_groups"], P, MAX_ROUNDS) for r in train_rows}
groups_trained = {ph: phase_means[ph]["charts/groups_trained"] for ph in PHASES}   # the phase table's
print("iterations  no-signal  rounds measured  rounds predicted  groups trained")
for lo, hi in PHASES:                          # the measured means are the phase table's (phase_means, above)
    predicted = mean(v for step, v in predicted_rounds.items() if lo <= step <= hi)
    print(f"{lo:4d}-{hi:<4d}  {phase_means[lo, hi]['charts/zero_spread_groups']:9.3f}  "
          f"{phase_means[lo, hi]['charts/sample_rounds']:15.3f}  {predicted:16.3f}  {groups_trained[lo, hi]:14.1f}")
short = [r["step"] for r in train_rows if r["charts/groups_trained"] < P]
sample_s, update_s = sum(r["time/sample_s"] for r in train_rows), sum(r["time/update_s"] for r in train_rows)
print(f"time in the thinned rows: sampling {sample_s:.1f} s, updates {update_s:.1f} s")
assert abs(mean(r["charts/sample_rounds"] for r in train_rows) - mean(predicted_rounds.values())) < 0.1, \
    "the binomial model predicts the measured rounds to within 0.1 on average"
check("text: every committed iteration sampled at least two rounds",
      all(r["charts/sample_rounds"] >= 2 for r in train_rows), got=min(r["charts/sample_rounds"] for r in train_rows))
check("text: from iteration 150 on, every iteration spends all three rounds",
      all(r["charts/sample_rounds"] == MAX_ROUNDS == 3 for r in train_rows if r["step"] >= 150))
check("text: the first short batch comes at iteration 144; the update trains on about 55 of 64 groups in "
      "iterations 150-199 and about 33 in 200-250",
      short[0] == 144 and near(groups_trained[PHASES[-2]], 55, 1) and near(groups_trained[PHASES[-1]], 33, 1),
      got=(short[0], groups_trained[PHASES[-2]], groups_trained[PHASES[-1]]))
check("text: sampling takes less time than the updates", sample_s < update_s, got=(sample_s, update_s))

# %% [markdown]
# Almost never: one round fills the batch only if all 32 groups are informative, $q^{32}$ — and this run asks
# for 64. So once a few groups per round carry no signal, an iteration samples **at least twice** the prompts a
# plain TEPO iteration would. In this run every committed iteration took at least two rounds, and the binomial
# model predicts the measured rounds closely (the table). From iteration 150 on, where most groups carry no
# signal, every iteration spends all three rounds the quickstart allows, and the cap starts to bind: the first
# short batch comes at iteration 144, and the update trains on about 55 of its 64 groups in iterations 150-199
# and about 33 in 200-250. Fewer groups mean fewer rows in each of the four optimizer steps, not fewer steps.
# The printout shows what sampling costs in time: here it takes less time than the updates.
# Whether it is worth it is an empirical question: in the warm-start study (`research/warm-start/README.md`) the
# quickstart's RL stage became robust across seeds with dynamic sampling together with twice the learning rate and
# a warm start that stops at 30% (so that study does not measure dynamic sampling's share alone), and lesson 11
# puts DAPO with and without it side by side.
#
# **Exercise 3 — how unequal must the prompts be?** Jensen says unequal prompts raise the no-signal fraction;
# by how much must they differ to explain what was measured? Take the simplest unequal batch: half its prompts at
# accuracy $\bar p+d$, half at $\bar p-d$. Write `two_point_spread(p_mean, target, G)`: the spread
# $d\in[0,\min(\bar p,1-\bar p)]$ at which that batch's expected no-signal fraction equals `target` (it grows with
# $d$, so bisection finds it), or None when even the widest spread falls short. Predict first: at an iteration
# where the mean reward is 0.5 and 30% of the groups carried no signal, are the prompts mildly or wildly unequal?
# (The Solutions section has what the run says.)

# %%
def two_point_spread(p_mean, target, G, iterations=60):
    """d such that (f(p_mean + d) + f(p_mean - d)) / 2 == target, with f(p) = p^G + (1 - p)^G; None if unreachable."""
    ### BEGIN SOLUTION
    def fraction(d):
        return (no_signal_probability(p_mean + d, G) + no_signal_probability(p_mean - d, G)) / 2

    lo, hi = 0.0, min(p_mean, 1.0 - p_mean)
    if target < fraction(lo) or target > fraction(hi):
        return None
    for _ in range(iterations):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fraction(mid) < target else (lo, mid)
    return (lo + hi) / 2
    ### END SOLUTION


def two_point_fraction(p_mean, d, G):
    return (no_signal_probability(p_mean + d, G) + no_signal_probability(p_mean - d, G)) / 2


with exercise(3, two_point_spread):
    spread_hint = "bisect d on [0, min(p, 1 - p)]: the two-point fraction grows with d; None outside its range"
    for p_mean, target in ((0.5, 0.3), (0.3, 0.2), (0.8, 0.5)):
        d = two_point_spread(p_mean, target, 8)
        check(f"a spread exists for mean {p_mean}, target {target}", d is not None, hint=spread_hint)
        cmp(f"two-point no-signal fraction at your d (mean {p_mean}, target {target})",
            two_point_fraction(p_mean, d, 8), target, atol=1e-6, hint=spread_hint)
    cmp("no spread needed when the target is the equal-difficulty value", two_point_spread(0.5, 2 / 256, 8), 0.0,
        atol=1e-6, hint=spread_hint)
    check("an unreachable target gives None", two_point_spread(0.1, 0.9, 8) is None,
          got=two_point_spread(0.1, 0.9, 8), hint="with mean 0.1 the widest batch is prompts at 0 and 0.2, whose "
          "fraction is only 0.58: compare the target with the fractions at both ends of [0, min(p, 1 - p)] first")
d_half, d_half8 = two_point_spread(0.5, 0.3, G), two_point_spread(0.5, 0.3, 8)
print(f"mean 0.5, 30% no-signal groups: prompts at {0.5 - d_half:.2f} and {0.5 + d_half:.2f} with G = {G} "
      f"(equally hard: {no_signal_probability(0.5, G):.1%}); at {0.5 - d_half8:.2f} and {0.5 + d_half8:.2f} with G = 8")
check("text (Solutions): prompts near 0.26 and 0.74 with G = 4, near 0.14 and 0.86 with G = 8",
      G == 4 and near(0.5 - d_half, 0.26, 0.005) and near(0.5 - d_half8, 0.14, 0.005),
      got=(0.5 - d_half, 0.5 - d_half8))
one_side_extreme = []
for step in (20, 100, 200):
    row = next(r for r in train_rows if r["step"] >= step)
    p_bar, frac = row["charts/reward_mean"], row["charts/zero_spread_groups"]
    d = two_point_spread(p_bar, frac, G)
    print(f"iteration {row['step']:3d}: mean reward {p_bar:.2f}, no-signal groups {frac:.2f} -> "
          + (f"prompts at {p_bar - d:.2f} and {p_bar + d:.2f}" if d is not None else "no two-point batch reaches it"))
    one_side_extreme.append(None if d is None else (p_bar - d < 0.1 or p_bar + d > 0.9))
check("text (Solutions): at iterations 20 and 100 one half of the batch lies below 0.1 or above 0.9; at 200 no "
      "two-point batch reaches the measured fraction", one_side_extreme == [True, True, None], got=one_side_extreme)

# %% [markdown]
# **Exercise 4 — when did it get there?** Write `first_step_reaching(rows, key, threshold)`: the first
# `step` whose `key` is at least `threshold` (None if never). `minitepo compare` reports "iterations to
# target" this way (and counts a run that never got there at its last iteration, flagged as censored:
# lesson 11).

# %%
def first_step_reaching(rows, key, threshold):
    ### BEGIN SOLUTION
    for row in rows:
        if key in row and row[key] >= threshold:
            return row["step"]
    return None
    ### END SOLUTION


with exercise(4, first_step_reaching):
    reach_hint = "walk the rows in order; skip rows without the key; >= threshold counts; None if never"
    check("first step at 80% is 130", first_step_reaching(ref, "eval/greedy_acc/all", 0.80) == 130,
          got=first_step_reaching(ref, "eval/greedy_acc/all", 0.80), hint=reach_hint)
    check("first step at 33% (the warm start's accuracy) is 0",
          first_step_reaching(ref, "eval/greedy_acc/all", 0.33) == 0,
          got=first_step_reaching(ref, "eval/greedy_acc/all", 0.33), hint=reach_hint)
    got = first_step_reaching(ref, "eval/greedy_acc/all", 0.99)
    check("never reaching 99% gives None", got is None, got=got, hint=reach_hint)
    check("rows without the key are skipped",
          first_step_reaching([{"step": 3, "a": 0.1}, {"step": 7}, {"step": 9, "a": 0.5}], "a", 0.5) == 9,
          hint=reach_hint)
print("held-out accuracy from iteration 130:",
      ", ".join(f"{r['step']}: {r['eval/greedy_acc/all']:.1%}" for r in eval_rows if r["step"] >= 130))
check("text: first at 80% at iteration 130 (80.5%), 78.5% at 140, 67% at 150, 86% at 160, then 93% to 97.5%",
      (accuracy[130], accuracy[140], accuracy[150], accuracy[160]) == (0.805, 0.785, 0.67, 0.86)
      and all(0.93 <= a <= 0.975 for s, a in accuracy.items() if s >= 170),
      got=[a for s, a in accuracy.items() if s >= 130])

# %% [markdown]
# **Think about it** (no code): held-out accuracy first reached 80% at iteration 130 (80.5%), fell to 78.5% at
# 140 and 67% at 150, came back to 86% at 160, then stayed between 93% and 97.5% (the printout). Which iteration
# would you report as "the iteration at which it reached 80%", and what would you need (seeds, a bigger held-out
# set) before claiming that one objective gets there faster than another? `research/claims/README.md` and lesson 11 are one answer.
#
# ## Why these papers
#
# The papers behind this course — DeepSeekMath's GRPO (arXiv 2402.03300), DAPO (2503.14476), Dr. GRPO
# (2503.20783), GSPO (2507.18071), GTPO / GRPO-S (2508.04349) and TEPO (2510.09369 / 2604.12736) — argue
# largely through training curves: entropy that does or does not collapse, clip fractions, accuracy
# against steps or hours. TEPO's headline claim is about one of them (about half the convergence time of
# GRPO / DAPO). Reading those figures well means knowing what each curve measures and what it cannot
# show. DAPO's dynamic sampling is also a reminder to ask what the x-axis counts: an iteration of this run
# sampled at least twice the prompts of one without dynamic sampling. This lesson's run is one seed on a toy task;
# minitepo's pre-registered five-seed comparison (`research/claims/README.md`) did not reproduce TEPO's speed-up with any
# reading it tried — the shipped reading trains about as fast as DAPO with the same data recipe.

# %% [markdown]
# ## Solutions
#
# **Exercise 2.** Almost never: $0.8^{32}\approx 8\times10^{-4}$. One round fills the batch only when every
# group in it is informative.
#
# **Exercise 3.** Clearly unequal: with this run's $G=4$, a mean of 0.5 and 30% no-signal groups need prompts
# near 0.26 and 0.74 (equally hard prompts at 0.5 give 12.5%). With groups of 8 the same 30% would need prompts
# near 0.14 and 0.86: larger groups hold a right and a wrong answer more often, so only very unequal prompts
# leave that many groups without signal. The printout says more of the run itself. At iterations 20 and 100, one
# half of the two-point batch lies below 0.1 or above 0.9. At iteration 200, no two-point batch reaches the
# measured fraction at all: with a mean of 0.9 its halves can be no further apart than 0.8 and 1.0. A batch in
# which most prompts are always right and a few are hard does reach it. That is what a mix of easy and hard sums
# looks like to a small model.
