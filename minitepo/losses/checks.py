"""Input checks shared by every objective: shapes, dtypes, devices, finiteness, hyper-parameters.

An objective's first line turns its raw keyword arguments into a `Batch`: every tensor checked, cast
to float32 (float64 stays float64), and set to 0 at masked positions. The math in ``common.py`` and
the objectives then never has to think about junk in the padding. Errors say what was wrong and what
is allowed, instead of failing somewhere inside torch.

Shape legend: B sequences (responses), T padded response width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")
"""The four aggregation modes of spec §3 (formulas in ``common.aggregate``)."""
KL_KINDS = ("k1", "k2", "k3")
"""The KL estimators of spec §5 (formulas in ``common.kl_penalty``)."""


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


@dataclass
class Batch:
    """The inputs of one objective call after checking: float32/64, 0 at every masked position.

    ``logp`` keeps its autograd graph; every other tensor is detached (old, reference and rollout
    quantities are constants of the update, and advantages never carry gradient).
    """
    logp: torch.Tensor            # (B, T) current policy log-probs, with grad
    old_logp: torch.Tensor        # (B, T) behaviour policy log-probs
    adv: torch.Tensor             # (B,) or (B, T) advantages, as given
    adv_tok: torch.Tensor         # (B, T) advantages broadcast to tokens, 0 at padding
    m: torch.Tensor               # (B, T) bool mask
    lengths: torch.Tensor         # (B,) |o_i| as float
    nonempty: torch.Tensor        # (B,) bool: response has at least one real token
    ref_logp: torch.Tensor | None
    entropy: torch.Tensor | None
    old_entropy: torch.Tensor | None

    @property
    def dtype(self) -> torch.dtype:
        return self.logp.dtype


def prepare_batch(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None,
                  beta: float = 0.0) -> Batch:
    """Check shapes, dtypes, devices and finiteness of an objective's inputs; return a clean `Batch`."""
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

    if not isinstance(advantages, torch.Tensor):
        raise ValueError(f"advantages must be a torch.Tensor, got {type(advantages).__name__}")
    if advantages.device != device:
        raise ValueError(f"advantages is on {advantages.device} but logp is on {device}")
    if advantages.dtype == torch.bool:
        raise ValueError("advantages must be numbers, got a bool tensor")
    nonempty = m.any(dim=-1)                                                 # (B,)
    if tuple(advantages.shape) == (B,):
        adv = clean(advantages.detach(), nonempty, "advantages", dtype)          # (B,)
        adv_tok = torch.where(m, adv[:, None], torch.zeros((), dtype=dtype, device=device))  # (B, T)
    elif tuple(advantages.shape) == shape:
        adv = adv_tok = clean(advantages.detach(), m, "advantages", dtype)   # (B, T)
    else:
        raise ValueError(f"advantages must have shape (B,) = ({B},) for one advantage per response, or "
                         f"(B, T) = {shape} for one per token; got {tuple(advantages.shape)}")

    return Batch(
        logp=clean(logp, m, "logp", dtype),
        old_logp=old_logp_c,
        adv=adv,
        adv_tok=adv_tok,
        m=m,
        lengths=m.sum(dim=-1).to(dtype),
        nonempty=nonempty,
        ref_logp=per_token(ref_logp, "ref_logp"),
        entropy=per_token(entropy, "entropy"),
        old_entropy=per_token(old_entropy, "old_entropy"),
    )


def check_choice(value, allowed: tuple[str, ...], name: str) -> str:
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; allowed: {', '.join(repr(a) for a in allowed)}")
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


BATCH_ARGS = ("logp", "old_logp", "advantages", "mask", "ref_logp", "entropy", "old_entropy", "beta")
"""The arguments of an objective that ``prepare_batch`` checks."""


def checked_inputs(args: dict, check_args=None) -> tuple[Batch, float | None]:
    """An objective's prelude, one call: its hyper-parameters checked (``check_args(args)``, by default the ones
    every objective shares; it returns the dual-clip constant), then its tensors (``prepare_batch``).
    ``args`` is the objective's own arguments, ``locals()`` on its first line."""
    dual_c = check_args(args) if check_args else check_objective_args(
        args["agg"], args["kl_kind"], args["eps_low"], args["eps_high"], args["dual_clip"])
    return prepare_batch(**{name: args[name] for name in BATCH_ARGS}), dual_c
