"""How the kit calls a loss: one calling convention, and adapters from the others.

The kit's convention is ``loss(batch, step, **config) -> loss`` or ``-> (loss, stats)``:

    batch    a ``Batch`` (minitepo.testing.batches); its float tensors are autograd leaves
    step     a ``Step``: the optimizer step the batch is part of (its mask, L_max, micro-batch count), so that a
             loss that supports gradient accumulation can divide by the step's normaliser; None for a whole step
    config   keyword hyper-parameters drawn by the check's ``configs`` strategy (none by default)

Three adapters bring other conventions to it, each a few lines to use:

    objective("dapo")                           a minitepo objective, by name or function (keyword tensors)
    keywords(fn, logp="log_prob", ...)          any loss taking tensors by keyword, names mapped
    verl_policy_loss(fn, config, "token-mean")  a verl policy loss (verl's registered-loss signature)
    trl_grpo_loss(trainer)                      TRL's GRPOTrainer._compute_loss on a real trainer

``evaluate`` runs one call and returns the loss, the gradient with respect to every float input, and the
stats. ``as_kit_loss`` accepts a callable in any of the first two conventions and says clearly when the
signature fits none. Every wrapper carries ``how`` (one line: how the kit calls the loss, printed by
``minitepo check-loss``) and ``takes_normalizer`` (whether a micro-batch can be told its step's normaliser).
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass

import torch

from minitepo.losses import AGG_MODES, OBJECTIVES, objective_default
from minitepo.testing.batches import FLOAT_TENSORS, Batch, Step

MINITEPO_NAMES = {"logp": "logp", "old_logp": "old_logp", "advantages": "advantages", "mask": "mask"}


class SignatureError(TypeError):
    """A callable whose parameters fit none of the conventions the kit knows."""


@dataclass
class Outcome:
    """One call of a loss: its value, the gradient w.r.t. every float input of the batch, and its stats."""

    loss: torch.Tensor  # scalar, detached
    grads: dict  # Batch field name -> gradient (zeros where the input got none)
    stats: dict

    @property
    def grad(self) -> torch.Tensor:
        """d loss / d logp, (B, T): what the optimizer sees."""
        return self.grads["logp"]


def evaluate(loss, batch: Batch, step: Step | None = None, **config) -> Outcome:
    """Call ``loss(batch, step, **config)`` with every float tensor of batch a fresh leaf; backward; collect."""
    leaves = {name: getattr(batch, name).detach().clone().requires_grad_(True) for name in FLOAT_TENSORS}
    out = loss(batch.replace(**leaves), step, **config)
    value, stats = out if isinstance(out, tuple) else (out, {})
    if not isinstance(value, torch.Tensor) or value.dim() != 0:
        raise TypeError(f"the loss must return a scalar tensor (or (scalar, stats)), got "
                        f"{type(value).__name__}{'' if not isinstance(value, torch.Tensor) else tuple(value.shape)}")
    if value.requires_grad:
        value.backward()
    grads = {k: (v.grad if v.grad is not None else torch.zeros_like(v)) for k, v in leaves.items()}
    return Outcome(value.detach(), grads, stats or {})


# --------------------------------------------------------------------------- minitepo's own objectives


@functools.lru_cache(maxsize=None)
def _parameters(fn) -> frozenset:
    return frozenset(inspect.signature(fn).parameters)


def objective(fn_or_name):
    """A minitepo objective (``"tepo"``, or any function with minitepo's keyword signature) in the kit's convention.

    Extra config keys: the objective's hyper-parameters (``eps_low``, ``agg``, ``beta``, ...), and
    ``token_advantages=True`` to pass the batch's (B, T) advantages instead of its (B,) ones (GTPO always takes
    (B, T)). ``ref_logp`` is passed when the reference KL is on; TEPO gets the entropies its mask criterion needs;
    ``max_len`` goes to ``seq-mean-token-sum-norm``; with a ``step`` (a micro-batch), the step's normaliser.
    """
    ours = [key for key, obj in OBJECTIVES.items() if obj is fn_or_name]   # the presets are partials: no __name__
    name = fn_or_name if isinstance(fn_or_name, str) else \
        (ours or [getattr(fn_or_name, "__name__", "").removesuffix("_loss")])[0]
    fn = OBJECTIVES[fn_or_name] if isinstance(fn_or_name, str) else fn_or_name
    params = _parameters(fn)

    def default(key):
        p = inspect.signature(fn).parameters.get(key)
        return None if p is None else p.default

    def call(batch: Batch, step: Step | None = None, *, token_advantages: bool = False, **hp):
        token = name == "gtpo" or token_advantages
        kw = dict(logp=batch.logp, old_logp=batch.old_logp, advantages=batch.tok_adv if token else batch.seq_adv,
                  mask=batch.mask)
        if hp.get("beta", default("beta")):
            kw["ref_logp"] = batch.ref_logp
        if "entropy" in params and name == "tepo":
            if hp.get("mask_criterion", default("mask_criterion")) == "predicted":
                kw["entropy_drop_score"] = batch.entropy_drop_score
            else:
                kw.update(entropy=batch.entropy, old_entropy=batch.old_entropy)
        agg = hp.get("agg") or default("agg")
        if agg == "seq-mean-token-sum-norm" and "max_len" in params:
            kw["max_len"] = batch.max_len
        if step is not None and "normalizer" not in hp and agg is not None:
            kw["normalizer"] = step.normalizer(agg)
        kw.update({k: v for k, v in hp.items() if v is not None or k == "dual_clip"})
        if "agg" in kw and kw["agg"] is None:
            del kw["agg"]
        return fn(**kw)

    call.__name__ = f"{name}_loss"
    call.family = name if name in OBJECTIVES else None
    call.how = f"minitepo's objective {call.__name__}; a micro-batch gets the step's normaliser in 'normalizer'"
    call.takes_normalizer = "normalizer" in params
    return call


# --------------------------------------------------------------------------- any keyword loss


def keywords(fn, *, advantages_shape: str = "sequence", normalizer: str | None = None, fixed: dict | None = None,
             **names):
    """Wrap ``fn`` taking tensors by keyword: ``names`` maps the kit's names (logp, old_logp, advantages, mask,
    ref_logp, entropy, old_entropy) to fn's parameter names, e.g. ``keywords(f, logp="log_prob",
    old_logp="old_log_prob", mask="response_mask")``. Unmapped kit names in fn's signature pass by their own name.

    advantages_shape  "sequence": (B,) advantages; "token": (B, T); "broadcast": each A_i repeated over (B, T)
    normalizer        fn's parameter that takes the step's normaliser for micro-batches, with the aggregation
                      mode it is for: ``normalizer="normalizer:token-mean"``; None if fn has none (then a
                      micro-batch can only divide by its own count, and the kit says so when that fails)
    fixed             keyword arguments passed unchanged on every call

    Parameters named entropy, old_entropy, ref_logp or max_len get the batch's values without a mapping.
    """
    if advantages_shape not in ("sequence", "token", "broadcast"):
        raise ValueError(f"advantages_shape must be 'sequence', 'token' or 'broadcast', got {advantages_shape!r}")
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError) as e:
        raise SignatureError(f"cannot read the signature of {fn!r}: {e}") from None
    takes_any = any(p.kind == p.VAR_KEYWORD for p in params.values())
    mapping = {**MINITEPO_NAMES, **names}
    mapping = {k: v for k, v in mapping.items() if k in names or v in params or k in MINITEPO_NAMES}
    missing = [f"{k} -> {v!r}" for k, v in mapping.items() if v not in params and not takes_any]
    if missing:
        raise SignatureError(f"{getattr(fn, '__qualname__', fn)}{inspect.signature(fn)} has no parameter for "
                             f"{', '.join(missing)}; map the kit's names to its parameters, e.g. "
                             f"keywords(fn, logp='log_prob', mask='response_mask')")
    norm_param, norm_agg = (normalizer.split(":", 1) + [None])[:2] if normalizer else (None, None)
    if norm_param is not None:
        if norm_agg not in AGG_MODES:
            raise SignatureError(f"normalizer={normalizer!r}: say which aggregation mode the step's normaliser is "
                                 f"for, as 'NAME:MODE' with MODE one of {', '.join(AGG_MODES)}")
        if norm_param not in params and not takes_any:
            raise SignatureError(f"{getattr(fn, '__qualname__', fn)}{inspect.signature(fn)} has no parameter "
                                 f"{norm_param!r} to take the step's normaliser; its parameters: {', '.join(params)}")
    for key in ("entropy", "old_entropy", "ref_logp", "max_len"):
        if key not in mapping and key in params:
            mapping[key] = key

    def call(batch: Batch, step: Step | None = None, **config):
        kw = dict(fixed or {})
        for kit_name, param in mapping.items():
            if kit_name == "advantages":
                adv = batch.seq_adv
                if advantages_shape == "token":
                    adv = batch.tok_adv
                elif advantages_shape == "broadcast":
                    adv = batch.seq_adv[:, None].expand(batch.B, batch.T)
                kw[param] = adv
            else:
                kw[param] = getattr(batch, kit_name)
        if norm_param and step is not None:
            kw[norm_param] = step.normalizer(norm_agg)
        kw.update(config)
        return fn(**kw)

    call.__name__ = getattr(fn, "__name__", "loss")
    passed = ", ".join(f"{k}={v}" if k != v else k for k, v in mapping.items())
    call.how = (f"keyword tensors {call.__name__}({passed}); "
                + (f"a micro-batch gets the step's {norm_agg} normaliser in {norm_param!r}" if norm_param else
                   "no parameter takes the step's normaliser (--normalizer-arg NAME names one)"))
    call.takes_normalizer = norm_param is not None
    return call


def as_kit_loss(fn, *, normalizer: str | None = None, agg: str | None = None, like: str | None = None):
    """``fn`` in the kit's convention. The wrapper is chosen from the signature, never from the function's name:

    1. parameters ``(batch, step, ...)``: the kit's convention, used as it is (it reads ``step.normalizer(agg)``);
    2. one of minitepo's objectives (the function object in ``minitepo.losses.OBJECTIVES``): ``objective(fn)``;
    3. minitepo's keyword tensors ``(logp, old_logp, advantages, mask, ...)``: ``keywords(fn)``. The step's
       normaliser goes to the parameter ``normalizer`` names, or to one called ``normalizer`` if fn has it; its
       aggregation mode is ``agg``, or family ``like``'s.

    Anything else: a SignatureError naming the conventions."""
    if not callable(fn):
        raise SignatureError(f"{fn!r} is not callable")
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError) as e:
        raise SignatureError(f"cannot read the signature of {fn!r}: {e}") from None
    names = [p.name for p in params]
    if names[:2] == ["batch", "step"]:
        if normalizer:
            raise SignatureError(f"{getattr(fn, '__qualname__', fn)} takes (batch, step): it reads the normaliser "
                                 f"from step.normalizer(agg) itself; a normaliser parameter applies to keyword losses")
        return fn
    ours = [name for name, obj in OBJECTIVES.items() if obj is fn]
    if ours:
        if normalizer not in (None, "normalizer"):
            raise SignatureError(f"minitepo's {ours[0]} objective takes the step's normaliser in 'normalizer' "
                                 f"already, not {normalizer!r}")
        return objective(ours[0])
    if set(MINITEPO_NAMES) <= set(names):
        param = normalizer or ("normalizer" if "normalizer" in names else None)
        if param is None:
            return keywords(fn)
        mode = agg or (objective_default(like, "agg") if like in OBJECTIVES else None)
        if mode is None:
            raise SignatureError(f"{getattr(fn, '__qualname__', fn)} takes the step's normaliser in {param!r}: say "
                                 f"which aggregation it is for, as_kit_loss(fn, agg='token-mean') or like='dapo'")
        return keywords(fn, normalizer=f"{param}:{mode}")
    if normalizer:
        raise SignatureError(f"a normaliser parameter ({normalizer!r}) applies to keyword losses "
                             f"(logp, old_logp, advantages, mask, ...); {getattr(fn, '__qualname__', fn)}"
                             f"({', '.join(names)}) is not one")
    if {"old_log_prob", "log_prob", "response_mask"} <= set(names):
        raise SignatureError(f"{getattr(fn, '__qualname__', fn)} has verl's policy-loss signature; wrap it with "
                             "minitepo.testing.verl_policy_loss(fn, config, loss_agg_mode)")
    raise SignatureError(
        f"{getattr(fn, '__qualname__', fn)}({', '.join(names)}) fits no convention the kit knows: write it as "
        "loss(batch, step, **config) (minitepo.testing.Batch / Step), or take minitepo's keyword tensors "
        "loss(logp, old_logp, advantages, mask, ...), or wrap it with minitepo.testing.keywords(fn, logp=..., ...)")


def objective_agg(name: str) -> str:
    """The aggregation mode a minitepo objective uses by default (spec section 4)."""
    return objective_default(name, "agg")


# --------------------------------------------------------------------------- verl


def verl_policy_loss(fn, config, loss_agg_mode: str, *, loss_scale_factor: str | int | None = None,
                     global_batch_info: bool = True):
    """A verl policy loss ``fn(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config)`` (what
    ``verl.trainer.ppo.core_algos.get_policy_loss_fn`` returns) in the kit's convention.

    Each call sets ``config.global_batch_info`` as verl's engine does for one data-parallel rank: the step's
    real tokens (``batch_num_tokens``), its responses (``global_batch_size``, every row), ``dp_size=1``, and
    ``loss_scale_factor``: None (verl's default: the padded width), ``"max_len"`` (the batch's L_max, a constant
    per step, as verl advises) or a number. ``global_batch_info=False`` leaves the dict empty (local counts).
    Advantages go in as (B, T), each response's A_i on its tokens (verl's advantages are per token).
    """
    def call(batch: Batch, step: Step | None = None, **overrides):
        step = step or Step.of(batch)
        info = {}
        if global_batch_info:
            info = dict(dp_size=1, batch_num_tokens=step.n_tokens, global_batch_size=step.n_rows)
        factor = batch.max_len if loss_scale_factor == "max_len" else loss_scale_factor
        if factor is not None:
            info["loss_scale_factor"] = factor
        config.global_batch_info.clear()                                    # verl's config is frozen; its dict is not
        config.global_batch_info.update(info)
        adv = batch.tok_adv if overrides.pop("token_advantages", False) else \
            batch.seq_adv[:, None].expand(batch.B, batch.T)
        return fn(old_log_prob=batch.old_logp, log_prob=batch.logp, advantages=adv, response_mask=batch.mask,
                  loss_agg_mode=loss_agg_mode, config=config, **overrides)

    call.__name__ = getattr(fn, "__name__", "verl_loss")
    call.how = (f"verl's policy loss {call.__name__}, loss_agg_mode={loss_agg_mode}, config.global_batch_info set "
                f"per call (the step's tokens and rows)")
    call.takes_normalizer = global_batch_info
    return call


# --------------------------------------------------------------------------- TRL


def trl_grpo_loss(trainer, loss_type: str | None = None, compute_loss=None):
    """TRL's ``GRPOTrainer._compute_loss`` (or ``compute_loss``) on a real trainer, in the kit's convention.

    TRL's loss computes the current log-probs itself, from the model; the harness replaces the trainer's
    ``_get_per_token_logps_and_entropies`` for the call so that it returns the batch's ``logp`` (an autograd leaf)
    and ``entropy``: every line of TRL's loss after the forward pass runs unchanged. A micro-batch of a step is
    run as TRL's accumulation runs it: ``current_gradient_accumulation_steps = steps_per_generation = K`` and
    ``num_items_in_batch`` = the step's real tokens; ``max_completion_length`` is the batch's L_max.
    """
    from trl import GRPOTrainer   # the trl extra; imported only when a TRL loss is wrapped

    compute = compute_loss or (lambda model, inputs: GRPOTrainer._compute_loss(trainer, model, inputs))

    def call(batch: Batch, step: Step | None = None, **config):
        step = step or Step.of(batch)
        mask = batch.mask.bool().long()                                      # TRL's completion_mask is an int tensor
        inputs = {"prompt_ids": torch.zeros(batch.B, 1, dtype=torch.long),
                  "prompt_mask": torch.ones(batch.B, 1, dtype=torch.long),
                  "completion_ids": torch.zeros(batch.B, batch.T, dtype=torch.long), "completion_mask": mask,
                  "advantages": batch.tok_adv if config.pop("token_advantages", False) else batch.seq_adv,
                  "old_per_token_logps": batch.old_logp, "ref_per_token_logps": batch.ref_logp,
                  "num_items_in_batch": torch.tensor(float(step.n_tokens))}
        saved = {k: getattr(trainer, k, None) for k in ("loss_type", "max_completion_length",
                                                        "current_gradient_accumulation_steps")}
        saved_spg = trainer.args.steps_per_generation
        try:
            trainer._get_per_token_logps_and_entropies = lambda *a, **k: (batch.logp, batch.entropy, None)
            trainer.loss_type = loss_type or trainer.loss_type
            trainer.max_completion_length = batch.max_len
            trainer.current_gradient_accumulation_steps = step.micro_batches
            trainer.args.steps_per_generation = step.micro_batches
            return compute(trainer.model, inputs)
        finally:
            del trainer._get_per_token_logps_and_entropies                  # the class's method again
            for k, v in saved.items():
                setattr(trainer, k, v)
            trainer.args.steps_per_generation = saved_spg

    call.__name__ = f"trl_{loss_type or trainer.loss_type}"
    call.how = (f"TRL's GRPOTrainer._compute_loss, loss_type={loss_type or trainer.loss_type}, num_items_in_batch "
                f"the step's tokens")
    call.takes_normalizer = True
    return call
