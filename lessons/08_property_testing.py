# %% [markdown]
# # Lesson 8 — Property-based testing of loss invariants
#
# An RL objective can be wrong in ways no training curve will show you: a normaliser computed on the
# wrong set of tokens, a value at a padded position that leaks into a gradient, an advantage that
# moves a group with nothing to learn. The run still trains, a bit worse, and nobody notices. The
# defence is to write down what must be true for *every* input — an invariant — and let a program
# search for an input that breaks it. That is property-based testing, and minitepo's test suite is
# built on it (`tests/test_losses_invariants.py`, spec §8).
#
# ## What you will learn
#
# * how to write a `hypothesis` strategy that draws ragged RL batches: groups of different sizes,
#   responses of different lengths, padding full of junk;
# * four invariants every objective in `OBJECTIVES` must satisfy, and how to state each as a test;
# * how hypothesis finds a planted bug — a per-micro-batch normaliser — and *shrinks* the failing
#   batch to the smallest one that still fails, so that you can read it;
# * how to point minitepo's property-testing kit, `minitepo.testing`, at any loss and read its verdicts.

# %% [markdown]
# ## Key equations
#
# The invariants come from spec §8 (items 1–4); the aggregation they protect is spec §3, implemented
# in `minitepo.losses.common.aggregate` and `step_normalizer`. Every objective is
# $\mathcal L=\frac1{Z}\sum_i w_i\sum_t m_{i,t}\,\ell_{i,t}$ with a per-token loss $\ell_{i,t}$, a per-response
# weight $w_i$ (1, or $1/\lvert o_i\rvert$) and a normaliser $Z$ that belongs to the **optimizer step**:
# $Z=N=\sum_i\lvert o_i\rvert$ for `token-mean`, $Z=B'$ for the seq-mean modes, $Z=C=B\,L_{max}$ for
# `seq-mean-token-sum-norm`. For any loss $\mathcal L(\text{batch})$ and its gradient $g=\nabla_{\ell^\theta}\mathcal L$:
#
# 1. **Permutation.** Reordering the responses (all tensors jointly) leaves $\mathcal L$ unchanged and permutes $g$.
# 2. **Masked junk.** Any value at a position with $m_{i,t}=0$ — including $\pm10^4$ — and any extra padding
#    columns leave $\mathcal L$ and $g$ unchanged and finite.
# 3. **Micro-batches.** Split the rows into micro-batches $\mathcal B_1,\dots,\mathcal B_K$ and let each divide by
#    the *step's* $Z$: then $\sum_k\mathcal L(\mathcal B_k;Z)=\mathcal L$ and the accumulated gradient is $g$, exactly.
#    Dividing each micro-batch by its own $Z_k$ is the classic bug: $\sum_k\frac{Z}{Z_k}\cdot(\text{share}_k)\ne\mathcal L$.
# 4. **No signal, no gradient.** A group whose rewards are all equal gets $A=0$, and then its tokens get
#    exactly zero policy gradient — TEPO's KL mask included (it needs $A>0$).
#
# ## Pseudocode
#
# ```
# strategy: draw group sizes, a width T, a length per response, 0/1 rewards, a seed for the floats
# property(batch): compute something two ways that must agree; assert they do
# hypothesis: run the property on many drawn batches; on a failure, shrink the batch
#             (fewer groups, shorter responses, smaller numbers) while it still fails; report it
# ```

# %%
import math
import os
import random
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from hypothesis import Phase, configuration, given, settings
from hypothesis import strategies as st

from minitepo import OBJECTIVES, group_advantages, step_normalizer, tepo_loss
from minitepo.advantages import grpo_s_advantages, gtpo_advantages, informative_groups
from minitepo.losses import objective_default

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
EXAMPLES = 100 if FULL else 8           # hypothesis examples per property; the test suite runs far more
SETTINGS = dict(derandomize=True, max_examples=EXAMPLES, deadline=None, database=None, report_multiple_bugs=False,
                phases=[Phase.explicit, Phase.generate, Phase.shrink])   # no "explain" phase: the last failure seen is the shrunk one
TIGHT = dict(rtol=1e-10, atol=1e-12)     # float64 throughout: "equal" means equal up to round-off
configuration.set_hypothesis_home_dir(str(OUT / "hypothesis"))   # hypothesis's cache beside the figures, not ./.hypothesis

# %% [markdown]
# ## A strategy for ragged RL batches
#
# Hypothesis draws the **structure** — group sizes, the padded width $T$, each response's length, the
# rewards — as plain Python values, so a failing example prints as a short, readable dict and shrinks
# well. The bulk floats (log-probs, entropies) come from a torch generator seeded by a drawn integer:
# fast, and still part of what hypothesis controls. `build` turns the dict into tensors, with junk in
# every padded position.

# %%
@st.composite
def ragged_batches(draw, max_groups=3, max_group_size=4, max_T=5):
    sizes = draw(st.lists(st.integers(1, max_group_size), min_size=1, max_size=max_groups))
    B = sum(sizes)
    T = draw(st.integers(1, max_T))
    return {"sizes": sizes, "T": T,
            "lengths": draw(st.lists(st.integers(1, T), min_size=B, max_size=B)),
            "rewards": draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=B, max_size=B)),
            "seed": draw(st.integers(0, 1000))}


def build(spec, junk=1e4):
    """Tensors of one optimizer step from a drawn spec. B responses, T positions, float64."""
    g = torch.Generator().manual_seed(spec["seed"])
    B, T = len(spec["lengths"]), spec["T"]
    mask = torch.arange(T)[None, :] < torch.tensor(spec["lengths"])[:, None]   # (B, T) prefix masks

    def token_tensor(x):                                                        # junk wherever mask is 0
        return torch.where(mask, x, torch.full_like(x, junk))

    logp = -3.0 * torch.rand(B, T, generator=g, dtype=torch.float64) - 0.05
    entropy = 0.05 + 2.0 * torch.rand(B, T, generator=g, dtype=torch.float64)
    return {
        "mask": mask,
        "logp": token_tensor(logp),
        "old_logp": token_tensor(logp + 0.3 * torch.randn(B, T, generator=g, dtype=torch.float64)),  # off-policy
        "ref_logp": token_tensor(logp + 0.2 * torch.randn(B, T, generator=g, dtype=torch.float64)),
        "entropy": token_tensor(entropy),
        "old_entropy": token_tensor(entropy + 0.3 * torch.randn(B, T, generator=g, dtype=torch.float64).abs()),
        "rewards": torch.tensor(spec["rewards"], dtype=torch.float64),
        "group_ids": torch.repeat_interleave(torch.arange(len(spec["sizes"])), torch.tensor(spec["sizes"])),
        "max_len": T + 2,                                                      # L_max, the response-length limit
    }


demo = build({"sizes": [2], "T": 3, "lengths": [1, 3], "rewards": [0.0, 1.0], "seed": 0})
print(demo["logp"])          # response 0 has one real token: its two padded positions hold junk (1e4)

# %% [markdown]
# Every objective gets the advantage it is meant to have: the group z-score, the mean-only version for
# Dr. GRPO, and the entropy-shaped ones for GTPO and GRPO-S (computed from the rollout's entropies,
# `old_entropy`). `run` calls one objective on some rows of a batch and returns the loss and the
# gradient with respect to `logp` — the quantity an optimizer actually sees.

# %%
def advantages(name, b):
    """The advantages objective `name` trains with: (B,), or (B, T) for GTPO."""
    if name == "gtpo":
        return gtpo_advantages(b["rewards"], b["old_entropy"], b["mask"], b["group_ids"])
    if name == "grpo_s":
        return grpo_s_advantages(b["rewards"], b["old_entropy"], b["mask"], b["group_ids"])
    return group_advantages(b["rewards"], b["group_ids"], scale="none" if name == "dr_grpo" else "std")


def run(name, b, adv, rows=None, normalizer=None, **options):
    """Loss and d loss / d logp of objective `name` on the given rows (default: all)."""
    rows = torch.arange(b["mask"].shape[0]) if rows is None else torch.as_tensor(rows)
    logp = b["logp"][rows].clone().requires_grad_(True)
    loss, _ = OBJECTIVES[name](logp=logp, old_logp=b["old_logp"][rows], advantages=adv[rows], mask=b["mask"][rows],
                               ref_logp=b["ref_logp"][rows], entropy=b["entropy"][rows],
                               old_entropy=b["old_entropy"][rows], max_len=b["max_len"], normalizer=normalizer,
                               **options)
    loss.backward()
    return loss.detach(), logp.grad


def default_agg(name):
    return objective_default(name, "agg")


print({name: default_agg(name) for name in OBJECTIVES})

# %% [markdown]
# ## Invariants 1 and 2: permutation and masked junk
#
# Each property is an ordinary function decorated with `@given(...)`; calling it runs hypothesis. The
# `@settings` keep the lesson fast and reproducible: `derandomize=True` (the same examples every run),
# few examples, no per-example deadline. `shapes` records what was drawn, for the figure.

# %%
shapes = []


@settings(**SETTINGS)
@given(spec=ragged_batches(), data=st.data())
def check_permutation(spec, data):
    b = build(spec)
    B = b["mask"].shape[0]
    shapes.append((B, spec["T"]))
    perm = torch.tensor(data.draw(st.permutations(range(B)), label="perm"))
    shuffled = {k: (v[perm] if torch.is_tensor(v) else v) for k, v in b.items()}
    for name in OBJECTIVES:
        loss, grad = run(name, b, advantages(name, b))
        loss_p, grad_p = run(name, shuffled, advantages(name, shuffled))
        torch.testing.assert_close(loss_p, loss, **TIGHT, msg=f"{name}: loss changed under a permutation")
        torch.testing.assert_close(grad_p, grad[perm], **TIGHT, msg=f"{name}: gradient did not follow its rows")


@settings(**SETTINGS)
@given(spec=ragged_batches(), extra=st.integers(0, 3), junk=st.sampled_from([0.0, -1e4, 3e3, -77.5]))
def check_masked_junk(spec, extra, junk):
    clean, dirty = build(spec, junk=1e4), build(spec, junk=junk)
    if extra:  # also widen the batch with `extra` padding columns full of junk
        for k in ("logp", "old_logp", "ref_logp", "entropy", "old_entropy"):
            dirty[k] = torch.cat([dirty[k], torch.full((dirty[k].shape[0], extra), junk, dtype=torch.float64)], 1)
        dirty["mask"] = torch.cat([dirty["mask"], torch.zeros(dirty["mask"].shape[0], extra, dtype=torch.bool)], 1)
    T = spec["T"]
    for name in OBJECTIVES:
        loss, grad = run(name, clean, advantages(name, clean))
        loss_d, grad_d = run(name, dirty, advantages(name, dirty))
        assert torch.isfinite(loss_d) and bool(torch.isfinite(grad_d).all()), f"{name}: junk made something non-finite"
        torch.testing.assert_close(loss_d, loss, **TIGHT, msg=f"{name}: junk at padding changed the loss")
        torch.testing.assert_close(grad_d[:, :T], grad, **TIGHT, msg=f"{name}: junk changed a gradient")
        assert bool((grad_d[:, T:] == 0).all()), f"{name}: padding columns got gradient"


check_permutation()
check_masked_junk()
print(f"permutation and masked junk: held on {len(shapes)} drawn batches for all {len(OBJECTIVES)} objectives")
assert len(shapes) >= EXAMPLES // 2, "hypothesis tried enough examples"

# %% [markdown]
# ## Invariant 3: micro-batches, and a planted bug
#
# Gradient accumulation splits one optimizer step into micro-batches that are run one after the other.
# The right way (`minitepo.rl.Trainer.optimizer_step` does this) computes the step's normaliser once with
# `step_normalizer(mask, agg, max_len)` and passes it as `normalizer=` to every micro-batch. The planted
# bug below leaves `normalizer` out, so each micro-batch divides by its *own* token (or response) count —
# the bug spec §3 calls the most common one in public GRPO code. On $K$ micro-batches that hold the same number
# of tokens each divides by $N/K$ instead of $N$, so the whole step comes out exactly $K$ times too large (the cell
# below shows it for $K=2$): a constant scale, which AdamW cancels (lesson 3) but the logged loss does not. Where the
# micro-batches hold different numbers of tokens the tokens are re-weighted against each other, which no optimizer
# undoes. The property compares values, so it fails in both cases; hypothesis then shrinks what it found.
#
# Advantages are a property of whole groups, so they are computed once on the full step and then sliced.

# %%
def accumulate_with_step_normalizer(name, b, adv, bounds):
    """The right way: every micro-batch divides by the whole step's normaliser."""
    Z = step_normalizer(b["mask"], default_agg(name), b["max_len"])
    parts = [run(name, b, adv, rows=range(lo, hi), normalizer=Z) for lo, hi in zip(bounds, bounds[1:])]
    return sum(p[0] for p in parts), torch.cat([p[1] for p in parts])


def accumulate_per_micro_batch(name, b, adv, bounds):
    """The planted bug: no normalizer, so each micro-batch divides by its own N or B'."""
    parts = [run(name, b, adv, rows=range(lo, hi)) for lo, hi in zip(bounds, bounds[1:])]
    return sum(p[0] for p in parts), torch.cat([p[1] for p in parts])


even = build({"sizes": [2, 2], "T": 3, "lengths": [2, 2, 3, 1], "rewards": [1.0, 0.0, 0.0, 1.0], "seed": 1})
even_adv = advantages("tepo", even)
loss_step, grad_step = run("tepo", even, even_adv)
loss_even, grad_even = accumulate_per_micro_batch("tepo", even, even_adv, [0, 2, 4])    # 4 real tokens each
print(f"the bug on 2 micro-batches of 4 tokens each: summed loss {loss_even.item():+.6f}, the step's "
      f"{loss_step.item():+.6f} (x{(loss_even / loss_step).item():.3f})")
check("on K = 2 equal micro-batches the bug makes the loss and every gradient exactly K times too large",
      torch.allclose(loss_even, 2 * loss_step, **TIGHT) and torch.allclose(grad_even, 2 * grad_step, **TIGHT))


def micro_batch_property(accumulate, names):
    """A hypothesis test: `accumulate` must reproduce the full-batch loss and gradient for every split."""
    failures = []

    @settings(**SETTINGS)
    @given(spec=ragged_batches(), data=st.data())
    def check(spec, data):
        b = build(spec)
        B = b["mask"].shape[0]
        cuts = data.draw(st.lists(st.integers(1, max(1, B - 1)), max_size=3, unique=True), label="cuts")
        bounds = [0, *sorted(c for c in cuts if 0 < c < B), B]
        for name in names:
            adv = advantages(name, b)
            loss, grad = run(name, b, adv)
            loss_acc, grad_acc = accumulate(name, b, adv, bounds)
            if not (torch.allclose(loss_acc, loss, **TIGHT) and torch.allclose(grad_acc, grad, **TIGHT)):
                failures.append({"name": name, "spec": spec, "bounds": bounds})   # the last one is the shrunk one
                raise AssertionError(f"{name}: accumulated {loss_acc.item():.6f}, full batch {loss.item():.6f}")

    return check, failures


check_right, _ = micro_batch_property(accumulate_with_step_normalizer, list(OBJECTIVES))
check_right()
print("micro-batches with the step's normaliser: full-batch gradient reproduced for all objectives")

check_bug, failures = micro_batch_property(accumulate_per_micro_batch, ["tepo"])
try:
    check_bug()
    found = False
except AssertionError as error:
    found = True
    print("hypothesis found the planted bug:", error)
    print((getattr(error, "__notes__", None) or ["(no note)"])[0])    # "Falsifying example: check(spec=..., ...)"
assert found, "hypothesis should have found the per-micro-batch normaliser"
shrunk = failures[-1]
print("shrunk counterexample:", shrunk)
assert sum(shrunk["spec"]["sizes"]) <= 4 and len(shrunk["bounds"]) >= 3, \
    "the shrunk counterexample is small and really split"
tokens_per_micro_batch = [sum(shrunk["spec"]["lengths"][lo:hi]) for lo, hi in zip(shrunk["bounds"], shrunk["bounds"][1:])]
print("real tokens per micro-batch:", tokens_per_micro_batch)
check("text: the shrunk counterexample is one group with different rewards, cut into micro-batches of different "
      "token counts", len(shrunk["spec"]["sizes"]) == 1 and len(set(shrunk["spec"]["rewards"])) > 1
      and len(set(tokens_per_micro_batch)) > 1, got=shrunk)

# %% [markdown]
# Read the shrunk counterexample: hypothesis started from whatever random batch first failed and kept
# simplifying it — fewer groups, shorter responses, smaller numbers — while the property still failed.
# What is left is a single group with different rewards (otherwise every advantage is 0 and both
# accumulations give a zero gradient), cut into micro-batches that hold *different numbers of tokens*.
# That is the whole bug in one picture: TEPO's `token-mean` divides every token of the step by the
# step's $N$, while the buggy accumulation divides each micro-batch by its own $N_k<N$, so every token
# is weighted by $1/N_k$ instead of $1/N$ — most of all in the smallest micro-batch.
#
# ## Figure: what hypothesis tried, and the gradient of the counterexample

# %%
b = build(shrunk["spec"])
adv = advantages(shrunk["name"], b)
_, g_full = run(shrunk["name"], b, adv)
_, g_right = accumulate_with_step_normalizer(shrunk["name"], b, adv, shrunk["bounds"])
_, g_bug = accumulate_per_micro_batch(shrunk["name"], b, adv, shrunk["bounds"])
real = b["mask"].flatten()
labels = [f"o{i}, t={t}" for i in range(b["mask"].shape[0]) for t in range(b["mask"].shape[1])]
labels = [lab for lab, keep in zip(labels, real.tolist()) if keep]

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
counts = {}
for shape in shapes:
    counts[shape] = counts.get(shape, 0) + 1
axes[0].scatter([s[0] for s in counts], [s[1] for s in counts], s=[40 * c for c in counts.values()], alpha=0.6)
axes[0].set_xlabel("responses in the batch (B)")
axes[0].set_ylabel("padded width (T)")
axes[0].set_title(f"batches drawn by the permutation property ({len(shapes)})")
axes[0].grid(alpha=0.3)
x = torch.arange(len(labels)).float()
for offset, grad, label in ((-0.27, g_full, "full batch"), (0.0, g_right, "micro-batches, step normaliser"),
                            (0.27, g_bug, "micro-batches, own normaliser (bug)")):
    axes[1].bar(x + offset, grad.flatten()[real].numpy(), width=0.27, label=label)
axes[1].set_xticks(x.numpy())
axes[1].set_xticklabels(labels, fontsize=8)
axes[1].axhline(0, color="black", lw=0.8)
axes[1].set_ylabel(r"$\partial\mathcal{L}/\partial\ell^\theta_{i,t}$")
axes[1].set_title(f"shrunk counterexample ({shrunk['name']}): gradient per real token")
axes[1].legend(fontsize=7)
fig.tight_layout()
fig.savefig(OUT / "08_property_testing.png", dpi=110)
plt.show()
plt.close()

# %% [markdown]
# What to see: the first two bar series are identical (that is invariant 3), the third is not — with
# its own, smaller normaliser each micro-batch's tokens get a larger gradient than the full step gives
# them. (A response whose sequence ratio is already outside the clip range gets zero gradient in all
# three.) The left panel shows the kind of batches the properties were checked on: small, ragged, many
# shapes; the test suite in `tests/` runs the same idea with many more examples.
#
# ## Exercises
#
# **Exercise 1 — the right advantage for every objective, and invariant 4.** Write `advantages_for`: the
# advantages objective `name` trains with, *with the rule of spec §2 and §7 that a group whose rewards
# are all equal gets exactly zero advantage*. For the group-relative objectives `group_advantages`
# already does that (`scale="none"` for Dr. GRPO). The entropy shaping of GTPO and GRPO-S would
# otherwise turn entropy noise into advantages; spec §7 says the papers rely on DAPO's dynamic sampling
# to remove all-equal groups *before* shaping, and minitepo's `gtpo_advantages` / `grpo_s_advantages`
# zero such groups by default (`equal_groups="zero"`); `informative_groups` is DAPO's filter, if you
# want to apply it yourself. The property then checks, for every objective in `OBJECTIVES`, that one all-equal
# group gets exactly zero gradient. (GRPO's reference KL, $\beta k_3$, pulls on every token whatever
# its advantage — it is a regulariser, not a policy gradient — so the property turns it off with
# `beta=0.0`.) Afterwards, try `equal_groups="shape"` for `gtpo` and `grpo_s` and run the property
# again: does it still hold?

# %%
def advantages_for(name, rewards, group_ids, entropy, mask):
    """Advantages for objective `name`; exactly 0 for every group whose rewards are all equal."""
    ### BEGIN SOLUTION
    if name in ("gtpo", "grpo_s"):
        shape = gtpo_advantages if name == "gtpo" else grpo_s_advantages
        adv = shape(rewards, entropy, mask, group_ids)
        keep = informative_groups(rewards, group_ids)                  # DAPO's dynamic-sampling filter
        return adv * (keep[:, None] if adv.dim() == 2 else keep)
    return group_advantages(rewards, group_ids, scale="none" if name == "dr_grpo" else "std")
    ### END SOLUTION


flat_checks = []


@settings(**SETTINGS)
@given(spec=ragged_batches(), value=st.sampled_from([0.0, 1.0]))
def check_no_signal_no_gradient(spec, value):
    b = build(spec)
    flat = b["group_ids"] == 0                                         # make group 0 all-equal
    b["rewards"] = torch.where(flat, torch.tensor(value, dtype=torch.float64), b["rewards"])
    b["old_entropy"] = torch.where(b["mask"], b["entropy"] + 1.0, b["old_entropy"])   # entropy "fell" everywhere
    for name in OBJECTIVES:
        adv = advantages_for(name, b["rewards"], b["group_ids"], b["old_entropy"], b["mask"])
        assert bool((adv[flat] == 0).all()), f"{name}: an all-equal group got advantages {adv[flat]}"
        _, grad = run(name, b, adv, **({"beta": 0.0} if name == "grpo" else {}))
        assert bool((grad[flat] == 0).all()), f"{name}: an all-equal group got gradient {grad[flat]}"
    flat_checks.append(spec)


rewards, ids = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0]), torch.tensor([0, 0, 0, 0, 1, 1])
ent, m = torch.rand(6, 3, dtype=torch.float64) + 0.1, torch.ones(6, 3, dtype=torch.bool)
zero_hint = "shaping turns entropy noise into advantages: zero the all-equal groups (informative_groups) after it"
with exercise(1, advantages_for):
    cmp("Dr. GRPO advantages (mean-only)", advantages_for("dr_grpo", rewards, ids, ent, m),
        torch.tensor([0.5, -0.5, -0.5, 0.5, 0.0, 0.0]), hint="Dr. GRPO: group_advantages(..., scale='none')")
    check("GTPO advantages of the all-equal group are 0", (advantages_for("gtpo", rewards, ids, ent, m)[4:] == 0).all(),
          hint=zero_hint)
    check("GRPO-S advantages of the all-equal group are 0",
          (advantages_for("grpo_s", rewards, ids, ent, m)[4:] == 0).all(), hint=zero_hint)
    check("GTPO keeps the informative group's signal", (advantages_for("gtpo", rewards, ids, ent, m)[:4] != 0).any())
    try:
        check_no_signal_no_gradient()
    except AssertionError as err:
        check(f"an all-equal group gets zero advantage and zero gradient, all {len(OBJECTIVES)} objectives", False,
              hint=str(err).splitlines()[0][:300])
    check(f"an all-equal group gets zero advantage and zero gradient, all {len(OBJECTIVES)} objectives",
          len(flat_checks) >= EXAMPLES // 2)

# %% [markdown]
# **Exercise 2 — your own accumulation.** Write `my_accumulate`: split the rows at `bounds`, run each
# micro-batch with `run(..., normalizer=...)`, and return the summed loss and the concatenated gradient.
# Get the normaliser right for every aggregation mode (hint: one function in `minitepo` computes it
# from the step's mask). The same hypothesis property that caught the planted bug checks your version on
# every objective in `OBJECTIVES`.

# %%
def my_accumulate(name, b, adv, bounds):
    """Gradient accumulation over micro-batches [bounds[k], bounds[k+1]) with the step's normaliser."""
    ### BEGIN SOLUTION
    Z = step_normalizer(b["mask"], default_agg(name), b["max_len"])
    losses, grads = [], []
    for lo, hi in zip(bounds, bounds[1:]):
        loss, grad = run(name, b, adv, rows=range(lo, hi), normalizer=Z)
        losses.append(loss)
        grads.append(grad)
    return sum(losses), torch.cat(grads)
    ### END SOLUTION


example = build({"sizes": [3], "T": 4, "lengths": [1, 4, 2], "rewards": [1.0, 0.0, 1.0], "seed": 3})
adv = advantages("dapo", example)
acc_hint = "every micro-batch divides by the WHOLE step's normaliser: step_normalizer(b['mask'], agg, b['max_len'])"
with exercise(2, my_accumulate):
    cmp("DAPO gradient accumulated over micro-batches [0, 1), [1, 3)",
        my_accumulate("dapo", example, adv, [0, 1, 3])[1], run("dapo", example, adv)[1], **TIGHT, hint=acc_hint)
    check_mine, my_failures = micro_batch_property(my_accumulate, list(OBJECTIVES))
    try:
        check_mine()
    except AssertionError:
        pass                                                           # the failures are collected below
    check(f"accumulated gradient = full-batch gradient, all {len(OBJECTIVES)} objectives (hypothesis)", my_failures == [],
          got=my_failures[:1] if my_failures else None, hint=acc_hint)

# %% [markdown]
# **Exercise 3 — find the bug.** A colleague wrote TEPO's policy term by hand (no mask; the reading of lesson 6:
# sequence ratio, 0.2 / 0.28, token-mean). It runs, its loss goes down, a model trained with it learns. It has a
# silent bug. Do not read it line by line yet: run this lesson's tools on it first. `loss_properties` runs two of the
# invariants above — permutation, and masked junk with extra padding columns — on any loss function of
# `(logp, old_logp, advantages, mask)`, and returns hypothesis's shrunk counterexample. Then find the line, explain
# what the bug does to training (the Solutions section has our answer), and write `fixed_tepo_policy_loss`. The check
# runs the same properties on your fix and compares it with `tepo_loss` on value and gradient, on a batch of ragged
# responses and on one with an empty row (a response cut to nothing, which the drawn batches never hold).

# %%
def suspect_tepo_policy_loss(logp, old_logp, advantages, mask, eps_low=0.2, eps_high=0.28):
    """TEPO's policy term, hand-written: s_i, token routing, clipped surrogate, token-mean."""
    m = mask.bool()
    x = torch.where(m, logp - old_logp, torch.zeros_like(logp))              # (B, T), 0 at padding
    s = torch.exp(x.mean(-1))                                                  # (B,) the sequence ratio
    s_tok = s.detach()[:, None] * torch.exp(logp - logp.detach())              # (B, T)
    A = advantages[:, None]
    lam = torch.maximum(-s_tok * A, -s_tok.clamp(1 - eps_low, 1 + eps_high) * A)
    return torch.where(m, lam, torch.zeros_like(lam)).sum() / m.sum()


def loss_properties(loss_fn):
    """Permutation and padding invariance of loss_fn(logp, old_logp, advantages, mask) on ragged batches drawn by
    hypothesis; returns the failures seen, the last one being hypothesis's shrunk counterexample."""
    failures = []

    def value_grad(b, adv, perm=None, extra=0):
        lp, old, m = b["logp"], b["old_logp"], b["mask"]
        if perm is not None:
            lp, old, m, adv = lp[perm], old[perm], m[perm], adv[perm]
        if extra:
            pad = torch.full((lp.shape[0], extra), -33.0, dtype=lp.dtype)      # junk in new padding columns
            lp, old = torch.cat([lp, pad], 1), torch.cat([old, pad], 1)
            m = torch.cat([m, torch.zeros(m.shape[0], extra, dtype=torch.bool)], 1)
        lp = lp.clone().requires_grad_(True)
        loss = loss_fn(lp, old, adv, m)
        (grad,) = torch.autograd.grad(loss, lp)
        return loss.detach(), grad[:, :b["mask"].shape[1]]

    @settings(**SETTINGS)
    @given(spec=ragged_batches(), extra=st.integers(1, 3), data=st.data())
    def properties(spec, extra, data):
        b = build(spec)
        adv = advantages("tepo", b)
        loss, grad = value_grad(b, adv)
        perm = torch.tensor(data.draw(st.permutations(range(b["mask"].shape[0])), label="perm"))
        loss_p, grad_p = value_grad(b, adv, perm=perm)
        if not (torch.allclose(loss_p, loss, **TIGHT) and torch.allclose(grad_p, grad[perm], **TIGHT)):
            failures.append({"property": "permutation", "lengths": spec["lengths"], "T": spec["T"]})
            raise AssertionError("permutation changed the loss or misplaced a gradient")
        loss_x, grad_x = value_grad(b, adv, extra=extra)
        if not (torch.allclose(loss_x, loss, **TIGHT) and torch.allclose(grad_x, grad, **TIGHT)):
            failures.append({"property": f"padding: {extra} more padding column(s) changed the loss "
                                         f"({loss.item():.6f} -> {loss_x.item():.6f})",
                             "lengths": spec["lengths"], "T": spec["T"]})
            raise AssertionError("extra padding changed the loss")

    try:
        properties()
    except AssertionError:
        pass                                                                   # the failures are in the list
    return failures


found = loss_properties(suspect_tepo_policy_loss)
print("the suspect:", found[-1] if found else "no property failed")
assert found, "the properties find the suspect's bug"
print("the library's tepo_loss:", loss_properties(lambda lp, old, adv, m: tepo_loss(
    logp=lp, old_logp=old, advantages=adv, mask=m, beta_mask=0.0, ratio_clip="sequence")[0]) or "no property failed")

# What the bug does to the trust region: short answers in a batch padded for a long one.
print(f"s_i of a 2-token answer whose tokens rose by 0.5 nats: {math.exp(0.5):.3f}; in a batch padded to width 20 "
      f"the suspect sees {math.exp(0.5 * 2 / 20):.3f}")


def fixed_tepo_policy_loss(logp, old_logp, advantages, mask, eps_low=0.2, eps_high=0.28):
    """The suspect with its bug fixed."""
    ### BEGIN SOLUTION
    m = mask.bool()
    x = torch.where(m, logp - old_logp, torch.zeros_like(logp))
    s = torch.exp(x.sum(-1) / m.sum(-1).clamp(min=1))                          # mean over REAL tokens only
    s_tok = s.detach()[:, None] * torch.exp(logp - logp.detach())
    A = advantages[:, None]
    lam = torch.maximum(-s_tok * A, -s_tok.clamp(1 - eps_low, 1 + eps_high) * A)
    return torch.where(m, lam, torch.zeros_like(lam)).sum() / m.sum()
    ### END SOLUTION


with exercise(3, fixed_tepo_policy_loss):
    fix_failures = loss_properties(fixed_tepo_policy_loss)
    check("permutation and padding properties hold for your fix", fix_failures == [],
          got=fix_failures[-1] if fix_failures else None,
          hint="what must s_i average over? Extra padding columns change mask.shape[1] but not |o_i|")
    for fix_lengths, which in (([1, 4, 2, 3], ""), ([1, 4, 0, 3], ", a batch with an empty row")):
        fix_b = build({"sizes": [2, 2], "T": 4, "lengths": fix_lengths, "rewards": [1.0, 0.0, 0.0, 1.0], "seed": 5})
        fix_adv = advantages("tepo", fix_b)
        lp = fix_b["logp"].clone().requires_grad_(True)
        mine = fixed_tepo_policy_loss(lp, fix_b["old_logp"], fix_adv, fix_b["mask"])
        ref, _ = tepo_loss(logp=lp, old_logp=fix_b["old_logp"], advantages=fix_adv, mask=fix_b["mask"], beta_mask=0.0,
                           ratio_clip="sequence", eps_low=0.2, eps_high=0.28)
        fix_hint = "fix the bug, change nothing else" + ("; an empty row has |o_i| = 0: divide by the length clamped "
                                                         "to 1, or its s_i is exp(0/0) = NaN" if which else "")
        cmp(f"fixed loss (vs tepo_loss, beta_mask=0){which}", mine, ref, **TIGHT, hint=fix_hint)
        cmp(f"fixed loss's gradient (vs tepo_loss){which}", torch.autograd.grad(mine, lp)[0],
            torch.autograd.grad(ref, lp)[0], **TIGHT, hint=fix_hint)

# %% [markdown]
# ## The kit: the same checks for any loss
#
# Everything above was written by hand for this lesson. minitepo ships the same idea as a library,
# `minitepo.testing`: a strategy for ragged batches, one check per invariant of spec §8, and `check_loss`, which
# runs every check that applies to a family and returns a verdict per property with hypothesis's shrunk
# counter-example. `keywords(fn)` adapts a loss that takes tensors by keyword (here the suspect's
# `(logp, old_logp, advantages, mask)`); `like="tepo"` says which family it claims to be, which fixes the
# aggregation weights the on-policy check expects. From a shell the same run is
# `minitepo check-loss my_module:suspect_tepo_policy_loss --like tepo`; docs/testing-kit.md shows what it finds
# in verl's and TRL's losses.
#
# Read the table, then the shrunk examples. *masked junk* is a check your own properties never made: the kit also fills
# padding with $-\infty$, $+\infty$ and NaN, as real log-prob tensors can hold there, and the suspect computes
# `exp(logp - logp.detach())` on every position before its `torch.where`: at a $-\infty$ it is $-\infty-(-\infty)$ =
# NaN, which the `where` hides from the value but not from the gradient (the cell checks that this is the shrunk
# example). Mask first, then compute, as `tepo_loss` does. *padding columns* is the bug of exercise 3: one more padding
# column changes the loss. *micro-batches* (and its variant with equal-size micro-batches) is a different story: the suspect
# divides by its own `m.sum()` and has no way to be told the optimizer step's token count, so under gradient
# accumulation each micro-batch is normalised on its own — the planted bug of invariant 3, caught again without
# looking for it. Hypothesis shrinks it to its harshest form, which is not the scaling of invariant 3: a micro-batch
# that holds only an empty response. Its own `m.sum()` is 0, the suspect returns $0/0$ = NaN, and so does the summed
# loss (the cell checks that this is what the printed example shows). Your fixed loss still fails *micro-batches*
# for the same reason; `tepo_loss` takes `normalizer=`, and the kit's `objective("tepo")` adapter passes it the
# step's, so the library passes every property; so does GMPO (`gmpo_loss`), one of the three objectives added last.
# In your own project's tests, `assert_invariants(my_loss, like="dapo")` from `minitepo.testing` raises with the
# shrunk example instead of returning verdicts.

# %%
from minitepo.testing import check_loss, format_findings, keywords, objective

suspect_findings = check_loss(keywords(suspect_tepo_policy_loss), like="tepo", seed=0, max_examples=EXAMPLES)
print(format_findings(suspect_findings))
verdict = {f.property: f.holds for f in suspect_findings}
check("the kit finds the suspect's padding bug", not verdict["padding columns"])
junk_example = next(f.example for f in suspect_findings if f.property == "masked junk")
check("text: the kit's masked-junk example is a NaN gradient from -inf log-probs at padding",
      not verdict["masked junk"] and "not finite" in junk_example and "'logp': -inf" in junk_example,
      got=junk_example.splitlines()[:1])
check("the kit finds that the suspect cannot share a step's normaliser", not verdict["micro-batches"])
micro_example = next(f.example for f in suspect_findings if f.property == "micro-batches")
counts_line = next((line for line in micro_example.splitlines() if "real tokens [" in line), "")
micro_tokens = [int(x) for x in counts_line.split("real tokens [")[-1].rstrip("]").split(",") if x.strip()]
check("text: the kit's shrunk micro-batches example is a NaN loss from a micro-batch with no real token",
      "nan vs" in micro_example and 0 in micro_tokens, got=(counts_line, micro_example.splitlines()[:1]))
check("the suspect keeps the invariants it does satisfy (permutation, on-policy weights)",
      verdict["permutation"] and verdict["on-policy weights"])
library_findings = check_loss(objective("tepo"), like="tepo", seed=0, max_examples=EXAMPLES)  # tells it the step
check("tepo_loss, told the step's normaliser, passes every property",
      all(f.holds for f in library_findings), got=[f.property for f in library_findings if not f.holds])
gmpo_findings = check_loss(objective("gmpo"), like="gmpo", seed=0, max_examples=EXAMPLES)   # one of the newest three
print(f"gmpo_loss (GMPO, arXiv 2507.20673): {sum(f.holds for f in gmpo_findings)} of {len(gmpo_findings)} properties hold")
check("gmpo_loss passes every property that applies to it",
      all(f.holds for f in gmpo_findings), got=[f.property for f in gmpo_findings if not f.holds])

# %% [markdown]
# ## Why these papers
#
# Spec §3 singles out the micro-batch normaliser because the public discussion of GRPO-style training
# keeps rediscovering it: DAPO (arXiv 2503.14476) and Dr. GRPO (arXiv 2503.20783) both show that *how*
# a token loss is normalised changes what the model learns (long wrong answers get under-penalised
# under a per-response mean), and gradient accumulation silently changes that normalisation when each
# micro-batch divides by its own count. GSPO (arXiv 2507.18071) and TEPO (arXiv 2510.09369 /
# 2604.12736) add sequence-level ratios, where a value at a padded position that leaks into a
# geometric mean corrupts a whole response. None of these bugs shows up as a crash. The invariants of
# spec §8, checked on many hypothesis-drawn batches in `tests/`, are how minitepo makes them
# impossible rather than unlikely; run `python3 -m pytest tests/test_losses_invariants.py` to see the
# full set, or set `MINITEPO_EXAMPLES=10` for ten times as many examples.

# %% [markdown]
# ## Solutions
#
# **Exercise 3.** The bug is `x.mean(-1)`: it averages the log-ratios over the *padded width* $T$, not over the
# response's $\lvert o_i\rvert$ real tokens. The padding property catches it at once (one more padding column changes
# the loss); the permutation property cannot (every row is treated alike). What it does to training: a short answer
# in a batch padded for a long one gets $s_i=\exp(\lvert o_i\rvert\,\bar x/T)$, pulled towards 1, so the clip range
# 0.8 .. 1.28 hardly ever binds on short answers — the trust region silently widens with the batch's longest answer,
# and the size of each update then depends on which answers happen to share a batch. Nothing crashes and the model
# still learns, so no loss curve shows it; an invariant does.
