# %% [markdown]
# # Lesson 11 — Objectives side by side
#
# Every lesson so far looked at one objective at a time. This one puts six runs' worth of curves next to each
# other: GRPO, DAPO (with and without dynamic sampling), GSPO and TEPO (the reading the library ships, and the
# first reading it shipped), all from **one** warm start on 3-digit `add`, seeds 20-24, 100 iterations each. The
# curves are committed, thinned copies of real runs (`lessons/data/compare_add.json`, made by
# `lessons/data/thin_compare.py`; `lessons/data/README.md` says which runs, on which machine).
#
# ## What you will learn
#
# * to read a comparison by **iterations and by sampled prompts**: dynamic sampling buys iterations with prompts;
# * why "time to target" needs the runs that never got there (censoring), not only the ones that did;
# * which objective keeps its **entropy** up, and why (a KL term, and to which policy it pulls);
# * to say what a difference between curves is caused by: the loss, or the data recipe.
#
# ## Key equations
#
# * mean curve over seeds: $\bar a(k)=\frac1S\sum_s a_s(k)$ at each evaluated iteration $k$;
# * prompts sampled by iteration $k$: $P(k)=32\sum_{j\le k}\text{rounds}_j$ (dynamic sampling draws extra rounds);
# * iterations to target $\tau$, censored: $\min\{k: a(k)\ge\tau\}$, or one evaluation past the last ($110$) when
#   the run never reaches $\tau$ (`minitepo.lab.stats.run_summary`).
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

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
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
print("figure:", OUT / "11_side_by_side.png")

final = {name: mean_curve(runs, "acc")[-1] for name, runs in DATA.items()}
prompts = {name: mean_curve(runs, "prompts")[-1] for name, runs in DATA.items()}
print("final accuracy:", {k: round(v, 3) for k, v in final.items()})
print("prompts sampled in 100 iterations:", {k: round(v) for k, v in prompts.items()})
check("dynamic sampling samples more prompts for the same iterations",
      prompts["dapo"] > prompts["dapo:dynamic_sampling=false"], got=prompts)

# %% [markdown]
# Reading the figure: the entries with dynamic sampling (DAPO, and TEPO as it ships) climb fastest per iteration,
# but each of their iterations costs more prompts (middle panel) — compare an objective with itself, with and
# without it, before crediting the loss. The first reading of TEPO (`ratio_clip="sequence"` with 0.2 / 0.28, no
# dynamic sampling) lags at the start: its loose clip lets early updates move too far.
#
# ## Exercises
#
# **Exercise 1.** Write `first_to_target(steps, accs, target)`: the first evaluated iteration whose accuracy is at
# least `target`, or `None` if the run never gets there. It is checked against `minitepo.lab.stats.run_summary` on
# every run. Then the cell counts, per objective, how many of its five runs reach 60% — the "reached" column of a
# comparison — and why a mean over only the runs that got there flatters the slow objectives.

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
# **Exercise 2 (explain a difference).** Write `highest_final_entropy(data)`: the objective whose mean entropy
# at the last evaluation is the highest. Then, before opening the Solutions, say *why* it is that one (lesson 5:
# what its clip range does to the size of an update), which objective comes next and which term of *its* loss
# holds the entropy up (lesson 4: towards which policy does it pull?), and why TEPO's own KL term (lesson 6) does
# not do the same.

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

# %% [markdown]
# ## Why these papers
#
# GRPO (DeepSeekMath) keeps a KL penalty to a frozen reference; DAPO drops it and adds clip-higher and dynamic
# sampling; GSPO clips a geometric-mean sequence ratio very tightly; TEPO adds a token-level mask on top of a
# sequence-likelihood ratio. A comparison is only as good as what it holds fixed: here the warm start, the seeds,
# the prompts per iteration and the evaluation — but not the data recipe, which is why DAPO is shown both ways.
# `docs/results.md` runs the same comparison with statistics (Welch intervals, a Holm correction).
#
# ## Solutions
#
# Exercise 1: a mean of "iterations to target" over only the runs that reached it drops exactly the slowest
# runs; counting the others at the censoring point (110 here) keeps them in.
#
# Exercise 2: GSPO, with the first reading of TEPO close behind and GRPO next. GSPO clips the geometric-mean
# sequence ratio at $1\pm$ a few $10^{-4}$: once a response has moved that little, its whole gradient is gone,
# so every update stays tiny and the policy sharpens slowly (its entropy barely moves in the figure). The first
# TEPO reading kept its entropy up for a worse reason: several of its runs learned little. GRPO carries
# $\beta\,k_3$ to the **frozen warm start** (β = 0.04), which pulls every token back towards the warm start's
# spread-out distribution all run long. TEPO's masked KL pulls towards the **old** (behaviour) policy of the
# current rollout, which itself sharpens from one iteration to the next, and only on masked tokens: it damps a
# step, it does not hold the entropy up — TEPO as shipped ends with DAPO's entropy.
