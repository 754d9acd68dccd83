"""TEPO inside TRL (accelerate/DeepSpeed): ``TEPOConfig`` and ``TEPOGRPOTrainer``; and every other minitepo
objective (CISPO, SAPO, GMPO, ...) through ``ObjectiveConfig`` and ``ObjectiveGRPOTrainer`` (end of this file).

Mirrors TRL 1.16.0 (``TRL_VERSION``); pinned in pyproject's ``trl`` extra. ``TEPOGRPOTrainer`` is
TRL's ``GRPOTrainer`` with one loss replaced: its ``_compute_loss`` computes the current log-probs
and entropies with TRL's own forward (``_get_per_token_logps_and_entropies``) and hands them to
``minitepo.losses.tepo_loss``. Sampling, rewards, group advantages, reference model, gradient
accumulation and distribution stay TRL's.

Normalisation. TRL's ``loss_type`` fixes how a micro-batch's summed token loss is divided so that
the accumulated (and data-parallel averaged) gradient is the step's. In minitepo's terms, with
B the micro-batch's rows, N its real tokens, GA the accumulation steps (1 in eval):

    TRL loss_type   minitepo agg               normalizer
    grpo            seq-mean-token-mean        B * GA
    bnpo            token-mean                 max(N, 1) * GA
    dr_grpo         seq-mean-token-sum-norm    B * max_completion_length * GA
    dapo (default)  token-mean                 num_items_in_batch / num_processes * GA / steps_per_generation

(``num_items_in_batch``: real tokens of the whole generation batch, all processes.)

Old entropies. TEPO's default ``measured`` mask compares the current entropy with the rollout
policy's. TRL computes entropies in the loss but discards the rollout's, so the trainer records
them once per generation: one no-grad teacher-forced forward right after TRL scores the
completions (``inputs["old_entropies"]``), with the same chunking as TRL's old log-probs. The mask
is empty at the first use of a generation (theta = theta_old) and acts from the second on: it
needs ``num_iterations > 1`` (or ``steps_per_generation`` > gradient accumulation).

Refused (a ValueError at construction): loss types other than the four above, sequence-level
importance sampling, TRL's two-sided ``delta`` clip, ``top_entropy_quantile < 1``, an entropy bonus,
``off_policy_mask_threshold``, vLLM importance-sampling correction, MoE router aux loss, the Liger
loss, and ``beta > 0`` with ``use_bias_correction_kl=True`` (TRL multiplies the KL by the *token*
ratio; TEPO's KL term has no such factor) - set ``use_bias_correction_kl=False`` to use a reference KL.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import trl
from trl import GRPOConfig, GRPOTrainer

from minitepo.integrations import check_switch
from minitepo.losses import OBJECTIVES, TEPO_DEFAULTS, TEPO_MASK_ACTIONS, TEPO_RATIO_CLIPS, tepo_loss

TRL_VERSION = "1.16.0"
LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
AGG_OF_LOSS_TYPE = {"grpo": "seq-mean-token-mean", "bnpo": "token-mean", "dr_grpo": "seq-mean-token-sum-norm",
                    "dapo": "token-mean"}
MASK_CRITERIA = ("measured", "positive", "none")   # "predicted" would need TRL's logits
MASK_KL = ("k3", "k1_abs", "k2")

if trl.__version__ != TRL_VERSION:
    import warnings
    warnings.warn(f"minitepo.integrations.trl mirrors TRL {TRL_VERSION}, found {trl.__version__}; "
                  "rerun tests/test_integration_trl.py", stacklevel=2)


@dataclass
class TEPOConfig(GRPOConfig):
    """TRL's GRPOConfig with TEPO's switches (spec §6), defaulting to ``tepo_loss``'s own defaults. The
    ``sequence`` clip range is GRPOConfig's ``epsilon`` (eps_low) and ``epsilon_high`` (here TEPO's defaults);
    the reference KL is GRPOConfig's ``beta`` (k3)."""

    epsilon: float = field(default=TEPO_DEFAULTS["eps_low"], metadata={"help": "TEPO's lower clip, eps_low."})
    epsilon_high: float | None = field(default=TEPO_DEFAULTS["eps_high"], metadata={"help": "TEPO's upper clip, eps_high."})
    tepo_ratio_clip: str = field(default=TEPO_DEFAULTS["ratio_clip"], metadata={
        "help": "'sequence' (clip s_i with epsilon / epsilon_high) or 'token_log' (each token's log-ratio clipped to "
                "[-tepo_delta_low, tepo_delta_high] before the geometric mean)."})
    tepo_delta_low: float = field(default=TEPO_DEFAULTS["delta_low"], metadata={
        "help": "'token_log' only: how far (nats) a token's log-ratio may fall when A < 0."})
    tepo_delta_high: float = field(default=TEPO_DEFAULTS["delta_high"], metadata={
        "help": "'token_log' only: how far (nats) a token's log-ratio may rise when A > 0."})
    tepo_beta_mask: float = field(default=TEPO_DEFAULTS["beta_mask"], metadata={
        "help": "beta_M, strength of the mask; 0 gives the mask-free loss."})
    tepo_mask_action: str = field(default=TEPO_DEFAULTS["mask_action"], metadata={
        "help": "'kl' (add beta_M x KL to the old policy on masked tokens) or 'gate' (their policy term carries no "
                "gradient)."})
    tepo_mask_criterion: str = field(default=TEPO_DEFAULTS["mask_criterion"], metadata={
        "help": "'measured' (H_theta < H_old, old entropies recorded per generation), 'positive' or 'none'."})
    tepo_mask_kl: str = field(default=TEPO_DEFAULTS["mask_kl"], metadata={
        "help": "penalty on masked tokens against the old policy: 'k3' | 'k1_abs' | 'k2'."})
    tepo_mask_tol: float = field(default=TEPO_DEFAULTS["mask_tol"], metadata={
        "help": "'measured' only: the entropy must drop by more than this (round-off guard)."})
    tepo_dual_clip: float | None = field(default=TEPO_DEFAULTS["dual_clip"], metadata={
        "help": "None (off) or c > 1 for A < 0."})

    def __post_init__(self):
        super().__post_init__()
        check_switch(self.tepo_mask_criterion, MASK_CRITERIA, "tepo_mask_criterion",
                     " for TRL ('predicted' needs the logits)")
        check_switch(self.tepo_mask_kl, MASK_KL, "tepo_mask_kl")
        check_switch(self.tepo_ratio_clip, TEPO_RATIO_CLIPS, "tepo_ratio_clip")
        check_switch(self.tepo_mask_action, TEPO_MASK_ACTIONS, "tepo_mask_action")
        refuse_unsupported(self)


def refuse_unsupported(args) -> None:
    """Raise a ValueError naming every GRPOConfig option this adapter cannot honour."""
    problems = []
    if args.loss_type not in LOSS_TYPES:
        problems.append(f"loss_type={args.loss_type!r} (TEPO reproduces the normalisation of "
                        f"{', '.join(LOSS_TYPES)}; its own default is 'dapo')")
    if args.importance_sampling_level != "token":
        problems.append("importance_sampling_level='sequence' (TEPO always uses its sequence-level ratio; leave it "
                        "'token')")
    if args.delta is not None:
        problems.append("delta (TRL's two-sided clip; use tepo_dual_clip)")
    if args.top_entropy_quantile < 1.0:
        problems.append("top_entropy_quantile < 1")
    if args.entropy_coef != 0.0 or args.use_adaptive_entropy:
        problems.append("an entropy bonus (entropy_coef / use_adaptive_entropy; TEPO has none)")
    if args.off_policy_mask_threshold is not None:
        problems.append("off_policy_mask_threshold")
    if args.use_vllm and args.vllm_importance_sampling_correction:
        problems.append("vllm_importance_sampling_correction=True (importance-sampling weights; set it False)")
    if args.use_liger_kernel:
        problems.append("use_liger_kernel (Liger computes its own GRPO loss)")
    if args.router_aux_loss_coef not in (None, 0.0):
        problems.append("router_aux_loss_coef != 0 (MoE aux loss; set it 0)")
    if args.beta > 0 and args.use_bias_correction_kl:
        problems.append("beta > 0 with use_bias_correction_kl=True (TRL multiplies the KL by the token ratio, "
                        "TEPO's KL term is plain k3; set use_bias_correction_kl=False)")
    if problems:
        raise ValueError("TEPOGRPOTrainer cannot honour: " + "; ".join(problems))


def trl_normalizer(trainer, inputs: dict, mask: torch.Tensor) -> tuple[str, float]:
    """(agg, normalizer) reproducing ``GRPOTrainer._compute_loss``'s division for its ``loss_type``."""
    training = trainer.model.training
    accum = trainer.current_gradient_accumulation_steps if training else 1
    loss_type = trainer.loss_type
    B = mask.shape[0]
    if loss_type == "grpo":
        value = B * accum
    elif loss_type == "bnpo":
        value = max(float(mask.sum().item()), 1.0) * accum
    elif loss_type == "dr_grpo":
        value = B * trainer.max_completion_length * accum
    elif loss_type == "dapo":
        value = max(float(inputs["num_items_in_batch"]), 1.0) / trainer.accelerator.num_processes
        if training:
            value = value * accum / trainer.args.steps_per_generation
    else:
        raise ValueError(f"loss_type {loss_type!r} is not supported; allowed: {', '.join(LOSS_TYPES)}")
    return AGG_OF_LOSS_TYPE[loss_type], float(value)


class TEPOGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose loss is ``minitepo.losses.tepo_loss`` (arguments as GRPOTrainer; args: TEPOConfig)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, TEPOConfig):
            raise ValueError("TEPOGRPOTrainer needs args=TEPOConfig(...) (GRPOConfig has no field for TEPO's switches)")
        refuse_unsupported(self.args)
        if self.aux_loss_enabled:                  # an MoE model's own coefficient applies when the config says None
            raise ValueError("TEPOGRPOTrainer does not add the MoE router aux loss; set router_aux_loss_coef=0.0")

    @property
    def _needs_old_entropy(self) -> bool:
        return self.args.tepo_mask_criterion == "measured" and self.args.tepo_beta_mask > 0

    def _generate_and_score_completions(self, inputs):
        """TRL's generation and scoring, plus the rollout policy's entropies (B, T) for the measured mask."""
        output = super()._generate_and_score_completions(inputs)
        if self._needs_old_entropy:
            if any(k in output for k in ("pixel_values", "image_grid_thw", "num_images")):
                raise ValueError("TEPO's measured mask is implemented for text-only completions; "
                                 "use tepo_mask_criterion='positive' or 'none'")
            ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
            attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
            chunk = (self.args.per_device_train_batch_size if self.model.training
                     else self.args.per_device_eval_batch_size)
            with torch.no_grad():
                _, entropies, _ = self._get_per_token_logps_and_entropies(
                    self.model, ids, attention, output["completion_ids"].size(1), batch_size=chunk,
                    compute_entropy=True)
            output["old_entropies"] = entropies                              # (B, T)
        return output

    def _compute_loss(self, model, inputs):
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
        mask = inputs["completion_mask"]                                     # (B, T); TRL's is an int tensor
        if "tool_mask" in inputs:
            mask = mask * inputs["tool_mask"]                                # tool output is not the policy's
        mask = mask.bool()
        logp, entropy, _ = self._get_per_token_logps_and_entropies(
            model, ids, attention, inputs["completion_ids"].size(1), compute_entropy=True)   # (B, T) each
        old_logp = inputs.get("old_per_token_logps")
        old_logp = logp.detach() if old_logp is None else old_logp           # TRL: aligned steps, theta = theta_old
        agg, normalizer = trl_normalizer(self, inputs, mask)
        args = self.args
        loss, stats = tepo_loss(
            logp=logp, old_logp=old_logp, advantages=inputs["advantages"], mask=mask,
            ref_logp=inputs.get("ref_per_token_logps") if self.beta > 0 else None,
            entropy=entropy, old_entropy=inputs.get("old_entropies"), normalizer=normalizer,
            eps_low=self.epsilon_low, eps_high=self.epsilon_high, beta=self.beta, kl_kind="k3", agg=agg,
            dual_clip=args.tepo_dual_clip, max_len=self.max_completion_length, ratio_clip=args.tepo_ratio_clip,
            delta_low=args.tepo_delta_low, delta_high=args.tepo_delta_high, beta_mask=args.tepo_beta_mask,
            mask_action=args.tepo_mask_action, mask_criterion=args.tepo_mask_criterion, mask_kl=args.tepo_mask_kl,
            mask_tol=args.tepo_mask_tol)
        log_stats(self, stats, entropy, mask, TEPO_METRICS)
        return loss


TEPO_METRICS = {"clip_frac": "clip_ratio/region_mean", "seq_ratio_mean": "tepo/seq_ratio_mean",
                "mask_frac": "tepo/mask_frac", "mask_kl": "tepo/mask_kl", "approx_kl_old": "tepo/approx_kl_old",
                "kl_ref": "kl"}
"""The objective's statistics TEPOGRPOTrainer logs, and their names in TRL's metric store."""


def log_stats(trainer, stats: dict, entropy: torch.Tensor, mask: torch.Tensor, names: dict) -> None:
    """Micro-batch statistics ``names`` (objective key -> TRL metric name) and the mean entropy of the real tokens,
    averaged over processes, in TRL's metric store (logged every logging_steps)."""
    mode = "train" if trainer.model.training else "eval"
    for key, name in names.items():
        if key in stats:
            value = trainer.accelerator.gather(stats[key].detach().float().reshape(1)).mean().item()
            trainer._metrics[mode][name].append(value)
    ent = (entropy.detach().float() * mask).sum() / mask.sum().clamp(min=1)
    trainer._metrics[mode]["entropy"].append(trainer.accelerator.gather(ent.reshape(1)).mean().item())


# ----------------------------------------------------------------------------------------------
# CISPO, SAPO, GMPO (and any other minitepo objective but TEPO): ObjectiveConfig, ObjectiveGRPOTrainer
# ----------------------------------------------------------------------------------------------

OBJECTIVE_LOSS_TYPES = {"cispo": "dapo", "sapo": "grpo", "gmpo": "grpo"}
"""The loss_type whose normalisation is each paper's aggregation: CISPO's token-mean over the whole step ("dapo"),
SAPO's and GMPO's mean over responses ("grpo")."""


@dataclass
class ObjectiveConfig(GRPOConfig):
    """TRL's GRPOConfig running a minitepo objective. The aggregation is TRL's ``loss_type`` (table in the module
    docstring; ``OBJECTIVE_LOSS_TYPES`` gives each paper's); the reference KL is GRPOConfig's ``beta`` (k3). The
    objective's hyper-parameters are ``minitepo_kwargs``, its own defaults otherwise: GRPOConfig's ``epsilon``,
    ``epsilon_high`` and ``sapo_temperature_*`` are not read (TRL's cispo epsilon_high is the weight cap, minitepo's
    eps_high is cap - 1)."""

    minitepo_objective: str = field(default="cispo", metadata={
        "help": "the minitepo objective: 'cispo', 'sapo', 'gmpo', or any other of minitepo.losses.OBJECTIVES but "
                "'tepo' (which has TEPOConfig)."})
    minitepo_kwargs: dict = field(default_factory=dict, metadata={
        "help": "the objective's hyper-parameters, e.g. {'is_clip': 'both'}; not 'agg' (that is loss_type) nor "
                "'beta' (that is GRPOConfig's)."})

    def __post_init__(self):
        super().__post_init__()
        allowed = tuple(name for name in OBJECTIVES if name != "tepo")
        check_switch(self.minitepo_objective, allowed, "minitepo_objective", " for ObjectiveConfig (TEPO: TEPOConfig)")
        taken = {"agg", "beta", "kl_kind", "normalizer", "max_len"} & set(self.minitepo_kwargs)
        if taken:
            raise ValueError(f"minitepo_kwargs may not set {sorted(taken)}: the aggregation is loss_type, the "
                             "reference KL GRPOConfig's beta (k3), the normaliser and max_len TRL's")
        refuse_unsupported(self)


class ObjectiveGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose loss is minitepo's ``args.minitepo_objective`` (arguments as GRPOTrainer; args:
    ObjectiveConfig). Sampling, rewards, advantages, reference model, accumulation and distribution stay TRL's."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, ObjectiveConfig):
            raise ValueError("ObjectiveGRPOTrainer needs args=ObjectiveConfig(...)")
        if self.aux_loss_enabled:
            raise ValueError("ObjectiveGRPOTrainer does not add the MoE router aux loss; set router_aux_loss_coef=0.0")

    def _compute_loss(self, model, inputs):
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
        mask = inputs["completion_mask"]
        if "tool_mask" in inputs:
            mask = mask * inputs["tool_mask"]
        mask = mask.bool()
        logp, entropy, _ = self._get_per_token_logps_and_entropies(
            model, ids, attention, inputs["completion_ids"].size(1), compute_entropy=True)   # (B, T) each
        old_logp = inputs.get("old_per_token_logps")
        old_logp = logp.detach() if old_logp is None else old_logp
        agg, normalizer = trl_normalizer(self, inputs, mask)
        loss, stats = OBJECTIVES[self.args.minitepo_objective](
            logp=logp, old_logp=old_logp, advantages=inputs["advantages"], mask=mask,
            ref_logp=inputs.get("ref_per_token_logps") if self.beta > 0 else None, normalizer=normalizer,
            beta=self.beta, kl_kind="k3", agg=agg, max_len=self.max_completion_length, **self.args.minitepo_kwargs)
        log_stats(self, stats, entropy, mask, OBJECTIVE_METRICS)
        return loss


OBJECTIVE_METRICS = {"clip_frac": "clip_ratio/region_mean", "approx_kl_old": "minitepo/approx_kl_old",
                     "seq_ratio_mean": "minitepo/seq_ratio_mean", "gate_mean": "minitepo/gate_mean", "kl_ref": "kl"}
"""The objective's statistics ObjectiveGRPOTrainer logs, and their names in TRL's metric store."""


__all__ = ["TRL_VERSION", "TEPOConfig", "TEPOGRPOTrainer", "trl_normalizer", "refuse_unsupported",
           "OBJECTIVE_LOSS_TYPES", "ObjectiveConfig", "ObjectiveGRPOTrainer"]
