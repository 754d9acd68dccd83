"""Policy objectives of the GRPO family and TEPO, as pure functions of tensors.

Every objective is called the same way and returns ``(loss, stats)``::

    loss, stats = OBJECTIVES["tepo"](logp=logp, old_logp=old_logp, advantages=adv, mask=mask,
                                     entropy=entropy, old_entropy=old_entropy)
    loss.backward()

The formulas live in the docstrings, next to the code; docs/objectives.md compares them in one table.

Files:
    checks.py          input checks: ``prepare_batch`` turns raw arguments into a checked ``Batch``
    common.py          the math: ``aggregate`` (4 modes) and ``step_normalizer``, ``kl_penalty`` (k1/k2/k3),
                       the clipped surrogate
    token_level.py     token ratio r_it:          grpo, dapo, dr_grpo, gtpo, grpo_s
    sequence_level.py  sequence ratio s_i:        gspo, gspo_token, tepo
    entropy.py         ``entropy_from_logits``, ``predicted_entropy_drop_score`` (TEPO's "predicted" mask)

Statistics every objective reports (detached scalars): "pg_loss", "clip_frac", "clip/pos_high",
"clip/pos_low", "clip/neg_high", "clip/neg_low", "clip/dual", "ratio_mean", "approx_kl_old";
"kl_ref" when ``ref_logp`` is given; "seq_ratio_mean" for gspo, gspo_token, tepo; "mask_frac"
and "mask_kl" for tepo.
"""

import inspect

from .checks import AGG_MODES, KL_KINDS
from .common import aggregate, kl_penalty, step_normalizer
from .entropy import entropy_from_logits, predicted_entropy_drop_score
from .sequence_level import (TEPO_MASK_ACTIONS, TEPO_MASK_CRITERIA, TEPO_MASK_KL, TEPO_MASK_TOL, TEPO_RATIO_CLIPS,
                             gspo_loss, gspo_token_loss, tepo_loss, tepo_mask)
from .token_level import dapo_loss, dr_grpo_loss, grpo_loss, grpo_s_loss, gtpo_loss

OBJECTIVES = {
    "grpo": grpo_loss,
    "dapo": dapo_loss,
    "dr_grpo": dr_grpo_loss,
    "gspo": gspo_loss,
    "gspo_token": gspo_token_loss,
    "tepo": tepo_loss,
    "gtpo": gtpo_loss,
    "grpo_s": grpo_s_loss,
}


def get_objective(name: str):
    """The objective function called ``name``; a ValueError lists the known names."""
    if not isinstance(name, str) or name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; allowed: {', '.join(repr(k) for k in OBJECTIVES)}")
    return OBJECTIVES[name]


def objective_default(name: str, parameter: str):
    """The default of ``parameter`` in the objective called ``name`` (the spec's value); None if it has no such
    parameter."""
    param = inspect.signature(get_objective(name)).parameters.get(parameter)
    return None if param is None else param.default


__all__ = [
    "AGG_MODES", "KL_KINDS", "TEPO_MASK_ACTIONS", "TEPO_MASK_CRITERIA", "TEPO_MASK_KL", "TEPO_MASK_TOL",
    "TEPO_RATIO_CLIPS", "OBJECTIVES", "get_objective", "objective_default",
    "tepo_mask",
    "aggregate", "kl_penalty", "step_normalizer", "entropy_from_logits", "predicted_entropy_drop_score",
    "grpo_loss", "dapo_loss", "dr_grpo_loss", "gspo_loss", "gspo_token_loss", "tepo_loss", "gtpo_loss", "grpo_s_loss",
]
