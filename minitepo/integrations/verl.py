"""TEPO inside verl (Ray + FSDP/Megatron): a registered policy loss, its config, and an entropy wrapper; and
minitepo's CISPO, SAPO and GMPO as loss modes (section 6: ``objective_overrides``, ``make_objective_actor_config``).

Mirrors verl 0.9.1 (``VERL_VERSION``); pinned in pyproject's ``verl`` extra. What each piece relies on:

* ``tepo_policy_loss``, registered as loss mode ``LOSS_MODE`` ("tepo") with verl's public
  ``register_policy_loss``. verl calls it once per micro-batch with (B, T) tensors
  ``old_log_prob, log_prob, advantages, response_mask``, the ``loss_agg_mode``, the actor
  ``config`` and ``rollout_is_weights``; it returns ``(loss, metrics)``. The loss is
  ``minitepo.losses.tepo_loss`` with ``beta=0``: verl adds the reference KL itself when
  ``actor.use_kl_loss`` is set.
* ``TEPOPolicyLossConfig``: verl's ``PolicyLossConfig`` plus TEPO's switches. verl's config
  rejects unknown keys, so the policy-loss node is pointed at this class with hydra's ``_target_``
  (``tepo_overrides`` writes the lines). Instantiating it imports this module in every worker,
  which registers the loss: selecting TEPO is configuration only.
* ``tepo_ppo_loss``: a wrapper around verl's ``ppo_loss`` (``verl/workers/utils/losses.py``) for
  the ``measured`` mask criterion, which compares the current entropy with the rollout's. verl
  never hands entropies to a registered loss, so the wrapper takes the current entropy from the
  model output (present when ``actor.calculate_entropy=True``) and the old one from the batch
  field ``entropy`` (written by the v1 trainer's old-log-prob pass), and lends both to the loss
  for the duration of the call. Other loss modes pass through unchanged. This part depends on
  verl internals (the batch field's name, the worker's ``ppo_loss`` global), hence the pin.

Normalisation (``verl_normalizer``). verl makes a micro-batch loss a share of the mini-batch loss
with ``config.global_batch_info``: ``batch_num_tokens`` (real tokens of the mini-batch, summed over
data-parallel ranks), ``global_batch_size`` (sequences of the mini-batch, all ranks), ``dp_size``,
``loss_scale_factor``. Every mode multiplies by ``dp_size``, which cancels the gradient average
over ranks. In minitepo's terms (spec §3), with the local B' and T when the global value is absent:

    verl loss_agg_mode        minitepo agg              normalizer
    token-mean                token-mean                batch_num_tokens / dp_size
    seq-mean-token-mean       seq-mean-token-mean       global_batch_size / dp_size
    seq-mean-token-sum        seq-mean-token-sum        global_batch_size / dp_size
    seq-mean-token-sum-norm   seq-mean-token-sum-norm   global_batch_size * (loss_scale_factor or T) / dp_size
    token-sum                 refused (no normaliser; minitepo has no such mode)

Refused with an error: ``token-sum``; ``rollout_is_weights`` (rollout importance-sampling
correction: TEPO's ratio is already sequence-level and the weights would multiply it unseen);
``measured`` without entropies; ``predicted`` (needs the full logits, which verl does not expose
to a policy loss).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import os
from dataclasses import dataclass
from typing import Optional

import torch
import verl
from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY, register_policy_loss
from verl.workers.config import PolicyLossConfig
from verl.workers.utils import losses as verl_losses
from verl.workers.utils.padding import no_padding_2_padding

from minitepo.integrations import check_switch
from minitepo.losses import (CISPO_IS_CLIPS, GMPO_EMPTY_ROWS, GMPO_ZERO_ADV_CLIPS, OBJECTIVES, TEPO_DEFAULTS,
                             TEPO_MASK_ACTIONS, TEPO_RATIO_CLIPS, objective_default, tepo_loss)

VERL_VERSION = "0.9.1"
VERL_AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")
MASK_CRITERIA = ("measured", "positive", "none")   # "predicted" needs logits, which verl keeps to itself
MASK_KL = ("k3", "k1_abs", "k2")
CONFIG_TARGET = f"{__name__}.TEPOPolicyLossConfig"

# verl's kl_loss_type names -> minitepo's kl_kind (for the tests' oracle and the docs' mapping)
VERL_KL_TO_MINITEPO = {"kl": "k1", "k1": "k1", "mse": "k2", "k2": "k2", "low_var_kl": "k3", "k3": "k3"}


def _loss_mode_name() -> str:
    """'tepo', unless verl itself (a newer version) already registered a loss of that name."""
    owner = POLICY_LOSS_REGISTRY.get("tepo")
    if owner is None or getattr(owner, "__module__", "") == __name__:
        return "tepo"
    return "minitepo_tepo"


LOSS_MODE = _loss_mode_name()

if verl.__version__ != VERL_VERSION:
    import warnings
    warnings.warn(f"minitepo.integrations.verl mirrors verl {VERL_VERSION}, found {verl.__version__}; the entropy "
                  "wrapper depends on verl internals - rerun tests/test_integration_verl.py", stacklevel=2)


# ----------------------------------------------------------------------------------------------
# 1. the config
# ----------------------------------------------------------------------------------------------

@dataclass
class TEPOPolicyLossConfig(PolicyLossConfig):
    """verl's policy-loss config with TEPO's switches (spec §6), defaulting to ``tepo_loss``'s own defaults. The
    ``sequence`` clip range is the actor's own ``clip_ratio_low`` / ``clip_ratio_high`` (``tepo_overrides`` sets
    them to TEPO's defaults)."""

    loss_mode: str = LOSS_MODE
    ratio_clip: str = TEPO_DEFAULTS["ratio_clip"]
    """'sequence' (clip s_i with the actor's clip_ratio_low / clip_ratio_high) or 'token_log' (each token's
    log-ratio clipped to [-delta_low, delta_high] before the geometric mean)."""
    delta_low: float = TEPO_DEFAULTS["delta_low"]
    """'token_log' only: how far (nats) a token's log-ratio may fall when A < 0."""
    delta_high: float = TEPO_DEFAULTS["delta_high"]
    """'token_log' only: how far (nats) a token's log-ratio may rise when A > 0."""
    beta_mask: float = TEPO_DEFAULTS["beta_mask"]
    """beta_M, strength of the mask; 0 gives the mask-free loss."""
    mask_action: str = TEPO_DEFAULTS["mask_action"]
    """'kl' (add beta_M x KL to the old policy on masked tokens) or 'gate' (their policy term carries no gradient)."""
    mask_criterion: str = TEPO_DEFAULTS["mask_criterion"]
    """'measured' (H_theta < H_old; needs actor.calculate_entropy=True and the entropy wrapper),
    'positive' (every A > 0 token, no entropy condition) or 'none' (no mask)."""
    mask_kl: str = TEPO_DEFAULTS["mask_kl"]
    """penalty on masked tokens against the old policy: 'k3' | 'k1_abs' | 'k2'."""
    mask_tol: float = TEPO_DEFAULTS["mask_tol"]
    """'measured' only: the entropy must drop by more than this (guards against round-off)."""
    dual_clip: Optional[float] = None
    """None (TEPO's default: off) or c > 1. verl's actor.clip_ratio_c is not used by TEPO."""

    def __post_init__(self):
        hint = (" for verl ('predicted' needs the logits, which verl does not pass to a policy loss)"
                if self.mask_criterion == "predicted" else " for verl")
        check_switch(self.mask_criterion, MASK_CRITERIA, "TEPO mask_criterion", hint)
        check_switch(self.mask_kl, MASK_KL, "TEPO mask_kl")
        check_switch(self.ratio_clip, TEPO_RATIO_CLIPS, "TEPO ratio_clip")
        check_switch(self.mask_action, TEPO_MASK_ACTIONS, "TEPO mask_action")
        if self.loss_mode == LOSS_MODE and self.mask_criterion == "measured" and self.beta_mask > 0:
            install_entropy_wrapper()

    @property
    def needs_entropy(self) -> bool:
        return self.loss_mode == LOSS_MODE and self.mask_criterion == "measured" and self.beta_mask > 0


# ----------------------------------------------------------------------------------------------
# 2. normalisation: verl's global batch info -> tepo_loss's (agg, normalizer)
# ----------------------------------------------------------------------------------------------

def _number(x) -> float | None:
    if x is None:
        return None
    return float(x.item()) if isinstance(x, torch.Tensor) else float(x)


def verl_normalizer(loss_agg_mode: str, response_mask: torch.Tensor, global_batch_info: dict | None):
    """(agg, normalizer) such that ``tepo_loss(..., agg=agg, normalizer=normalizer)`` is verl's
    ``agg_loss`` of the same per-token loss, micro-batch by micro-batch (table in the module docstring).
    ``normalizer`` is None where ``tepo_loss`` computes verl's local value itself."""
    if loss_agg_mode == "token-sum":
        raise ValueError("loss_agg_mode 'token-sum' has no normaliser and no counterpart in minitepo's TEPO "
                         f"(spec §3); use one of {', '.join(VERL_AGG_MODES)} - TEPO's own is 'token-mean'")
    if loss_agg_mode not in VERL_AGG_MODES:
        raise ValueError(f"unknown loss_agg_mode {loss_agg_mode!r}; allowed: {', '.join(VERL_AGG_MODES)}")
    info = global_batch_info or {}
    dp = int(_number(info.get("dp_size")) or 1)
    n_tok, n_seq = _number(info.get("batch_num_tokens")), _number(info.get("global_batch_size"))
    if loss_agg_mode == "token-mean":
        if n_tok is None:
            if dp > 1:
                raise ValueError("token-mean with dp_size > 1 needs global_batch_info['batch_num_tokens']")
            return loss_agg_mode, None                                       # local N, as verl
        return loss_agg_mode, n_tok / dp
    if n_seq is None:
        if dp > 1:
            raise ValueError(f"{loss_agg_mode} with dp_size > 1 needs global_batch_info['global_batch_size']")
        n_seq = float(response_mask.bool().any(dim=-1).sum().item())         # local B', as verl
        if loss_agg_mode != "seq-mean-token-sum-norm":
            return loss_agg_mode, None
    if loss_agg_mode == "seq-mean-token-sum-norm":
        width = _number(info.get("loss_scale_factor")) or response_mask.shape[-1]   # verl: padded width by default
        return loss_agg_mode, max(n_seq, 1.0) * width / dp
    return loss_agg_mode, n_seq / dp


# ----------------------------------------------------------------------------------------------
# 3. the registered loss
# ----------------------------------------------------------------------------------------------

# (entropy, old_entropy), both (B, T), lent by tepo_ppo_loss for one call; (None, None) otherwise
_ENTROPIES: contextvars.ContextVar = contextvars.ContextVar("minitepo_verl_entropies", default=(None, None))


def tepo_kwargs(policy_loss, actor_config) -> dict:
    """tepo_loss's hyper-parameters from verl's actor config and the TEPO policy-loss config."""
    if not isinstance(policy_loss, TEPOPolicyLossConfig):
        raise ValueError(f"loss_mode {LOSS_MODE!r} needs its own policy-loss config: set "
                         f"actor_rollout_ref.actor.policy_loss._target_={CONFIG_TARGET} "
                         "(verl's PolicyLossConfig has no field for TEPO's switches; see docs/scale-out.md)")
    low = actor_config.get("clip_ratio_low")
    high = actor_config.get("clip_ratio_high")
    clip = actor_config.get("clip_ratio", 0.2)
    return dict(eps_low=clip if low is None else low, eps_high=clip if high is None else high,
                dual_clip=policy_loss.dual_clip, ratio_clip=policy_loss.ratio_clip, delta_low=policy_loss.delta_low,
                delta_high=policy_loss.delta_high, beta_mask=policy_loss.beta_mask, mask_action=policy_loss.mask_action,
                mask_criterion=policy_loss.mask_criterion, mask_kl=policy_loss.mask_kl, mask_tol=policy_loss.mask_tol)


@register_policy_loss(LOSS_MODE)
def tepo_policy_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean", config=None,
                     rollout_is_weights=None):
    """verl's policy-loss interface around ``tepo_loss`` (beta = 0: verl adds the reference KL).   (B, T) inputs"""
    if config is None:
        raise ValueError("tepo_policy_loss needs verl's actor config (config=...)")
    if rollout_is_weights is not None:
        raise ValueError("TEPO does not take rollout importance-sampling weights (algorithm.rollout_correction): "
                         "they would multiply TEPO's sequence-level ratio unseen; disable rollout_is for this run")
    kwargs = tepo_kwargs(config.policy_loss, config)
    agg, normalizer = verl_normalizer(loss_agg_mode, response_mask, config.global_batch_info)
    entropy, old_entropy = _ENTROPIES.get()
    if kwargs["mask_criterion"] == "measured" and kwargs["beta_mask"] > 0 and (entropy is None or old_entropy is None):
        raise ValueError(
            "TEPO's 'measured' mask compares the current entropy with the rollout's, and verl passes no entropy to a "
            "registered policy loss: set actor_rollout_ref.actor.calculate_entropy=True and train through "
            f"{__name__}.tepo_ppo_loss (installed by {CONFIG_TARGET}), with the v1 trainer, which stores the old "
            "entropy in the batch field 'entropy'; or choose policy_loss.mask_criterion='positive' or 'none'")
    loss, stats = tepo_loss(logp=log_prob, old_logp=old_log_prob, advantages=advantages, mask=response_mask.bool(),
                            entropy=entropy, old_entropy=old_entropy, normalizer=normalizer, beta=0.0, agg=agg,
                            **kwargs)
    metrics = {"actor/pg_clipfrac": stats["clip_frac"].item(), "actor/ppo_kl": stats["approx_kl_old"].item()}
    for name in ("seq_ratio_mean", "ratio_mean", "mask_frac", "mask_kl", "clip/pos_high", "clip/neg_low"):
        if name in stats:
            metrics[f"actor/tepo/{name}"] = stats[name].item()
    return loss, metrics


# ----------------------------------------------------------------------------------------------
# 4. the entropy wrapper around verl's ppo_loss ("measured" criterion only)
# ----------------------------------------------------------------------------------------------

_stock_ppo_loss = verl_losses.ppo_loss


def tepo_ppo_loss(config, model_output, data, dp_group=None):
    """verl's ``ppo_loss``, with the current and old entropies lent to ``tepo_policy_loss``.

    For any other loss mode, or a TEPO config that needs no entropy, this is ``ppo_loss`` itself.
    The current entropy (detached: the mask never carries gradient) comes from
    ``model_output['entropy']``; the old one from the batch field ``entropy``.
    """
    policy_loss = config.policy_loss
    if not (isinstance(policy_loss, TEPOPolicyLossConfig) and policy_loss.needs_entropy):
        return _stock_ppo_loss(config, model_output, data, dp_group)
    entropy = model_output.get("entropy", None)
    if entropy is None:
        raise ValueError("TEPO's 'measured' mask needs the current entropy: set "
                         "actor_rollout_ref.actor.calculate_entropy=True")
    entropy = no_padding_2_padding(entropy, data).detach()                   # (B, T)
    if "entropy" not in data.keys():
        raise ValueError("TEPO's 'measured' mask needs the rollout's entropy in the batch field 'entropy', which "
                         "verl's v1 trainer writes when it recomputes the old log-probs; this trainer did not "
                         "(legacy trainer, or bypass mode) - use policy_loss.mask_criterion='positive' or 'none'")
    old_entropy = data.select("entropy").to_padded_tensor()["entropy"]     # (B, T)
    token = _ENTROPIES.set((entropy, old_entropy.to(entropy.dtype)))
    try:
        return _stock_ppo_loss(config, model_output, data, dp_group)
    finally:
        _ENTROPIES.reset(token)


def install_entropy_wrapper() -> bool:
    """Make verl's actor worker build its loss from ``tepo_ppo_loss`` instead of ``ppo_loss``.

    verl's worker binds the module global ``verl.workers.engine_workers.ppo_loss`` when it builds
    the actor, after instantiating the actor config, so replacing the global here (called from
    ``TEPOPolicyLossConfig``) takes effect with no code change. Returns False where that module
    cannot be imported (it pulls in the rollout servers' packages) - then nothing is replaced.
    """
    try:
        from verl.workers import engine_workers
    except ImportError:
        return False
    engine_workers.ppo_loss = tepo_ppo_loss
    return True


# ----------------------------------------------------------------------------------------------
# 5. the configuration lines, and verl's own actor config built from them
# ----------------------------------------------------------------------------------------------

def _hydra_value(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def tepo_overrides(*, loss_agg_mode: str = TEPO_DEFAULTS["agg"], clip_ratio_low: float = TEPO_DEFAULTS["eps_low"],
                   clip_ratio_high: float = TEPO_DEFAULTS["eps_high"], ratio_clip: str = TEPO_DEFAULTS["ratio_clip"],
                   delta_low: float = TEPO_DEFAULTS["delta_low"], delta_high: float = TEPO_DEFAULTS["delta_high"],
                   beta_mask: float = TEPO_DEFAULTS["beta_mask"], mask_action: str = TEPO_DEFAULTS["mask_action"],
                   mask_criterion: str = TEPO_DEFAULTS["mask_criterion"], mask_kl: str = TEPO_DEFAULTS["mask_kl"],
                   mask_tol: float = TEPO_DEFAULTS["mask_tol"], dual_clip: float | None = TEPO_DEFAULTS["dual_clip"],
                   prefix: str = "actor_rollout_ref.actor") -> list[str]:
    """The hydra command-line overrides that switch a verl run to TEPO (docs/scale-out.md prints them); every
    default is ``tepo_loss``'s."""
    p = f"{prefix}.policy_loss"
    lines = [
        f"{p}._target_={CONFIG_TARGET}",
        f"{p}.loss_mode={LOSS_MODE}",
        f"+{p}.ratio_clip={ratio_clip}",
        f"+{p}.delta_low={_hydra_value(delta_low)}",
        f"+{p}.delta_high={_hydra_value(delta_high)}",
        f"+{p}.beta_mask={_hydra_value(beta_mask)}",
        f"+{p}.mask_action={mask_action}",
        f"+{p}.mask_criterion={mask_criterion}",
        f"+{p}.mask_kl={mask_kl}",
        f"+{p}.mask_tol={_hydra_value(mask_tol)}",
        f"+{p}.dual_clip={_hydra_value(dual_clip)}",
        f"{prefix}.loss_agg_mode={loss_agg_mode}",
        f"{prefix}.clip_ratio_low={_hydra_value(clip_ratio_low)}",
        f"{prefix}.clip_ratio_high={_hydra_value(clip_ratio_high)}",
    ]
    if mask_criterion == "measured" and beta_mask > 0:
        lines.append(f"{prefix}.calculate_entropy=true")
    return lines


def make_actor_config(*, rollout_n: int = 4, **keys):
    """verl's actor config (``FSDPActorConfig``) with the TEPO loss selected, built the way verl builds it:
    hydra composes ``ppo_trainer.yaml`` with ``tepo_overrides(...)``, then verl's ``omega_conf_to_dataclass``.

    ``keys`` are ``tepo_overrides``'s keywords (TEPO's switches, the clip range, loss_agg_mode; those left out keep
    ``tepo_loss``'s defaults) and further ``actor_rollout_ref.actor.*`` keys, e.g. ``use_kl_loss=True``.
    """
    return _compose_actor_config(tepo_overrides, rollout_n, keys)


def _compose_actor_config(overrides_fn, rollout_n: int, keys: dict):
    """verl's actor config from ``ppo_trainer.yaml`` plus ``overrides_fn``'s lines (the keys it takes) and the other
    ``keys`` as ``actor_rollout_ref.actor.*`` lines."""
    from hydra import compose, initialize_config_dir
    from verl.utils.config import omega_conf_to_dataclass

    prefix = "actor_rollout_ref.actor"
    switches = set(inspect.signature(overrides_fn).parameters) - {"prefix"}
    actor_overrides = {k: v for k, v in keys.items() if k not in switches}
    overrides = overrides_fn(**{k: v for k, v in keys.items() if k in switches}, prefix=prefix)
    overrides.append(f"actor_rollout_ref.rollout.n={rollout_n}")
    actor_overrides.setdefault("ppo_micro_batch_size_per_gpu", 1)
    overrides += [f"{prefix}.{k}={_hydra_value(v)}" for k, v in actor_overrides.items()]
    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=overrides)
    return omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)


# ----------------------------------------------------------------------------------------------
# 6. CISPO, SAPO and GMPO: minitepo's objectives as verl loss modes "minitepo_cispo", "minitepo_sapo", "minitepo_gmpo"
# ----------------------------------------------------------------------------------------------
#
# verl ships its own "cispo", "sapo" and "geo_mean"; docs/objectives.md says where they equal minitepo's. These modes
# run minitepo's objective instead, normalised by verl's global batch info like TEPO (``verl_normalizer``), so that a
# mini-batch split over ranks and micro-batches never changes the loss (verl's "geo_mean" ignores that info, and
# its "sapo" ignores loss_agg_mode). The clip range is the actor's clip_ratio_low / clip_ratio_high (CISPO's
# eps_low / eps_high, GMPO's delta_low / delta_high), SAPO's temperatures the actor's tau_pos / tau_neg, and the
# objectives' other switches are fields of ``ObjectivePolicyLossConfig``. ``objective_overrides`` writes every line,
# with minitepo's defaults.

OBJECTIVE_LOSS_MODES = {"cispo": "minitepo_cispo", "sapo": "minitepo_sapo", "gmpo": "minitepo_gmpo"}
"""minitepo objective -> the verl loss mode that runs it."""
OBJECTIVE_TARGET = f"{__name__}.ObjectivePolicyLossConfig"


@dataclass
class ObjectivePolicyLossConfig(PolicyLossConfig):
    """verl's policy-loss config with the switches of minitepo's CISPO and GMPO (each read by its objective only),
    defaulting to the objectives' own defaults."""

    is_clip: str = objective_default("cispo", "is_clip")
    """CISPO: 'upper' (cap the IS weight at 1 + clip_ratio_high, the paper's and TRL's) or 'both' (verl's cispo)."""
    zero_adv_clip: str = objective_default("gmpo", "zero_adv_clip")
    """GMPO: how a token with A = 0 is clipped: 'zero', 'as_positive' or 'as_negative'."""
    empty_rows: str = objective_default("gmpo", "empty_rows")
    """GMPO: 'skip' (fully-masked rows count nowhere) or 'count' (as verl's geo_mean, without global batch info)."""

    def __post_init__(self):
        check_switch(self.is_clip, CISPO_IS_CLIPS, "CISPO is_clip")
        check_switch(self.zero_adv_clip, GMPO_ZERO_ADV_CLIPS, "GMPO zero_adv_clip")
        check_switch(self.empty_rows, GMPO_EMPTY_ROWS, "GMPO empty_rows")


def objective_kwargs(name: str, actor_config) -> dict:
    """The hyper-parameters of minitepo objective ``name`` from verl's actor config (its ``policy_loss`` an
    ``ObjectivePolicyLossConfig`` for CISPO's and GMPO's switches; verl's own config gives their defaults)."""
    low, high, clip = (actor_config.get("clip_ratio_low"), actor_config.get("clip_ratio_high"),
                       actor_config.get("clip_ratio", 0.2))
    low, high = (clip if low is None else low), (clip if high is None else high)
    switch = lambda key: getattr(actor_config.policy_loss, key, objective_default(name, key))   # noqa: E731
    if name == "cispo":
        return dict(eps_low=low, eps_high=high, is_clip=switch("is_clip"))
    if name == "sapo":
        return dict(tau_pos=actor_config.get("tau_pos"), tau_neg=actor_config.get("tau_neg"))
    if name == "gmpo":
        return dict(delta_low=low, delta_high=high, zero_adv_clip=switch("zero_adv_clip"),
                    empty_rows=switch("empty_rows"))
    raise ValueError(f"no verl loss mode for objective {name!r}; allowed: {', '.join(OBJECTIVE_LOSS_MODES)}")


def _objective_policy_loss(name: str):
    """verl's policy-loss interface around minitepo objective ``name`` (beta = 0: verl adds the reference KL)."""
    objective = OBJECTIVES[name]

    def policy_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean", config=None,
                    rollout_is_weights=None):
        if config is None:
            raise ValueError(f"{OBJECTIVE_LOSS_MODES[name]} needs verl's actor config (config=...)")
        if rollout_is_weights is not None:
            raise ValueError(f"minitepo's {name} does not take rollout importance-sampling weights "
                             "(algorithm.rollout_correction); disable rollout_is for this run")
        agg, normalizer = verl_normalizer(loss_agg_mode, response_mask, config.global_batch_info)
        loss, stats = objective(logp=log_prob, old_logp=old_log_prob, advantages=advantages,
                                mask=response_mask.bool(), normalizer=normalizer, agg=agg, beta=0.0,
                                **objective_kwargs(name, config))
        metrics = {"actor/pg_clipfrac": stats["clip_frac"].item(), "actor/ppo_kl": stats["approx_kl_old"].item()}
        for key in ("ratio_mean", "seq_ratio_mean", "gate_mean", "clip/pos_high", "clip/neg_low"):
            if key in stats:
                metrics[f"actor/{name}/{key}"] = stats[key].item()
        return loss, metrics

    policy_loss.__name__ = policy_loss.__qualname__ = f"{name}_policy_loss"
    return register_policy_loss(OBJECTIVE_LOSS_MODES[name])(policy_loss)


cispo_policy_loss = _objective_policy_loss("cispo")
sapo_policy_loss = _objective_policy_loss("sapo")
gmpo_policy_loss = _objective_policy_loss("gmpo")


def objective_overrides(name: str, *, loss_agg_mode: str | None = None, clip_ratio_low: float | None = None,
                        clip_ratio_high: float | None = None, tau_pos: float | None = None,
                        tau_neg: float | None = None, is_clip: str | None = None, zero_adv_clip: str | None = None,
                        empty_rows: str | None = None, prefix: str = "actor_rollout_ref.actor") -> list[str]:
    """The hydra overrides that switch a verl run to minitepo's objective ``name`` ("cispo", "sapo" or "gmpo");
    a keyword left None takes the objective's own default (its aggregation, clip range or temperatures)."""
    if name not in OBJECTIVE_LOSS_MODES:
        raise ValueError(f"no verl loss mode for objective {name!r}; allowed: {', '.join(OBJECTIVE_LOSS_MODES)}")
    default = lambda value, key: objective_default(name, key) if value is None else value   # noqa: E731
    p = f"{prefix}.policy_loss"
    lines = [f"{p}._target_={OBJECTIVE_TARGET}", f"{p}.loss_mode={OBJECTIVE_LOSS_MODES[name]}",
             f"{prefix}.loss_agg_mode={default(loss_agg_mode, 'agg')}"]
    if name == "cispo":
        lines += [f"+{p}.is_clip={default(is_clip, 'is_clip')}",
                  f"{prefix}.clip_ratio_low={_hydra_value(default(clip_ratio_low, 'eps_low'))}",
                  f"{prefix}.clip_ratio_high={_hydra_value(default(clip_ratio_high, 'eps_high'))}"]
    elif name == "sapo":
        lines += [f"{prefix}.tau_pos={_hydra_value(default(tau_pos, 'tau_pos'))}",
                  f"{prefix}.tau_neg={_hydra_value(default(tau_neg, 'tau_neg'))}"]
    else:
        lines += [f"+{p}.zero_adv_clip={default(zero_adv_clip, 'zero_adv_clip')}",
                  f"+{p}.empty_rows={default(empty_rows, 'empty_rows')}",
                  f"{prefix}.clip_ratio_low={_hydra_value(default(clip_ratio_low, 'delta_low'))}",
                  f"{prefix}.clip_ratio_high={_hydra_value(default(clip_ratio_high, 'delta_high'))}"]
    return lines


def make_objective_actor_config(name: str, *, rollout_n: int = 4, **keys):
    """verl's actor config with minitepo's objective ``name`` selected (``objective_overrides``' keywords, and
    further ``actor_rollout_ref.actor.*`` keys), composed by hydra as ``make_actor_config`` does."""
    return _compose_actor_config(functools.partial(objective_overrides, name), rollout_n, keys)


__all__ = ["VERL_VERSION", "LOSS_MODE", "TEPOPolicyLossConfig", "tepo_policy_loss", "tepo_ppo_loss",
           "install_entropy_wrapper", "verl_normalizer", "tepo_overrides", "make_actor_config", "tepo_kwargs",
           "OBJECTIVE_LOSS_MODES", "ObjectivePolicyLossConfig", "objective_kwargs", "objective_overrides",
           "make_objective_actor_config", "cispo_policy_loss", "sapo_policy_loss", "gmpo_policy_loss"]
