"""Input checks shared by every objective: shapes, dtypes, devices, finiteness, hyper-parameters.

An objective's first lines check its hyper-parameters (``check_objective_args``, ``check_tepo_args``) and turn
its tensors into plain checked tensors (``checked_tensors``): cast to float32 (float64 stays float64), and set to
0 at masked positions. The math in ``common.py`` and
the objectives then never has to think about junk in the padding. Errors say what was wrong and what
is allowed, instead of failing somewhere inside torch.

Shape legend: B sequences (responses), T padded response width.
"""

from __future__ import annotations

import math
import torch

AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")
"""The four aggregation modes of spec §3 (formulas in ``common.aggregate``)."""
KL_KINDS = ("k1", "k2", "k3")
"""The KL estimators of spec §5 (formulas in ``common.kl_penalty``)."""
TEPO_RATIO_CLIPS = ("sequence", "token_log")
"""Where TEPO clips: the sequence ratio s_i with eps_low / eps_high ("sequence"), or each token's log-ratio
with delta_low / delta_high before the geometric mean ("token_log", GMPO-style)."""
TEPO_MASK_CRITERIA = ("measured", "predicted", "positive", "none")
"""What "entropy decreased at (i, t)" means in TEPO's mask (see ``tepo.tepo_mask``)."""
TEPO_MASK_KL = ("k3", "k1_abs", "k2")
"""The estimator of TEPO's masked KL to the old policy."""
TEPO_MASK_ACTIONS = ("kl", "gate")
"""What TEPO's mask does to a masked token: add beta_M * k to the old policy ("kl"), or take away the
gradient of its policy term ("gate")."""


def compute_dtype(x: torch.Tensor) -> torch.dtype:
    """float64 stays float64 (tests use it for tight tolerances); everything else becomes float32."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def check_mask(mask, shape: tuple[int, ...] | None = None) -> torch.Tensor:
    """Validate a 0/1 response mask and return it as a bool tensor (same shape)."""
    if not isinstance(mask, torch.Tensor):
        raise ValueError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
    if shape is not None and tuple(mask.shape) != tuple(shape):
        raise ValueError(f"mask has shape {tuple(mask.shape)} but logp has shape {tuple(shape)}; "
                         "they must match (B, T)")
    if mask.dtype == torch.bool:
        return mask
    if not mask.dtype.is_floating_point:
        # an integer mask is refused on purpose: int * float silently promotes, and an index tensor
        # passed by mistake would look like a mask
        raise ValueError(f"mask must be bool or float 0/1, got {mask.dtype}; pass mask.bool()")
    is_binary = (mask == 0) | (mask == 1)
    if not bool(is_binary.all()):
        bad = mask[~is_binary].flatten()[0].item()
        raise ValueError(f"mask must hold only 0 and 1, found {bad!r}; a response mask marks real tokens "
                         "(1) and padding (0) and has no fractional weights")
    return mask.bool()


def _first_bad(bad: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(i) for i in bad.nonzero()[0])


def clean(x: torch.Tensor, m: torch.Tensor, name: str, dtype: torch.dtype) -> torch.Tensor:
    """Check that ``x`` is finite where ``m`` is True, cast to ``dtype``, and put 0 where ``m`` is False.

    ``torch.where`` (not ``x * m``) is what makes junk harmless: its backward sends the incoming
    gradient only to the selected branch, so NaN/inf at a padded position never reaches any gradient.
    """
    if not (x.dtype.is_floating_point or x.dtype in (torch.int32, torch.int64)):
        raise ValueError(f"{name} must be a tensor of real numbers (floating point), got {x.dtype}")
    bad = ~torch.isfinite(x) & m
    if bool(bad.any()):
        raise ValueError(f"{name} has NaN or inf at {int(bad.sum())} real (mask=1) position(s), first at "
                         f"index {_first_bad(bad)}; only padded positions may hold junk")
    x = x.to(dtype)
    return torch.where(m, x, torch.zeros((), dtype=dtype, device=x.device))


def checked_per_token(x, name: str, m: torch.Tensor, dtype: torch.dtype, like: str = "logp"):
    """``x`` checked to be a (B, T) tensor shaped like ``like`` (whose mask is ``m``) and on its device, then
    detached, cast to ``dtype`` and zeroed at padding (``clean``). None stays None."""
    if x is None:
        return None
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if tuple(x.shape) != tuple(m.shape):
        raise ValueError(f"{name} has shape {tuple(x.shape)} but {like} has shape {tuple(m.shape)}; "
                         "every per-token tensor must be (B, T)")
    if x.device != m.device:
        raise ValueError(f"{name} is on {x.device} but {like} is on {m.device}; move it to the same device")
    return clean(x.detach(), m, name, dtype)


def checked_tensors(logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, *,
                    beta: float = 0.0):
    """An objective's tensors checked (shapes, dtypes, devices, finiteness at real tokens) and returned as plain
    tensors, float32 (float64 stays float64) and 0 at every masked position:

        logp, old_logp, A, m, ref_logp, entropy, old_entropy

    ``logp`` keeps its autograd graph; every other tensor is detached (old, reference and rollout quantities are
    constants of the update, and advantages never carry gradient). ``A`` is the (B, T) token advantage: a (B,)
    ``advantages`` is broadcast along each response. ``m`` is the (B, T) bool mask. ``ref_logp``, ``entropy`` and
    ``old_entropy`` stay None when not given.
    """
    if not isinstance(logp, torch.Tensor) or logp.dim() != 2:
        got = tuple(logp.shape) if isinstance(logp, torch.Tensor) else type(logp).__name__
        raise ValueError(f"logp must be a (B, T) tensor of per-token log-probs, got {got}")
    if not logp.dtype.is_floating_point:
        raise ValueError(f"logp must be floating point, got {logp.dtype}")
    shape, device, dtype = tuple(logp.shape), logp.device, compute_dtype(logp)
    B = shape[0]
    m = check_mask(mask, shape)

    def per_token(x, name):
        return checked_per_token(x, name, m, dtype)

    if old_logp is None:
        raise ValueError("old_logp is required: the log-probs of the sampled tokens under the rollout policy")
    if m.device != device:
        raise ValueError(f"mask is on {m.device} but logp is on {device}")
    old_logp_c = per_token(old_logp, "old_logp")
    if beta < 0 or not math.isfinite(beta):
        raise ValueError(f"beta (reference-KL coefficient) must be a finite number >= 0, got {beta}")
    if beta > 0 and ref_logp is None:
        raise ValueError(f"beta={beta} needs ref_logp (log-probs of the sampled tokens under the frozen "
                         "reference model); pass ref_logp, or beta=0 to train without a reference model")

    check_advantages(advantages, B, shape, device)
    if advantages.dim() == 1:
        adv = sequence_advantages(advantages, m, dtype)                      # (B,)
        A = torch.where(m, adv[:, None], torch.zeros((), dtype=dtype, device=device))   # (B, T)
    else:
        A = clean(advantages.detach(), m, "advantages", dtype)               # (B, T)
    return (clean(logp, m, "logp", dtype), old_logp_c, A, m, per_token(ref_logp, "ref_logp"),
            per_token(entropy, "entropy"), per_token(old_entropy, "old_entropy"))


def plain_tensors(logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None):
    """What ``checked_tensors`` returns, without its checks: for tensors that a trainer built and checked once (the
    objectives' ``validate=False``). The same conversion, so the same numbers to the bit: float32 (float64 stays),
    every tensor but ``logp`` detached, 0 at every masked position, (B,) advantages broadcast along each response."""
    dtype, m = compute_dtype(logp), mask if mask.dtype == torch.bool else mask.bool()
    zero = torch.zeros((), dtype=dtype, device=logp.device)
    plain = lambda x: None if x is None else torch.where(m, x.detach().to(dtype), zero)  # noqa: E731
    if advantages.dim() == 1:
        adv = torch.where(m.any(dim=-1), advantages.detach().to(dtype), zero)           # (B,)
        A = torch.where(m, adv[:, None], zero)                               # (B, T)
    else:
        A = plain(advantages)
    return (torch.where(m, logp.to(dtype), zero), plain(old_logp), A, m, plain(ref_logp), plain(entropy),
            plain(old_entropy))


def prepared_inputs(validate: bool, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, *,
                    agg: str, kl_kind: str, eps_low: float, eps_high: float, dual_clip, beta: float):
    """An objective's first step: its dual-clip constant (None: off) and ``checked_tensors``' seven plain tensors,
    with every hyper-parameter and tensor checked when ``validate``; without the checks (``plain_tensors``) for a
    caller that checked them once, a trainer whose config ran the objective's checks when it was made."""
    if not validate:
        return (float(dual_clip) if dual_clip else None), plain_tensors(logp, old_logp, advantages, mask, ref_logp,
                                                                        entropy, old_entropy)
    dual_c = check_objective_args(agg, kl_kind, eps_low, eps_high, dual_clip)
    return dual_c, checked_tensors(logp, old_logp, advantages, mask, ref_logp, entropy, old_entropy, beta=beta)


def check_advantages(advantages, B: int, shape: tuple[int, ...], device) -> None:
    """``advantages`` is a tensor of numbers on ``device``, of shape (B,) or (B, T)."""
    if not isinstance(advantages, torch.Tensor):
        raise ValueError(f"advantages must be a torch.Tensor, got {type(advantages).__name__}")
    if advantages.device != device:
        raise ValueError(f"advantages is on {advantages.device} but logp is on {device}")
    if advantages.dtype == torch.bool:
        raise ValueError("advantages must be numbers, got a bool tensor")
    if tuple(advantages.shape) not in ((B,), shape):
        raise ValueError(f"advantages must have shape (B,) = ({B},) for one advantage per response, or "
                         f"(B, T) = {shape} for one per token; got {tuple(advantages.shape)}")


def sequence_advantages(advantages: torch.Tensor, m: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B,) advantages (already checked by ``checked_tensors``) as A_i: detached, cast, 0 for a response with no
    real token.   (B,)"""
    return clean(advantages.detach(), m.any(dim=-1), "advantages", dtype)


def check_choice(value, allowed: tuple[str, ...], name: str) -> str:
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; allowed: {', '.join(repr(a) for a in allowed)}")
    return value


def check_normalizer(normalizer) -> float:
    """An aggregation's ``normalizer`` (N, B' or C of the whole optimizer step) as a float; a clear error if it is
    not a finite number > 0."""
    try:
        value = float(normalizer)
    except (TypeError, ValueError):   # a string, None inside a list, ...: the same clear error below
        value = math.nan
    if isinstance(normalizer, bool) or not (value > 0 and math.isfinite(value)):
        raise ValueError(f"normalizer must be a finite number > 0, got {normalizer!r}")
    return value


def check_clip(eps_low: float, eps_high: float, dual_clip) -> float | None:
    """Validate clip hyper-parameters; return the dual-clip constant c, or None when it is off."""
    if not (0.0 <= eps_low < 1.0):
        raise ValueError(f"eps_low must be in [0, 1) so that the lower clip bound 1 - eps_low is positive, "
                         f"got {eps_low}")
    if not (0.0 <= eps_high and math.isfinite(eps_high)):
        raise ValueError(f"eps_high must be a finite number >= 0, got {eps_high}")
    if dual_clip is None or dual_clip is False:
        return None
    if dual_clip is True or not isinstance(dual_clip, (int, float)) or not dual_clip > 1.0:
        raise ValueError(f"dual_clip must be None (off) or a constant c > 1 (the usual value is 3.0), "
                         f"got {dual_clip!r}")
    return float(dual_clip)


def check_objective_args(agg: str, kl_kind: str, eps_low: float, eps_high: float, dual_clip) -> float | None:
    """Validate the hyper-parameters every objective shares; return the dual-clip constant (None: off)."""
    check_choice(agg, AGG_MODES, "aggregation mode")
    check_choice(kl_kind, KL_KINDS, "KL estimator")
    return check_clip(eps_low, eps_high, dual_clip)


def check_mask_options(criterion: str, tol: float) -> None:
    """TEPO's mask criterion and its round-off tolerance."""
    check_choice(criterion, TEPO_MASK_CRITERIA, "TEPO mask criterion")
    if not (tol >= 0 and math.isfinite(tol)):
        raise ValueError(f"mask_tol must be a finite number >= 0, got {tol}")


def check_mask_inputs(criterion: str, entropy, old_entropy, entropy_drop_score) -> None:
    """TEPO's mask criterion has the tensors it reads."""
    if criterion == "measured" and (entropy is None or old_entropy is None):
        raise ValueError("TEPO's 'measured' mask criterion compares entropy (current policy) with old_entropy "
                         "(recorded by the sampler): pass both, or choose mask_criterion='predicted'")
    if criterion == "predicted" and entropy_drop_score is None:
        raise ValueError("TEPO's 'predicted' mask criterion needs entropy_drop_score = S(a), computed from the "
                         "full next-token distribution with losses.predicted_entropy_drop_score")


def check_tepo_args(*, agg: str, kl_kind: str, eps_low: float, eps_high: float, dual_clip, ratio_clip: str,
                    delta_low: float, delta_high: float, mask_criterion: str, mask_tol: float, mask_kl: str,
                    mask_action: str, beta_mask: float) -> float | None:
    """Every hyper-parameter of ``tepo_loss`` checked, with an error that says what is allowed; returns the
    dual-clip constant (None: off). (Whether the mask has its tensors is ``check_mask_inputs``'s.)"""
    dual_c = check_objective_args(agg, kl_kind, eps_low, eps_high, dual_clip)
    check_choice(ratio_clip, TEPO_RATIO_CLIPS, "TEPO ratio clip")
    for name, value in (("delta_low", delta_low), ("delta_high", delta_high)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value > 0 and math.isfinite(value)):
            raise ValueError(f"{name} (the token_log clip range, in nats) must be a finite number > 0, got {value!r}")
    if ratio_clip == "token_log" and dual_c is not None:
        raise ValueError("dual_clip applies to ratio_clip='sequence' only: with 'token_log' every token's log-ratio is "
                         "already bounded on the pessimistic side; pass dual_clip=None")
    check_mask_options(mask_criterion, mask_tol)
    check_choice(mask_kl, TEPO_MASK_KL, "TEPO mask KL estimator")
    check_choice(mask_action, TEPO_MASK_ACTIONS, "TEPO mask action")
    if not (beta_mask >= 0 and math.isfinite(beta_mask)):
        raise ValueError(f"beta_mask must be a finite number >= 0, got {beta_mask}")
    return dual_c
