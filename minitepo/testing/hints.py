"""Why a property failed, when the kit can tell: hints printed under a violation.

* ``precision_hint``: two values differ by more than the tolerance but agree to float32's precision. A loss that
  computes in float32 differs from the float64 reference by ~1e-8 .. 1e-6 relative; the kit's default tolerance is
  float64 round-off (1e-10), so it reports them. The hint names the tolerance that accepts float32 (``FLOAT32``) and
  the flags that set it.
* ``aggregation_hint``: the on-policy gradient is -A_i w_i (spec §3); on a ragged batch where every aggregation's
  w_i differs, the hint names the aggregation whose weights the loss's gradient shows, or the factor by which they
  are off.
* ``normalizer_hint``: micro-batches fail and the loss cannot be told the step's normaliser at all.
"""
from __future__ import annotations

import torch

from minitepo.losses import AGG_MODES, OBJECTIVES, objective_default
from minitepo.testing.adapters import evaluate
from minitepo.testing.batches import Batch, plain_batch, policy_gradient_weights

FLOAT32 = dict(rtol=1e-5, atol=1e-6)
"""'Equal' for a loss computed in float32: float32's epsilon is 1.2e-7, and sums over a batch's tokens lose a few
more digits. A correct float32 DAPO passes every property at this tolerance on each of 20 seeds
(tests/test_check_loss_catch_rate.py)."""

WEIGHTS = {  # how each aggregation's w_i reads, for the hint
    "token-mean": "1/N",
    "seq-mean-token-mean": "1/(B'|o_i|)",
    "seq-mean-token-sum": "1/B'",
    "seq-mean-token-sum-norm": "1/(B L_max)",
    "padded width": "1/(B T), T the padded width",
}


def tolerance_flags(tol: dict) -> str:
    return f"--rtol {tol['rtol']:g} --atol {tol['atol']:g}"


def precision_hint(a: torch.Tensor, b: torch.Tensor, tol: dict) -> str | None:
    """A sentence when a and b differ beyond ``tol`` but only by float32-sized amounts; None otherwise."""
    if tol.get("rtol", 0) >= FLOAT32["rtol"] and tol.get("atol", 0) >= FLOAT32["atol"]:
        return None                                                        # already as loose as float32
    a, b = a.detach().double(), b.detach().double()
    if a.shape != b.shape or not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return None
    if not torch.allclose(a, b, **FLOAT32):
        return None
    relative = ((a - b).abs() / b.abs().clamp_min(1e-300)).max().item()
    return (f"the difference is float32-sized (largest relative {relative:.1g}), as a loss computed in float32 (or "
            f"with a small epsilon in a denominator) gives; if that is the cause, rerun with "
            f"{tolerance_flags(FLOAT32)} (Python: tol=minitepo.testing.FLOAT32)")


def on_policy(batch: Batch) -> Batch:
    """The batch on-policy: logp = old_logp = ref_logp, entropies unchanged, TEPO's predicted score negative, every
    token's advantage its response's. No ratio is clipped, no KL and no mask acts (spec §8.5)."""
    batch = batch.sequence_advantages_everywhere()
    return batch.replace(old_logp=batch.logp, ref_logp=batch.logp, old_entropy=batch.entropy,
                         entropy_drop_score=-batch.entropy_drop_score.abs() - 1)


def aggregation_hint(loss, agg: str, config: dict | None = None) -> str | None:
    """Run ``loss`` on-policy on a ragged plain batch; name the aggregation its weights match when that is not
    ``agg``, or the factor they are off by; None when the loss cannot run there or nothing matches."""
    batch = on_policy(plain_batch())
    try:
        grad = evaluate(loss, batch, **(config or {})).grad
    except Exception:  # noqa: BLE001 - a hint is best effort; the violation itself says what the loss raised
        return None
    m = batch.bool_mask
    observed = (-grad / batch.seq_adv[:, None])[m]                       # (real tokens,) w_i per token
    where = (f"on a ragged batch (lengths {batch.lengths}, T={batch.T}, L_max={batch.max_len}, on-policy) its "
             f"gradient is -A_i w_i with")
    if not torch.isfinite(observed).all():
        return None
    if (observed == 0).all():
        return f"{where} w_i = 0 everywhere: no gradient reaches logp"
    weights = {mode: policy_gradient_weights(batch, mode)[m] for mode in AGG_MODES}
    weights["padded width"] = torch.full_like(observed, 1.0 / (batch.B * batch.T))
    matches = [mode for mode, w in weights.items() if torch.allclose(observed, w, **FLOAT32)]
    if agg in matches:
        return None
    if matches:
        mode = matches[0]
        if mode == "padded width":
            return (f"{where} w_i = {WEIGHTS[mode]}: the constant comes from the tensor's width, not from L_max, the "
                    f"response-length limit (hand the loss L_max, e.g. a max_len parameter)")
        families = [f for f in OBJECTIVES if objective_default(f, "agg") == mode]
        family = f" (or --like {families[0]})" if families else ""
        return (f"{where} w_i = {WEIGHTS[mode]}, the weights of {mode}, not of {agg}: if the loss means {mode}, "
                f"check it with --agg {mode}{family}")
    ratio = observed / weights[agg]
    if torch.allclose(ratio, ratio[0].expand_as(ratio), **FLOAT32):
        return f"{where} w_i = {ratio[0].item():.4g} x {agg}'s {WEIGHTS[agg]}: the right shape, scaled"
    return None


def normalizer_hint(loss, agg: str) -> str | None:
    """When a micro-batch check fails: say whether the loss could be told the step's normaliser at all."""
    takes = getattr(loss, "takes_normalizer", None)
    if takes is False:
        return (f"the loss cannot receive the step's normaliser ({agg}: N, B' or B L_max of the whole step), so each "
                f"micro-batch can only divide by its own count. If one of its parameters takes the normaliser, name "
                f"it: --normalizer-arg NAME (Python: normalizer='NAME')")
    if takes is None:  # the kit's own convention: the loss sees `step`
        return (f"the loss is told the step: with step not None, divide by step.normalizer({agg!r}) (the whole "
                f"step's), not by the micro-batch's own count")
    return None
