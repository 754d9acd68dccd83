"""Policy objectives of the GRPO family and TEPO, as pure functions of tensors.

Every objective is called the same way and returns ``(loss, stats)``::

    loss, stats = OBJECTIVES["tepo"](logp=logp, old_logp=old_logp, advantages=adv, mask=mask,
                                     entropy=entropy, old_entropy=old_entropy)
    loss.backward()

The formulas live in the docstrings, next to the code; docs/objectives.md compares them in one table.

Files:
    checks.py          input checks: ``checked_tensors`` turns raw arguments into checked plain tensors
    common.py          the math: ``aggregate`` (4 modes) and ``step_normalizer``, ``kl_penalty`` (k1/k2/k3),
                       the ratios, the clipped surrogate; the registry ``OBJECTIVES`` with each objective's
                       ``ObjectiveFacts`` (its advantages, its data recipe), and the papers' clip ranges
    token_level.py     token ratio r_it:          grpo, dapo, dr_grpo, gtpo, grpo_s (one function, five presets)
    sequence_level.py  sequence ratio s_i:        gspo, gspo_token
    tepo.py            TEPO, all of it:           tepo (``tepo_loss``), ``tepo_mask``, ``TEPO_MASK_TOL``
    cispo.py           clipped IS weight:         cispo (``cispo_loss``): REINFORCE with sg[clip(r)], no token dropped
    sapo.py            soft gate on r_it:         sapo (``sapo_loss``): a sigmoid gate instead of a hard clip
    gmpo.py            clipped geometric mean:    gmpo (``gmpo_loss``): token log-ratios clipped, then averaged
    entropy.py         ``entropy_from_logits``, ``predicted_entropy_drop_score`` (TEPO's "predicted" mask)

Statistics every objective reports (detached scalars): "pg_loss", "clip_frac", "clip/pos_high",
"clip/pos_low", "clip/neg_high", "clip/neg_low", "clip/dual", "ratio_mean", "approx_kl_old";
"kl_ref" when ``ref_logp`` is given; "seq_ratio_mean" for gspo, gspo_token, tepo, gmpo; "mask_frac"
and "mask_kl" for tepo; "gate_mean" for sapo.
"""

import inspect

import torch

from .checks import AGG_MODES, KL_KINDS
from .common import (EPS, EPS_HIGH_DAPO, EPS_HIGH_GSPO, EPS_LOW_GSPO, OBJECTIVE_FACTS, OBJECTIVES, ObjectiveFacts,
                     aggregate, kl_penalty, step_normalizer)
from .entropy import entropy_from_logits, predicted_entropy_drop_score
from .token_level import dapo_loss, dr_grpo_loss, grpo_loss, grpo_s_loss, gtpo_loss, token_ratio_loss
from .sequence_level import gspo_loss, gspo_token_loss
from .tepo import (TEPO_DEFAULTS, TEPO_DELTA, TEPO_MASK_ACTIONS, TEPO_MASK_CRITERIA, TEPO_MASK_KL, TEPO_MASK_TOL,
                   TEPO_RATIO_CLIPS, tepo_loss, tepo_mask)
from .cispo import CISPO_EPS_HIGH, CISPO_IS_CLIPS, cispo_loss
from .sapo import SAPO_TAU_NEG, SAPO_TAU_POS, sapo_loss
from .gmpo import GMPO_DELTA, GMPO_EMPTY_ROWS, GMPO_ZERO_ADV_CLIPS, gmpo_loss


def get_objective(name: str):
    """The objective function called ``name``; a ValueError lists the known names."""
    if not isinstance(name, str) or name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; allowed: {', '.join(repr(k) for k in OBJECTIVES)}")
    return OBJECTIVES[name]


def check_objective_kwargs(name: str, overrides: dict) -> None:
    """The objective ``name``'s hyper-parameters ``overrides`` checked once, by the objective's own checks (a
    ValueError says what is wrong and what is allowed): a trainer does this when its config is made, then calls the
    objective with ``validate=False``. The objective runs once on a one-token batch that has every optional input."""
    objective = get_objective(name)
    one = torch.zeros(1, 1, dtype=torch.float64)   # float64: a huge but finite setting (1e308) is not an overflow
    optional = {"ref_logp": one, "entropy": one, "old_entropy": one, "max_len": 1}
    if "entropy_drop_score" in inspect.signature(objective).parameters:
        optional["entropy_drop_score"] = one
    objective(logp=one, old_logp=one, advantages=torch.zeros(1, dtype=torch.float64), mask=torch.ones(1, 1), **optional,
              **overrides)


def objective_default(name: str, parameter: str):
    """The default of ``parameter`` in the objective called ``name`` (the spec's value); None if it has no such
    parameter."""
    param = inspect.signature(get_objective(name)).parameters.get(parameter)
    return None if param is None else param.default


__all__ = [
    "AGG_MODES", "KL_KINDS", "TEPO_MASK_ACTIONS", "TEPO_MASK_CRITERIA", "TEPO_MASK_KL", "TEPO_MASK_TOL",
    "TEPO_RATIO_CLIPS", "TEPO_DEFAULTS", "TEPO_DELTA", "EPS", "EPS_HIGH_DAPO", "EPS_LOW_GSPO", "EPS_HIGH_GSPO",
    "OBJECTIVES", "OBJECTIVE_FACTS", "ObjectiveFacts", "get_objective", "check_objective_kwargs",
    "objective_default", "token_ratio_loss",
    "tepo_mask",
    "aggregate", "kl_penalty", "step_normalizer", "entropy_from_logits", "predicted_entropy_drop_score",
    "grpo_loss", "dapo_loss", "dr_grpo_loss", "gspo_loss", "gspo_token_loss", "tepo_loss", "gtpo_loss", "grpo_s_loss",
    "cispo_loss", "sapo_loss", "gmpo_loss", "CISPO_EPS_HIGH", "CISPO_IS_CLIPS", "SAPO_TAU_POS", "SAPO_TAU_NEG",
    "GMPO_DELTA", "GMPO_ZERO_ADV_CLIPS", "GMPO_EMPTY_ROWS",
]
