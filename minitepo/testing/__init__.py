"""Property testing for anyone's loss: the invariants of spec section 8 as a public kit.

    from minitepo.testing import check_loss, format_findings, objective, keywords
    print(format_findings(check_loss(keywords(my_loss), like="dapo")))

* ``batches``: hypothesis strategies for ragged rollout batches (group sizes, lengths, junk at padding,
  all-equal groups, off-policy drift, heavy clipping); ``Batch`` and ``Step`` (a micro-batch's optimizer step).
* ``check_*``: one invariant each, taking a loss callable; ``INVARIANTS`` and ``check_loss`` run every one that
  applies to a family (``like="dapo"``), ``format_findings`` prints the table with the shrunk counter-examples.
* adapters: ``objective`` (minitepo's objectives), ``keywords`` (any keyword-tensor loss), ``verl_policy_loss``
  and ``trl_grpo_loss`` (verl's registered losses, TRL's GRPOTrainer loss).

The command ``minitepo check-loss MODULE:FUNCTION --like FAMILY`` does the same from a shell. docs/testing-kit.md
explains the conventions and reports what the kit found in verl's and TRL's losses.

Needs hypothesis (the ``test`` or ``lessons`` extra); ``import minitepo`` does not import this package.
"""

try:
    import hypothesis  # noqa: F401
except ImportError:  # pragma: no cover - exercised only without the extra
    raise ImportError("minitepo.testing needs hypothesis: pip install hypothesis "
                      "(or pip install -e '.[test]')") from None

from minitepo.testing.adapters import (Outcome, SignatureError, as_kit_loss, evaluate, keywords, objective,
                                       trl_grpo_loss, verl_policy_loss)
from minitepo.testing.batches import DTYPE, FLOAT_TENSORS, JUNK, TOKEN_TENSORS, Batch, Step, batches, concat, \
    examples, fill_masked
from minitepo.testing.invariants import (CURRENT_POLICY_INPUTS, FAMILIES, INVARIANTS, TIGHT, Finding, Invariant, InvariantViolation,
                                         check_clip, check_constants, check_empty_response, check_loss,
                                         check_mask_containment, check_masked_junk, check_micro_batches,
                                         check_on_policy_weights, check_padding_columns, check_permutation,
                                         check_token_order, check_zero_advantage, format_findings,
                                         policy_gradient_weights)

__all__ = [
    "Batch", "Step", "batches", "concat", "examples", "fill_masked", "DTYPE", "JUNK", "TOKEN_TENSORS", "FLOAT_TENSORS",
    "Outcome", "SignatureError", "evaluate", "objective", "keywords", "as_kit_loss", "verl_policy_loss",
    "trl_grpo_loss",
    "TIGHT", "InvariantViolation", "Invariant", "INVARIANTS", "FAMILIES", "Finding", "check_loss", "format_findings",
    "policy_gradient_weights", "CURRENT_POLICY_INPUTS", "check_permutation", "check_masked_junk", "check_padding_columns",
    "check_empty_response", "check_micro_batches", "check_token_order", "check_constants", "check_zero_advantage",
    "check_on_policy_weights", "check_clip", "check_mask_containment",
]
