"""The glue between minitepo's test suite and its property-testing kit, ``minitepo.testing``.

The strategies (``Batch``, ``batches``, junk) and the invariant checks live in the kit, so that a researcher can
point them at any loss; this file adds what only the suite needs: which minitepo objective takes which
hyper-parameters (``hyperparams``), ``run`` (one call of a library objective, loss + every gradient) and
``run_oracle`` (the same call on the naive oracle of ``loss_oracles.py``).
"""
from __future__ import annotations

import functools
import inspect

import torch
from hypothesis import strategies as st

import loss_oracles as oracle
from minitepo.testing import DTYPE, JUNK, TOKEN_TENSORS, Batch, Outcome, batches, evaluate, examples, fill_masked
from minitepo.testing import objective as kit_objective

__all__ = ["DTYPE", "JUNK", "TOKEN_TENSORS", "Batch", "batches", "examples", "fill_masked"]


# --------------------------------------------------------------------------- how each objective is called


def library():
    import minitepo.losses as losses
    return losses


OBJECTIVE_NAMES = ("grpo", "dapo", "dr_grpo", "gspo", "gspo_token", "tepo", "gtpo", "grpo_s", "cispo", "sapo", "gmpo")
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
            "gtpo": "token-mean", "grpo_s": "token-mean", "cispo": "token-mean", "sapo": "seq-mean-token-mean",
            "gmpo": "seq-mean-token-mean"}[name]


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


Result = Outcome   # loss, grads (Batch field name -> gradient), stats; .grad is d loss / d logp


def objective(name: str):
    """Library objective ``name`` in the kit's convention (cached: the kit adapter reads the signature once)."""
    return _objective(name)


@functools.lru_cache(maxsize=None)
def _objective(name: str):
    return kit_objective(name)


def config(name: str, token_level: bool = False, **hp) -> dict:
    """The keyword config for the kit adapter: hp, plus token advantages when asked."""
    return {**hp, "token_advantages": token_level} if token_level else dict(hp)


def run(name: str, batch: Batch, token_level: bool = False, **hp) -> Result:
    """Loss, the gradient w.r.t. every float input, and stats of the library objective on batch."""
    return evaluate(objective(name), batch, **config(name, token_level, **hp))


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
        hp = {}
        if accepts(name, "eps_low"):
            hp["eps_low"], hp["eps_high"] = draw(eps if name != "cispo" else st.sampled_from([(0.2, 4.0), (0.2, 0.28),
                                                                                              (0.1, 0.5)]))
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
        if name == "cispo":
            hp["is_clip"] = draw(st.sampled_from(["upper", "both"]))
        if name == "sapo":
            hp["tau_pos"], hp["tau_neg"] = draw(st.sampled_from([(1.0, 1.05), (0.5, 2.0), (3.0, 1.0)]))
        if name == "gmpo":
            hp["delta_low"], hp["delta_high"] = draw(st.sampled_from([(0.4, 0.4), (0.05, 0.3), (1.0, 0.02)]))
            hp["zero_adv_clip"] = draw(st.sampled_from(["zero", "as_positive", "as_negative"]))
        return hp

    return draw_hp()
