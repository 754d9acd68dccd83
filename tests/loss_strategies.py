"""Hypothesis strategies for random RL batches, and the glue that calls an objective on one.

A ``Batch`` is what one optimizer step of a GRPO-style trainer sees: groups of responses of
random sizes, ragged lengths, padding filled with junk (including +-1e4), rewards with ties,
and an off-policy perturbation between the current and the behaviour log-probabilities large
enough to push many ratios outside every clip range.

Hypothesis draws the *structure* (group sizes, lengths, mask layout, junk, perturbation scale,
rewards); the bulk float values come from a torch generator seeded by a drawn integer, which
keeps example generation fast.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import os
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

import loss_oracles as oracle

DTYPE = torch.float64


def examples(n: int) -> int:
    """Hypothesis examples for a test: n scaled by $MINITEPO_EXAMPLES (default 1; e.g. 10 for a thorough run)."""
    return max(1, round(n * float(os.environ.get("MINITEPO_EXAMPLES", "1"))))

JUNK = (0.0, 1e4, -1e4, 3.0e3, -77.5)
TOKEN_TENSORS = ("logp", "old_logp", "ref_logp", "entropy", "old_entropy", "entropy_drop_score", "tok_adv")


@dataclass
class Batch:
    """One optimizer step's worth of rollout data. Shapes: B responses, T padded positions."""

    logp: torch.Tensor  # (B, T) current policy log-probs of the sampled tokens
    old_logp: torch.Tensor  # (B, T) behaviour policy
    ref_logp: torch.Tensor  # (B, T) frozen reference
    entropy: torch.Tensor  # (B, T) current full-vocabulary entropy
    old_entropy: torch.Tensor  # (B, T) rollout-time entropy
    entropy_drop_score: torch.Tensor  # (B, T) S(a) of section 6
    tok_adv: torch.Tensor  # (B, T) token advantages
    seq_adv: torch.Tensor  # (B,) sequence advantages
    rewards: torch.Tensor  # (B,)
    correct: torch.Tensor  # (B,) bool
    group_ids: torch.Tensor  # (B,) int64
    mask: torch.Tensor  # (B, T) bool or float 0/1
    max_len: int  # L_max >= T

    @property
    def B(self) -> int:
        return self.mask.shape[0]

    @property
    def T(self) -> int:
        return self.mask.shape[1]

    @property
    def bool_mask(self) -> torch.Tensor:
        return self.mask.bool()

    def replace(self, **changes) -> "Batch":
        return dataclasses.replace(self, **changes)

    def rows(self, index) -> "Batch":
        """The sub-batch (or permutation) of the given rows, every tensor selected jointly."""
        index = torch.as_tensor(index, dtype=torch.long)
        changes = {f.name: getattr(self, f.name)[index] for f in dataclasses.fields(self) if f.name != "max_len"}
        return self.replace(**changes)

    def map_tokens(self, fn) -> "Batch":
        """Apply fn to every (B, T) tensor (including the mask)."""
        changes = {name: fn(getattr(self, name)) for name in TOKEN_TENSORS + ("mask",)}
        return self.replace(**changes)

    def lists(self) -> dict:
        """Everything as nested Python lists, for the oracles."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out = {k: (v.tolist() if isinstance(v, torch.Tensor) else v) for k, v in out.items()}
        out["mask"] = self.bool_mask.tolist()
        return out


def fill_masked(x: torch.Tensor, mask: torch.Tensor, junk) -> torch.Tensor:
    """x with every masked position replaced by junk (a number or a tensor of x's shape)."""
    junk = torch.as_tensor(junk, dtype=x.dtype).expand_as(x)
    return torch.where(mask.bool(), x, junk)


@st.composite
def batches(draw, *, max_groups=4, max_group_size=4, max_T=8, min_T=1, empty_rows=True, prefix=None,
            equal_lengths=False, length=None, perturb=None, float_mask=None, distinct_rewards=False):
    """A random Batch. Options pin one aspect (e.g. equal_lengths=True, length=1, perturb=0.0)."""
    sizes = draw(st.lists(st.integers(1, max_group_size), min_size=1, max_size=max_groups))
    B = sum(sizes)
    T = draw(st.integers(max(min_T, length or 1), max_T))
    prefix = draw(st.booleans()) if prefix is None else prefix
    seed = draw(st.integers(0, 2**31 - 1))
    junk = draw(st.sampled_from(JUNK + ("random",)))
    perturb = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0])) if perturb is None else perturb
    float_mask = draw(st.booleans()) if float_mask is None else float_mask
    max_len = T + draw(st.integers(0, 3))

    g = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.rand(*shape, generator=g, dtype=DTYPE)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=DTYPE)

    if length is not None:
        lengths = [length] * B
    elif equal_lengths:
        lengths = [int(torch.randint(1, T + 1, (), generator=g))] * B
    else:
        lengths = torch.randint(0 if empty_rows else 1, T + 1, (B,), generator=g).tolist()
        if sum(lengths) == 0:
            lengths[0] = 1
    if distinct_rewards:
        rewards = (torch.randperm(B, generator=g).to(DTYPE) + 0.5 * rand(B)).tolist()
    else:  # few distinct values: ties and all-equal groups are common
        rewards = torch.tensor([0.0, 0.5, 1.0], dtype=DTYPE)[torch.randint(0, 3, (B,), generator=g)].tolist()

    mask = torch.zeros(B, T, dtype=torch.bool)
    for i, n in enumerate(lengths):
        cols = torch.arange(n) if prefix else torch.randperm(T, generator=g)[:n]
        mask[i, cols] = True

    logp = -4.0 * rand(B, T) - 0.01
    # a per-response offset and per-token noise: some sequence ratios land far outside the clip range
    old_logp = logp + perturb * (0.5 * randn(B, 1) + randn(B, T))
    ref_logp = logp + 0.5 * randn(B, T)
    ent = 0.05 + 3.0 * rand(B, T)
    old_ent = (ent + 0.3 * randn(B, T)).clamp_min(0.01)
    score = randn(B, T)
    seq_adv = randn(B) * (rand(B) > 0.15)  # some exact zeros
    tok_adv = randn(B, T)

    junk_t = (1e3 * randn(B, T)) if junk == "random" else junk
    tensors = dict(logp=logp, old_logp=old_logp, ref_logp=ref_logp, entropy=ent, old_entropy=old_ent,
                   entropy_drop_score=score, tok_adv=tok_adv)
    tensors = {k: fill_masked(v, mask, junk_t) for k, v in tensors.items()}
    rewards_t = torch.tensor(rewards, dtype=DTYPE)
    group_ids = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    return Batch(**tensors, seq_adv=seq_adv, rewards=rewards_t, correct=rewards_t > 0, group_ids=group_ids,
                 mask=mask.to(DTYPE) if float_mask else mask, max_len=max_len)


# --------------------------------------------------------------------------- how each objective is called


def library():
    import minitepo.losses as losses
    return losses


OBJECTIVE_NAMES = ("grpo", "dapo", "dr_grpo", "gspo", "gspo_token", "tepo", "gtpo", "grpo_s")
SEQUENCE_ADVANTAGE_ONLY = ()  # objectives that accept only one advantage per response (every one takes (B, T) too)
TOKEN_ADVANTAGE = ("gtpo",)  # GTPO's advantages are per token


def library_fn(name: str):
    return getattr(library(), f"{name}_loss")


@functools.lru_cache(maxsize=None)
def accepts(name: str, param: str) -> bool:
    return param in inspect.signature(library_fn(name)).parameters


def agg_modes_of(name: str) -> tuple:
    return oracle.AGG_MODES if accepts(name, "agg") else (None,)


def default_agg(name: str) -> str:
    return {"grpo": "seq-mean-token-mean", "dapo": "token-mean", "dr_grpo": "seq-mean-token-sum-norm",
            "gspo": "seq-mean-token-mean", "gspo_token": "seq-mean-token-mean", "tepo": "token-mean",
            "gtpo": "token-mean", "grpo_s": "token-mean"}[name]


def advantages_for(name: str, batch: Batch, token_level: bool = False) -> torch.Tensor:
    if name in TOKEN_ADVANTAGE or (token_level and name not in SEQUENCE_ADVANTAGE_ONLY):
        return batch.tok_adv
    return batch.seq_adv


def step_normalizer(name: str, batch: Batch, agg=None, max_len=None) -> float:
    """The global normaliser of a step for this objective/aggregation (N, B' or C)."""
    mode = agg or default_agg(name)
    return oracle.step_normalizer(batch.bool_mask.tolist(), mode, max_len if max_len is not None else batch.max_len)


def effective_beta(name: str, hp: dict) -> float:
    """The reference-KL coefficient in force: GRPO defaults to 0.04, every other objective to 0."""
    return hp.get("beta", 0.04 if name == "grpo" else 0.0)


def call_kwargs(name: str, batch: Batch, hp: dict, advantages: torch.Tensor) -> dict:
    """The keyword arguments for the library objective (tensors + the hyper-parameters in hp)."""
    kw = dict(logp=batch.logp, old_logp=batch.old_logp, advantages=advantages, mask=batch.mask)
    if effective_beta(name, hp):
        kw["ref_logp"] = batch.ref_logp
    if name == "tepo":
        if hp.get("mask_criterion", "measured") == "measured":
            kw.update(entropy=batch.entropy, old_entropy=batch.old_entropy)
        else:
            kw.update(entropy_drop_score=batch.entropy_drop_score)
    mode = hp.get("agg") or default_agg(name)
    if mode == "seq-mean-token-sum-norm" and accepts(name, "max_len"):
        kw["max_len"] = batch.max_len
    kw.update({k: v for k, v in hp.items() if v is not None or k == "dual_clip"})
    if "agg" in kw and kw["agg"] is None:
        del kw["agg"]
    return kw


@dataclass
class Result:
    loss: torch.Tensor  # scalar, detached
    grads: dict  # input name -> gradient (zeros where the input got no gradient)
    stats: dict

    @property
    def grad(self) -> torch.Tensor:
        return self.grads["logp"]


GRAD_INPUTS = ("logp", "old_logp", "ref_logp", "entropy", "old_entropy", "advantages", "entropy_drop_score")


def run(name: str, batch: Batch, token_level: bool = False, **hp) -> Result:
    """Loss, the gradient w.r.t. every float input, and stats of the library objective on batch."""
    advantages = advantages_for(name, batch, token_level)
    kw = call_kwargs(name, batch, hp, advantages)
    leaves = {}
    for key in GRAD_INPUTS:
        if key in kw and isinstance(kw[key], torch.Tensor):
            kw[key] = leaves[key] = kw[key].detach().clone().requires_grad_(True)
    loss, stats = library_fn(name)(**kw)
    loss.backward()
    grads = {k: (v.grad if v.grad is not None else torch.zeros_like(v)) for k, v in leaves.items()}
    return Result(loss.detach(), grads, stats)


def run_oracle(name: str, batch: Batch, token_level: bool = False, **hp):
    """(loss, grad w.r.t. logp) of the naive oracle for the same call."""
    L = batch.lists()
    adv = advantages_for(name, batch, token_level).tolist()
    kw = {k: v for k, v in hp.items() if v is not None or k == "dual_clip"}
    if effective_beta(name, hp):
        kw["ref_logp"] = L["ref_logp"]
    if name == "tepo":
        kw.update(entropy=L["entropy"], old_entropy=L["old_entropy"], entropy_drop_score=L["entropy_drop_score"])
    mode = kw.get("agg") or default_agg(name)
    if mode == "seq-mean-token-sum-norm" and "max_len" not in kw:
        kw["max_len"] = batch.max_len
    loss, grad = oracle.ORACLES[name](L["logp"], L["old_logp"], adv, L["mask"], **kw)
    return torch.tensor(loss, dtype=DTYPE), torch.tensor(grad, dtype=DTYPE)


# --------------------------------------------------------------------------- hyper-parameter strategies


@functools.lru_cache(maxsize=None)
def hyperparams(name: str):
    """A strategy of keyword hyper-parameters valid for objective `name` (beyond the tensors)."""
    eps = st.sampled_from([(0.2, 0.2), (0.2, 0.28), (0.1, 0.5), (3e-4, 4e-4)])
    dual = st.sampled_from([None, None, 3.0, 1.5])

    @st.composite
    def draw_hp(draw):
        eps_low, eps_high = draw(eps)
        hp = dict(eps_low=eps_low, eps_high=eps_high)
        if accepts(name, "dual_clip"):
            hp["dual_clip"] = draw(dual)
        if accepts(name, "agg"):
            hp["agg"] = draw(st.sampled_from(oracle.AGG_MODES))
        if accepts(name, "beta"):  # the optional reference KL (on by default only for GRPO)
            hp["beta"] = draw(st.sampled_from([0.0, 0.04, 0.5]))
            if hp["beta"]:
                hp["kl_kind"] = draw(st.sampled_from(["k1", "k2", "k3"]))
        if name == "tepo":
            hp["beta_mask"] = draw(st.sampled_from([0.0, 1.0, 0.3]))
            hp["mask_criterion"] = draw(st.sampled_from(["measured", "predicted"]))
            hp["mask_kl"] = draw(st.sampled_from(["k3", "k1_abs", "k2"]))
            hp["mask_tol"] = draw(st.sampled_from([0.0, 0.0, 0.05, 0.5]))
            hp["mask_action"] = draw(st.sampled_from(["kl", "gate"]))
            hp["ratio_clip"] = draw(st.sampled_from(["sequence", "token_log"]))
            if hp["ratio_clip"] == "token_log":
                hp["delta_low"], hp["delta_high"] = draw(st.sampled_from([(0.4, 0.4), (0.05, 0.3), (1.0, 0.02)]))
                hp["dual_clip"] = None  # dual_clip belongs to the sequence clip (refused with token_log)
        return hp

    return draw_hp()
