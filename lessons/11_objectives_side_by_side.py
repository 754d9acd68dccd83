# %% [markdown]
# # Lesson 11 — Objectives side by side
#
# Every lesson so far looked at one objective at a time. This one puts six objectives' curves side by side: GRPO,
# DAPO (with and without dynamic sampling), GSPO, and TEPO (the reading the library ships, and the first reading it
# shipped). All start from **one** warm start on 3-digit `add`: seeds 20-24, 100 iterations each. The curves are
# committed, thinned copies of real runs.
#
# References: the data is `lessons/data/compare_add.json`, made by `lessons/data/thin_compare.py`;
# `lessons/data/README.md` says which runs, on which machine.
#
# **Which entropy.** The entropy in this data is the trainer's old metric `charts/entropy`: the mean entropy of the
# rows the step *trained on*. Without dynamic sampling that is every sampled response. With dynamic sampling it is
# only the groups that hold a right and a wrong answer. So compare the entropy of a run with dynamic sampling only
# with another such run. (New runs record both: `charts/entropy_sampled`, every sampled response, and
# `charts/entropy_trained`, the trained rows.)
#
# ## What you will learn
#
# * to read a comparison by **iterations and by sampled prompts**: dynamic sampling buys iterations with prompts;
# * why "time to target" needs the runs that never got there (censoring), not only the ones that did;
# * which objective ends with the most **entropy**, and what this data can and cannot say about why (does a KL
#   term hold entropy up? to which policy does it pull?);
# * to say what a difference between curves is caused by: the loss, or the data recipe.
#
# ## Key equations
#
# * mean curve over seeds: $\bar a(k)=\frac1S\sum_s a_s(k)$ at each evaluated iteration $k$;
# * prompts sampled by iteration $k$: $P(k)=32\sum_{j\le k}\text{rounds}_j$ (dynamic sampling draws extra rounds);
# * iterations to target $\tau$, censored: $\min\{k: a(k)\ge\tau\}$, or one evaluation past the last ($110$) when
#   the run never reaches $\tau$.
#
# Code: `run_summary` in `minitepo/lab/stats.py` computes the censored iterations.
#
# ## Pseudocode
#
# ```
# data = load compare_add.json                       # {objective: {seed: {step, acc, entropy, prompts}}}
# for objective: mean accuracy and entropy over seeds at each evaluated iteration
# plot accuracy against iterations and against prompts; entropy against iterations
# first iteration each run reaches 60% (yours, exercise 1); the objective that keeps entropy highest (exercise 2)
# ```

# %%
import json
import os
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import torch  # noqa: E402

import minitepo  # noqa: E402
from minitepo.lab.stats import run_summary  # noqa: E402

sys.path.insert(0, str(Path(minitepo.__file__).resolve().parent.parent / "lessons"))   # lessons/checks.py
from checks import LESSONS_DIR, check, cmp, exercise  # noqa: E402

torch.set_num_threads(1)
FULL = os.environ.get("MINITEPO_LESSONS") == "full"   # nothing trains here: both settings read the same data
OUT = Path("runs/lessons")
OUT.mkdir(parents=True, exist_ok=True)

DATA = json.loads((LESSONS_DIR / "data" / "compare_add.json").read_text())
for name, runs in DATA.items():
    print(f"{name:48s} {len(runs)} runs, evaluations at {runs[next(iter(runs))]['step']}")
check("every objective has five seeds", all(len(runs) == 5 for runs in DATA.values()), got={k: len(v) for k, v in DATA.items()})
check("every run is evaluated at the same iterations",
      len({tuple(r["step"]) for runs in DATA.values() for r in runs.values()}) == 1)


def mean_curve(runs: dict, key: str) -> list[float]:
    """The mean over seeds of ``key`` at each evaluated iteration."""
    columns = list(zip(*(r[key] for r in runs.values())))
    return [sum(c) / len(c) for c in columns]


# %% [markdown]
# ## Figure: accuracy by iterations, by prompts, and entropy
#
# Look first, then read on: which objectives are fast *per iteration*? Do they stay fast *per prompt*? Whose
# entropy stays up?

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
steps = DATA[next(iter(DATA))][next(iter(DATA[next(iter(DATA))]))]["step"]
for name, runs in DATA.items():
    axes[0].plot(steps, mean_curve(runs, "acc"), marker=".", label=name)
    axes[1].plot(mean_curve(runs, "prompts"), mean_curve(runs, "acc"), marker=".", label=name)
    axes[2].plot(steps, mean_curve(runs, "entropy"), marker=".", label=name)
for ax, (x, y) in zip(axes, (("iteration", "held-out accuracy"), ("prompts sampled", "held-out accuracy"),
                             ("iteration", "policy entropy (nats/token)"))):
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(alpha=0.3)
axes[0].axhline(0.6, color="grey", lw=0.8, ls="--")
axes[1].axhline(0.6, color="grey", lw=0.8, ls="--")
axes[0].legend(fontsize=7)
fig.suptitle("3-digit add from one warm start, mean over seeds 20-24")
fig.tight_layout()
fig.savefig(OUT / "11_side_by_side.png", dpi=110)
plt.show()
print("figure:", OUT / "11_side_by_side.png")

final = {name: mean_curve(runs, "acc")[-1] for name, runs in DATA.items()}
prompts = {name: mean_curve(runs, "prompts")[-1] for name, runs in DATA.items()}
print("final accuracy:", {k: round(v, 3) for k, v in final.items()})
print("prompts sampled in 100 iterations:", {k: round(v) for k, v in prompts.items()})
check("dynamic sampling samples more prompts for the same iterations",
      prompts["dapo"] > prompts["dapo:dynamic_sampling=false"], got=prompts)
FIRST = "tepo, first reading (sequence 0.2/0.28)"
early = [i for i, s in enumerate(steps) if 10 <= s <= 50]
check("the first reading has the lowest mean accuracy at every evaluation from iteration 10 to 50",
      all(min(DATA, key=lambda n: mean_curve(DATA[n], "acc")[i]) == FIRST for i in early))
SHIPPED = "tepo as shipped (token_log, dynamic sampling)"
rank = {name: [] for name in DATA}                        # 1 = the highest mean accuracy at that evaluation
for i, s in enumerate(steps):
    order = sorted(DATA, key=lambda n: -mean_curve(DATA[n], "acc")[i])
    for r, name in enumerate(order, 1):
        rank[name].append(r)
print("rank by mean accuracy at iterations", steps[1:])
for name in DATA:
    print(f"  {name:48s} {rank[name][1:]}")
check("DAPO (dynamic sampling) has the highest mean accuracy at every evaluation from iteration 10 on",
      all(r == 1 for r in rank["dapo"][1:]), got=rank["dapo"])
check("TEPO as shipped (dynamic sampling) is never first, and ranks second at some evaluations and lower at others",
      min(rank[SHIPPED][1:]) == 2 and max(rank[SHIPPED][1:]) > 2, got=rank[SHIPPED])

# %% [markdown]
# Reading the figure (the cell above ranks the six at each evaluation): DAPO with dynamic sampling climbs fastest per
# iteration, first at every evaluation from iteration 10 on. TEPO as it ships, the other entry with dynamic sampling,
# does not: it is second at some evaluations and lower at others. Each iteration with dynamic sampling costs more
# prompts (middle panel; the count is printed). Before crediting the loss, compare an objective with itself, with and
# without dynamic sampling. TEPO's first reading (`ratio_clip="sequence"` with 0.2 / 0.28, no dynamic sampling) is
# the slowest from iteration 10 to 50 (checked above). This data does not say why.
#
# ## Exercises
#
# **Exercise 1.** Write `first_to_target(steps, accs, target)`: the first evaluated iteration whose accuracy is at
# least `target`, or `None` if the run never gets there. It is checked against `run_summary` on every run. Then the
# cell counts, per objective, how many of its five runs reach 60%: the "reached" column of a comparison. It also
# shows why a mean over only the runs that got there flatters the slow objectives.

# %%
def first_to_target(steps, accs, target):
    """The first iteration in ``steps`` whose accuracy in ``accs`` is >= ``target``; None if there is none."""
    ### BEGIN SOLUTION
    return next((s for s, a in zip(steps, accs) if a >= target), None)
    ### END SOLUTION


with exercise(1, first_to_target):
    for name, runs in DATA.items():
        for seed, r in runs.items():
            records = [{"step": s, "eval/greedy_acc/all": a} for s, a in zip(r["step"], r["acc"])]
            want = run_summary(records, target=0.6, prompts_per_round=32)["iters_to_target"]
            got = first_to_target(r["step"], r["acc"], 0.6)
            check(f"{name} seed {seed}: first iteration at 60%", got == want, got=got,
                  hint=f"expected {want}: >= target (not >), the first such iteration, None when never", quiet=True)
    reached = {name: sum(first_to_target(r["step"], r["acc"], 0.6) is not None for r in runs.values())
               for name, runs in DATA.items()}
    print("runs that reached 60%:", reached)
    cmp("runs that reached 60%, all objectives", sum(reached.values()),
        sum(run_summary([{"step": s, "eval/greedy_acc/all": a} for s, a in zip(r["step"], r["acc"])], target=0.6,
                        prompts_per_round=32)["iters_to_target"] is not None
            for runs in DATA.values() for r in runs.values()))

# %% [markdown]
# **Exercise 2 (explain a difference).** Write `highest_final_entropy(data)`: the objective whose mean entropy at
# the last evaluation is the highest (the mean over seeds first: one seed's curve is not the objective's). Then,
# before opening the Solutions, answer three questions. Why that one (lesson 5: what does its clip range do to the size
# of an update)? GRPO carries a KL term to the warm start (lesson 4): does this data show it holding GRPO's entropy
# above DAPO's, run without dynamic sampling? Why could TEPO's own KL term (lesson 6) not hold entropy up?

# %%
def highest_final_entropy(data):
    """The label in ``data`` with the highest mean (over seeds) entropy at the last evaluation."""
    ### BEGIN SOLUTION
    return max(data, key=lambda name: mean_curve(data[name], "entropy")[-1])
    ### END SOLUTION


with exercise(2, highest_final_entropy):
    entropies = {name: mean_curve(runs, "entropy")[-1] for name, runs in DATA.items()}
    print("last entropy:", {k: round(v, 3) for k, v in entropies.items()})
    got = highest_final_entropy(DATA)
    check("the objective with the highest final entropy", got == max(entropies, key=entropies.get), got=got,
          hint="mean over the seeds first, then the largest at the LAST evaluation")
    # two made-up objectives whose first seeds disagree with the mean over seeds: "a" has the highest single seed,
    # "b" the highest mean
    made_up = {"a": {"1": {"step": [0, 100], "acc": [0.2, 0.5], "entropy": [0.6, 0.55]},
                     "2": {"step": [0, 100], "acc": [0.2, 0.5], "entropy": [0.6, 0.15]}},
               "b": {"1": {"step": [0, 100], "acc": [0.2, 0.5], "entropy": [0.6, 0.45]},
                     "2": {"step": [0, 100], "acc": [0.2, 0.5], "entropy": [0.6, 0.40]}}}
    got = highest_final_entropy(made_up)
    check("the highest final entropy, mean over seeds, on made-up runs whose first seed disagrees with the mean",
          got == "b", got=got, hint="average the seeds' curves (mean_curve) before taking the largest: one seed, or "
                                    "the largest seed, is not the objective's entropy")

# %% [markdown]
# ## Why these papers
#
# GRPO (DeepSeekMath) keeps a KL penalty to a frozen reference. DAPO drops it and adds clip-higher and dynamic
# sampling. GSPO clips a geometric-mean sequence ratio very tightly. TEPO adds a token-level mask on top of a
# sequence-likelihood ratio. A comparison is only as good as what it holds fixed. Here that is the warm start, the
# seeds, the prompts per iteration and the evaluation, but not the data recipe: that is why DAPO is shown both ways.
#
# References: `research/claims/README.md` runs the same comparison with statistics (Welch intervals, a Holm correction).
#
# ## Solutions
#
# Exercise 1: a mean of "iterations to target" over only the runs that reached it drops exactly the slowest
# runs; counting the others at the censoring point (110 here) keeps them in.
#
# Exercise 2: GSPO (the printout has every entry's last entropy). Every entropy fell. Among the entries without
# dynamic sampling (they share a starting entropy), GSPO ends highest, then TEPO's first reading, then GRPO and DAPO.
# The gaps are a few hundredths of a nat, one or two per-seed standard deviations (the cell below prints both).
#
# * GSPO clips the geometric-mean sequence ratio at $1\pm$ a few $10^{-4}$: once a response has moved that little,
#   its whole gradient is gone. Its updates stay small, and it sharpens least. Its entropy still fell.
# * TEPO's first reading ends close to GSPO. Its runs ended at 53.5-63% accuracy (up from 24.5%; printed below),
#   the lowest final mean of the six, and slower learning may be all that keeps its entropy up.
# * GRPO carries $\beta\,k_3$ to the **frozen warm start** ($\beta=0.04$), a pull back towards the warm start's
#   spread-out distribution. Here it ends less than one per-seed standard deviation above DAPO without dynamic
#   sampling: on this data the KL term's effect on entropy is too small to see.
# * TEPO's masked KL pulls towards the **old** policy of the current rollout, and only on masked tokens. That old
#   policy itself sharpens from one iteration to the next. So the mask damps a step; it cannot hold the entropy
#   up. (Lesson 6, Part 4: with 8 optimizer steps per rollout it slows the fall of entropy, and does not stop it.)
#   TEPO's entropy here is measured on the trained rows of dynamic sampling, so compare it with DAPO's: they end
#   within a few thousandths of each other.

# %%
def entropy_ends(name):
    ends = [r["entropy"][-1] for r in DATA[name].values()]
    mean = sum(ends) / len(ends)
    sd = (sum((e - mean) ** 2 for e in ends) / (len(ends) - 1)) ** 0.5
    return mean_curve(DATA[name], "entropy")[0], mean, sd


PLAIN = ["gspo", FIRST, "grpo", "dapo:dynamic_sampling=false"]
for name in DATA:
    start_e, end_e, sd_e = entropy_ends(name)
    accs = [r["acc"][-1] for r in DATA[name].values()]
    print(f"{name:48s} entropy {start_e:.3f} -> {end_e:.3f} (per-seed sd {sd_e:.3f}); final accuracy "
          f"{min(accs):.3f}-{max(accs):.3f}")
check("every entropy fell", all(entropy_ends(n)[1] < entropy_ends(n)[0] for n in DATA))
check("without dynamic sampling: GSPO > first reading > GRPO > DAPO at the end",
      [entropy_ends(n)[1] for n in PLAIN] == sorted((entropy_ends(n)[1] for n in PLAIN), reverse=True))
check("the entries with dynamic sampling start from a lower entropy (trained rows only)",
      entropy_ends("dapo")[0] < entropy_ends("grpo")[0])
gap_kl = entropy_ends("grpo")[1] - entropy_ends("dapo:dynamic_sampling=false")[1]
check("GRPO ends less than one per-seed sd above DAPO without dynamic sampling",
      0 < gap_kl < min(entropy_ends("grpo")[2], entropy_ends("dapo:dynamic_sampling=false")[2]), got=gap_kl)
first_accs = [r["acc"][-1] for r in DATA[FIRST].values()]
check("the first reading's runs ended at 53.5-63% from 24.5%, the lowest final mean",
      (min(first_accs), max(first_accs), round(mean_curve(DATA[FIRST], "acc")[0], 6)) == (0.535, 0.63, 0.245)
      and min(final, key=final.get) == FIRST)
check("TEPO as shipped and DAPO (both with dynamic sampling) end within 0.01 nats",
      abs(entropy_ends("tepo as shipped (token_log, dynamic sampling)")[1] - entropy_ends("dapo")[1]) < 0.01)
