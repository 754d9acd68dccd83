# %% [markdown]
# # Lesson 9 — A full run, and how to read its curves
#
# The earlier lessons took one RL step apart. This one puts the whole loop back together and looks at
# what it leaves behind: a `metrics.jsonl` with one line per iteration. First a tiny live run, to see
# the mechanics end to end in a few seconds; then the curves of a real run — 300 TEPO iterations of an
# earlier quickstart on 3-digit addition, committed in `lessons/data/` — and what each of them tells you.
#
# ## What you will learn
#
# * how `train_rl` turns a warm-started model into a run folder, and which checks every run must pass
#   (finite numbers, an empty TEPO mask on each rollout's first step, fractions in $[0, 1]$);
# * how to read the four curves that matter — reward, entropy, clip fraction and TEPO's mask
#   fraction — against held-out accuracy, and why the loss value is not one of them;
# * why the fraction of groups with no learning signal is U-shaped over a run.

# %% [markdown]
# ## Key equations
#
# One iteration of `minitepo.rl.Trainer.iterate` (spec §2 and §6, the loss in `tepo_loss`): sample $G$
# responses to each of $P$ prompts, reward them, compute group z-score advantages $A_i$, then take $K$
# optimizer steps (`minibatches`) on
#
# $$\mathcal L_{TEPO}=\frac1N\sum_{i}\sum_{t}m_{i,t}\Big[\lambda\big(s_{i,t},A_i;\epsilon_l,\epsilon_h\big)
# +\beta_M\,M_{i,t}\,k_3(\ell^\theta_{i,t},\ell^{old}_{i,t})\Big].$$
#
# The curves in `metrics.jsonl` (names in `minitepo/runs.py`), per iteration:
#
# | name | what it is |
# |---|---|
# | `charts/reward_mean` | mean outcome reward of the sampled responses, at the sampling temperature |
# | `charts/entropy` | $\frac1N\sum_{i,t}m_{i,t}H^{old}_{i,t}$, nats per token, of the sampling distribution |
# | `losses/clip_frac` | fraction of real tokens whose gradient clipping removed: $A>0,\ s>1+\epsilon_h$ (`clip/pos_high`) or $A<0,\ s<1-\epsilon_l$ (`clip/neg_low`) |
# | `tepo/mask_frac` | fraction of real tokens in TEPO's mask $M$; `tepo/mask_frac_first_step` and `_later_steps` split it by optimizer step |
# | `charts/zero_spread_groups` | fraction of groups whose $G$ rewards are all equal ($A=0$: no signal) |
# | `eval/greedy_acc/all` | held-out greedy accuracy, every `eval_every` iterations |
#
# If every prompt had the same chance $p$ of a right answer, a group of $G$ independent samples would
# carry no signal with probability $p^G+(1-p)^G$.
#
# ## Pseudocode
#
# ```
# model = warm start (supervised)                     # RL needs some reward to start from
# for iteration in 1..I:
#     rollout = sample P prompts x G responses; reward; advantages
#     for k in 1..K:  one optimizer step on a K-th of the rollout    # k = 1: theta = theta_old, mask empty
#     log reward, entropy, clip fraction, mask fraction ...; every E iterations: held-out accuracy
# ```

# %%
import json
import math
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from minitepo import GPT, ModelConfig, RLConfig, SFTConfig, Tokenizer, train_rl, train_sft

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
# A 2-layer model, a few seconds of supervised warm start on 1-digit addition (enough to get a minority
# of samples right), then a handful of TEPO iterations. It is far too short to learn anything — never
# read improvement into a run this small — but every part of the loop runs, and its records must pass
# the same checks as a real run's.

# %%
tokenizer = Tokenizer()
model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=2, n_head=2, n_embd=64))
sft_steps, iterations = (400, 30) if FULL else (150, 4)
warm = train_sft(SFTConfig(task="add", levels="1", steps=sft_steps, batch_size=32, lr=5e-3, warmup=10, n_layer=2,
                           n_head=2, n_embd=64, eval_every=sft_steps, seed=0, device="cpu",
                           out=str(OUT / "09_warmstart"), overwrite=True, progress=False, verbose=False), model=model, tokenizer=tokenizer)
rl = train_rl(RLConfig(algo="tepo", task="add", levels="1", iterations=iterations, prompts=8, group_size=8,
                       minibatches=4, lr=2e-4, temperature=0.7, eval_every=iterations, pass_k=0, seed=0,
                       device="cpu", out=str(OUT / "09_rl"), overwrite=True, progress=False, verbose=False), model=model, tokenizer=tokenizer)
live = [json.loads(line) for line in (OUT / "09_rl" / "metrics.jsonl").read_text().splitlines()]
print(f"warm start: held-out accuracy {warm['accuracy']['all']:.2f}; RL: {rl['iterations']} iterations")
for r in live[1:]:
    print(f"iteration {r['step']}  reward {r['charts/reward_mean']:.3f}  entropy {r['charts/entropy']:.3f}  "
          f"clip {r['losses/clip_frac']:.3f}  mask (first step) {r['tepo/mask_frac_first_step']:.3f}  "
          f"mask (later steps) {r['tepo/mask_frac_later_steps']:.3f}  loss {r['losses/loss']:+.4f}")

# %% [markdown]
# The checks every run must pass, whatever it learned. The first optimizer step after each rollout
# has $\theta=\theta_{old}$, so the measured entropy cannot have dropped and TEPO's mask must be empty
# there (the trainer's `mask_tol` absorbs the ~1e-6-nat round-off between the sampler and the
# teacher-forced pass). A run with a non-zero first-step mask has a bug in how old entropies are recorded
# (or, on a GPU under bf16, a `mask_tol` too small for its round-off: see the README's GPU section).

# %%
assert len(live) == iterations + 1 and live[0]["step"] == 0, "the record before training, then one per iteration"
assert all(math.isfinite(v) for r in live for v in r.values() if isinstance(v, float)), \
    "every logged number is finite"
assert all(r["tepo/mask_frac_first_step"] == 0.0 for r in live[1:]), "the mask is empty on each rollout's first step"
assert all(0.0 <= r[k] <= 1.0 for r in live[1:] for k in ("losses/clip_frac", "tepo/mask_frac", "charts/reward_mean")), \
    "fractions lie in [0, 1]"
assert all(r["charts/opt_steps"] == 4 * r["step"] for r in live[1:]), "K = 4 optimizer steps per iteration"

# %% [markdown]
# ## The real curves: the quickstart's run
#
# `lessons/data/quickstart_rl_metrics.jsonl` is a thinned copy of the metrics of one run of
# `python3 -m minitepo quickstart` (seed 1; where, when and how it was thinned: `lessons/data/README.md`),
# recorded when `add` still wrote its operands in the usual order (`123+456=`; today `321+654=`).
# The warm start (4 layers, d = 128) settled at 24% greedy accuracy on held-out 3-digit sums; then 300
# TEPO iterations of 32 prompts x 8 responses, 4 optimizer steps each, lr 2e-4 decaying to 2e-5,
# temperature 0.7. Every evaluation row is kept (every 10 iterations), and of the others every second one.

# %%
def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


ref = read_jsonl(DATA / "quickstart_rl_metrics.jsonl")
warm_ref = read_jsonl(DATA / "quickstart_warmstart_metrics.jsonl")
train_rows = [r for r in ref if "charts/reward_mean" in r]
eval_rows = [r for r in ref if "eval/greedy_acc/all" in r]


def column(rows, key):
    return [r["step"] for r in rows if key in r], [r[key] for r in rows if key in r]


def smooth(values, alpha=0.15):
    """Exponential moving average, for reading a noisy curve (the raw values stay in the plot)."""
    out, current = [], values[0]
    for v in values:
        current = alpha * v + (1 - alpha) * current
        out.append(current)
    return out


print(f"{len(ref)} rows ({len(eval_rows)} evaluations); held-out greedy accuracy "
      f"{eval_rows[0]['eval/greedy_acc/all']:.1%} -> {eval_rows[-1]['eval/greedy_acc/all']:.1%}; "
      f"warm start: {warm_ref[-1]['step']} supervised steps")
assert [r["step"] for r in eval_rows] == list(range(0, 301, 10)), "an evaluation every 10 iterations"
assert all(r["tepo/mask_frac_first_step"] == 0.0 for r in train_rows), \
    "the mask is empty on each rollout's first step"
assert all(0.0 <= r["losses/clip_frac"] <= 1.0 and 0.0 <= r["tepo/mask_frac"] <= 1.0 for r in train_rows), \
    "fractions lie in [0, 1]"

# %% [markdown]
# ## Figure: the four curves to watch

# %%
fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex=True)
ax = axes[0, 0]
x, y = column(train_rows, "charts/reward_mean")
ax.plot(x, y, color="tab:blue", alpha=0.25, lw=0.8)
ax.plot(x, smooth(y), color="tab:blue", label="sampled reward (T = 0.7), smoothed")
for key, style, label in (("eval/greedy_acc/all", "o-", "held-out greedy accuracy"), ("eval/pass@4", "s--", "held-out pass@4")):
    ex, ey = column(eval_rows, key)
    ax.plot(ex, ey, style, ms=3, color="tab:green" if "greedy" in key else "tab:olive", label=label)
ax.set_title("reward and held-out accuracy")
ax.legend(fontsize=7)
ax = axes[0, 1]
x, y = column(train_rows, "charts/entropy")
ax.plot(x, y, color="tab:purple", alpha=0.25, lw=0.8)
ax.plot(x, smooth(y), color="tab:purple")
ax.set_title("policy entropy (nats per response token)")
ax = axes[1, 0]
for key, color, label in (("losses/clip_frac", "black", "clip fraction (all)"),
                          ("losses/clip/neg_low", "tab:red", "A < 0, s < 1 - eps_low"),
                          ("losses/clip/pos_high", "tab:blue", "A > 0, s > 1 + eps_high")):
    x, y = column(train_rows, key)
    ax.plot(x, smooth(y), color=color, label=label)
x, y = column(train_rows, "charts/lr")
ax2 = ax.twinx()
ax2.plot(x, y, color="grey", ls=":", label="learning rate")
ax2.set_ylabel("learning rate", color="grey")
ax.set_title("clip fraction (smoothed)")
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
fig.suptitle("TEPO on 3-digit add: the quickstart's run (seed 1)")
fig.tight_layout()
fig.savefig(OUT / "09_reference_curves.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# ### What each curve says
#
# * **Reward and held-out accuracy** (top left). The sampled reward climbs from about 0.25 to about
#   0.8, and greedy accuracy on prompts never trained on from 24% to 88%, with large jumps between
#   evaluations early on (200 held-out prompts; a small model's greedy answers flip together). The
#   reward is measured on answers sampled at temperature 0.7, which are wrong more often than greedy
#   ones, so it sits below greedy accuracy; it comes from fresh training prompts, the accuracy from
#   prompts never trained on, and the two rising together is what says the policy learned addition. This pair is the only evidence of learning. The loss (`losses/loss`) is not:
#   its value depends on this iteration's advantages, which are centred at zero by construction.
# * **Entropy** (top right) falls steadily, from about 0.45 nats per token on the first iterations to
#   about 0.12: the policy sharpens as it becomes right. A steady decline alongside rising accuracy is healthy. Entropy collapsing to ~0 while
#   accuracy stalls would mean the policy stopped exploring — what clip-higher and TEPO's mask are meant
#   to slow down.
# * **Clip fraction** (bottom left) stays small (a few percent) and is almost all `neg_low`: within the
#   four optimizer steps on one rollout, wrong answers' sequence ratios $s_i$ fall below $1-\epsilon_l=0.8$
#   and stop being pushed. It fades to zero as the learning rate decays (dotted): smaller steps, ratios
#   closer to 1. A clip fraction that climbs toward tens of percent means steps too large for the trust
#   region.
# * **Mask fraction** (bottom right) is exactly 0 on each rollout's first step (θ = θ_old) and, on the
#   later steps, about 10% of tokens early in the run, rising to 15–20%: positive-advantage tokens whose
#   entropy the update has already reduced, which the masked KL holds back. It can only cover tokens
#   with $A>0$, so it grows with the reward, then levels off and dips late in the run as more groups
#   become all-right (and carry $A=0$).

# %% [markdown]
# ## Exercises
#
# **Exercise 1 — how many groups carry no signal?** Write `no_signal_probability(p, G)`: the chance that
# $G$ independent samples with success probability $p$ are all right or all wrong. Then compare it
# with the run's measured `charts/zero_spread_groups`, using each iteration's mean reward as $p$.

# %%
def no_signal_probability(p, G):
    ### BEGIN SOLUTION
    return p ** G + (1 - p) ** G
    ### END SOLUTION


ns_hint = "a group carries no signal when all G answers are right (p^G) OR all are wrong ((1 - p)^G)"
with exercise(1, no_signal_probability):
    cmp("P(no signal), p = 0.5, G = 8", no_signal_probability(0.5, 8), 2 / 256, atol=1e-15, hint=ns_hint)
    cmp("P(no signal), p = 0, G = 8", no_signal_probability(0.0, 8), 1.0, atol=1e-15, hint=ns_hint)
    cmp("P(no signal), p = 1, G = 3", no_signal_probability(1.0, 3), 1.0, atol=1e-15, hint=ns_hint)
    cmp("P(no signal), p = 0.25, G = 2", no_signal_probability(0.25, 2), 0.0625 + 0.5625, atol=1e-15, hint=ns_hint)
x, measured = column(train_rows, "charts/zero_spread_groups")
_, reward = column(train_rows, "charts/reward_mean")
iid = [no_signal_probability(p, 8) for p in reward]
print(f"mean over the run: measured {sum(measured) / len(measured):.3f}, "
      f"if every prompt were equally hard {sum(iid) / len(iid):.3f}")
assert sum(measured) / len(measured) > sum(iid) / len(iid), "unequal prompts give more all-equal groups (Jensen)"

fig, ax = plt.subplots(figsize=(6.5, 3.6))
ax.plot(x, smooth(measured), label="measured: groups with all-equal rewards (smoothed)")
ax.plot(x, smooth(iid), label=r"$p^G+(1-p)^G$ with $p$ = mean reward, $G$ = 8")
ax.set_xlabel("iteration")
ax.set_ylabel("fraction of groups")
ax.set_title("groups that carry no learning signal")
ax.grid(alpha=0.3)
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(OUT / "09_zero_spread.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# The measured curve is U-shaped — many all-wrong groups at the start, many all-right groups at the
# end, most signal in between — and lies far *above* the equal-difficulty prediction. The reason is
# that prompts are not equally hard: $p^G+(1-p)^G$ is convex in $p$, so averaging it over prompts
# with different $p$ gives more than evaluating it at the average $p$ (Jensen's inequality). Some sums
# are nearly always right for this model and others nearly always wrong; both kinds of group are
# wasted compute. That is the motivation for DAPO's dynamic sampling (drop them, sample more).
#
# **Exercise 2 — how unequal must the prompts be?** Jensen says unequal prompts raise the no-signal fraction;
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


with exercise(2, two_point_spread):
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
for step in (20, 100, 200):
    row = next(r for r in train_rows if r["step"] >= step)
    p_bar, frac = row["charts/reward_mean"], row["charts/zero_spread_groups"]
    d = two_point_spread(p_bar, frac, 8)
    print(f"iteration {row['step']:3d}: mean reward {p_bar:.2f}, no-signal groups {frac:.2f} -> prompts at "
          + (f"{p_bar - d:.2f} and {p_bar + d:.2f}" if d is not None else "no two-point batch reaches it"))

# %% [markdown]
# **Exercise 3 — when did it get there?** Write `first_step_reaching(rows, key, threshold)`: the first
# `step` whose `key` is at least `threshold` (None if never). The README's comparison table reports
# "iterations to 75%" this way.

# %%
def first_step_reaching(rows, key, threshold):
    ### BEGIN SOLUTION
    for row in rows:
        if key in row and row[key] >= threshold:
            return row["step"]
    return None
    ### END SOLUTION


with exercise(3, first_step_reaching):
    reach_hint = "walk the rows in order; skip rows without the key; >= threshold counts; None if never"
    check("first step at 75% is 130", first_step_reaching(ref, "eval/greedy_acc/all", 0.75) == 130,
          got=first_step_reaching(ref, "eval/greedy_acc/all", 0.75), hint=reach_hint)
    check("first step at 24% is 0", first_step_reaching(ref, "eval/greedy_acc/all", 0.24) == 0,
          got=first_step_reaching(ref, "eval/greedy_acc/all", 0.24), hint=reach_hint)
    got = first_step_reaching(ref, "eval/greedy_acc/all", 0.99)
    check("never reaching 99% gives None", got is None, got=got, hint=reach_hint)
    check("rows without the key are skipped",
          first_step_reaching([{"step": 3, "a": 0.1}, {"step": 7}, {"step": 9, "a": 0.5}], "a", 0.5) == 9,
          hint=reach_hint)

# %% [markdown]
# **Think about it** (no code): held-out accuracy at iteration 130 was 79.5%, at 150 it was 73%. Which
# one would you report as "the iteration at which it reached 75%", and what would you need (seeds, a
# bigger held-out set) before claiming that one objective gets there faster than another? The README's
# "Objectives side by side" section is one answer.
#
# ## Why these papers
#
# The papers behind this course — DeepSeekMath's GRPO (arXiv 2402.03300), DAPO (2503.14476), Dr. GRPO
# (2503.20783), GSPO (2507.18071), GTPO / GRPO-S (2508.04349) and TEPO (2510.09369 / 2604.12736) — argue
# largely through training curves: entropy that does or does not collapse, clip fractions, accuracy
# against steps or hours. TEPO's headline claim is about one of them (about half the convergence time of
# GRPO / DAPO). Reading those figures well means knowing what each curve measures and what it cannot
# show; this lesson's run is one seed on a toy task, and minitepo's own three-seed comparison (README,
# "Objectives side by side") did not reproduce that speed-up in this reading of TEPO.

# %% [markdown]
# ## Solutions
#
# **Exercise 2.** Wildly: with $G=8$, a mean of 0.5 and 30% no-signal groups need prompts near 0.14 and 0.86 — half the
# batch almost always wrong, half almost always right (equally hard prompts at 0.5 give 0.8%). The printout says
# the same of the run: at the three iterations printed, the measured fraction needs prompt accuracies 0.3 to 0.7
# apart, which is what a mix of easy and hard sums looks like to a small model.
