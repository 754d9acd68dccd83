"""Property testing for anyone's loss: the invariants of spec section 8 as a public kit.

    from minitepo.testing import assert_invariants, check_loss, format_findings
    print(format_findings(check_loss(my_loss, like="dapo")))      # a verdict per property, with shrunk examples
    assert_invariants(my_loss, like="dapo")                         # in a pytest file: raises on a violation

* ``batches``: hypothesis strategies for ragged rollout batches (group sizes, lengths, junk at padding (+-inf and
  NaN too in the masked-junk check), all-equal groups, off-policy drift, heavy clipping); ``Batch`` and ``Step``
  (a micro-batch's optimizer step); ``plain_batch``, a fixed benign one.
* ``check_*``: one invariant each, taking a loss callable; ``INVARIANTS`` lists them.
* ``check_loss`` runs every one that applies to a family (``like="dapo"``), ``format_findings`` / ``findings_json``
  report, ``assert_invariants`` raises; hints name a float32-sized difference or the aggregation a loss matches.
* adapters: ``objective`` (minitepo's objectives), ``keywords`` (any keyword-tensor loss), ``verl_policy_loss``
  and ``trl_grpo_loss`` (verl's registered losses, TRL's GRPOTrainer loss); ``as_kit_loss`` picks one from the
  signature, never from the function's name.

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
from minitepo.testing.batches import (DTYPE, FLOAT_TENSORS, JUNK, NONFINITE_JUNK, TOKEN_TENSORS, Batch, Step,
                                      batches, concat, examples, fill_masked, plain_batch, policy_gradient_weights)
from minitepo.testing.hints import FLOAT32
from minitepo.testing.invariants import (CURRENT_POLICY_INPUTS, FAMILIES, INVARIANTS, TIGHT, Invariant,
                                         InvariantViolation, check_clip, check_constants, check_empty_response,
                                         check_mask_containment, check_masked_junk, check_micro_batches,
                                         check_on_policy_weights, check_padding_columns, check_permutation,
                                         check_token_order, check_zero_advantage)
from minitepo.testing.verdicts import (Finding, LossViolatesInvariants, UnusableLoss, assert_invariants, check_loss,
                                       findings_json, format_findings)

__all__ = [
    "Batch", "Step", "batches", "plain_batch", "concat", "examples", "fill_masked", "DTYPE", "JUNK", "NONFINITE_JUNK",
    "TOKEN_TENSORS", "FLOAT_TENSORS", "Outcome", "SignatureError", "evaluate", "objective", "keywords", "as_kit_loss",
    "verl_policy_loss", "trl_grpo_loss",
    "TIGHT", "FLOAT32", "InvariantViolation", "Invariant", "INVARIANTS", "FAMILIES", "Finding", "check_loss",
    "format_findings", "findings_json", "assert_invariants", "LossViolatesInvariants", "UnusableLoss",
    "policy_gradient_weights", "CURRENT_POLICY_INPUTS", "check_permutation", "check_masked_junk",
    "check_padding_columns", "check_empty_response", "check_micro_batches", "check_token_order", "check_constants",
    "check_zero_advantage", "check_on_policy_weights", "check_clip", "check_mask_containment",
]
