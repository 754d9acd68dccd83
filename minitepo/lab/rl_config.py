"""The RL run's configuration: every knob of ``minitepo rl``, documented and checked in one place.

Each field's docstring is also its ``--help`` text (``minitepo.lab.config.add_flags``), and each field is also a
``minitepo compare --algos tepo:FIELD=VALUE`` override. Objective hyper-parameters default to None, meaning "the
objective's own default" (the spec's), read from the objective function's signature, so the defaults live in
exactly one place: the loss. Shaping options are checked against the shaping functions' signatures in the same way.

The fields fall in three groups: what the algorithm needs (the fields of the core's ``TrainerConfig``, whose defaults
and reasons are there: ``RLConfig.trainer_config`` hands them over), the objective's overrides, and the run's
management (``init``, ``out``, ``resume``, ``overwrite``, ``progress``, evaluation, saving and the stopping rules,
``RUN_FIELDS``), which only the lab reads. The config is flat because the flags are: one ``--flag`` per field.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

from minitepo.advantages import EQUAL_GROUPS, GTPO_ADV_NORMS, SHAPED_ADVANTAGES, WRONG_WEIGHTS
from minitepo.device import PRECISIONS
from minitepo.lab.guards import (RunFolderError, check_device, check_field_choice, check_int, check_number,
                                 check_resume_or_overwrite, same_folder)
from minitepo.losses import (AGG_MODES, CISPO_IS_CLIPS, GMPO_EMPTY_ROWS, GMPO_ZERO_ADV_CLIPS, KL_KINDS, OBJECTIVE_FACTS,
                             OBJECTIVES, TEPO_MASK_ACTIONS, TEPO_MASK_CRITERIA, TEPO_MASK_KL, TEPO_RATIO_CLIPS)
from minitepo.rl import OLD_LOGP_SOURCES, SCORINGS, TrainerConfig
from toy_tasks import TASK_NAMES, parse_levels

# Objective hyper-parameters that can be overridden from the command line. None means "the
# objective's own default" (the spec's), read from the objective function's signature.
LOSS_PARAMS = ("eps_low", "eps_high", "beta", "kl_kind", "agg", "dual_clip", "ratio_clip", "delta_low", "delta_high",
               "beta_mask", "mask_criterion", "mask_kl", "mask_action", "mask_tol", "is_clip", "tau_pos", "tau_neg",
               "zero_adv_clip", "empty_rows")
SHAPING_PARAMS = ("alpha1", "alpha2", "adv_norm", "equal_groups", "wrong_weight")  # GTPO / GRPO-S advantage shaping
OBJECTIVE_CHOICES = {"agg": AGG_MODES, "kl_kind": KL_KINDS, "ratio_clip": TEPO_RATIO_CLIPS,
                     "mask_criterion": TEPO_MASK_CRITERIA, "mask_kl": TEPO_MASK_KL, "mask_action": TEPO_MASK_ACTIONS,
                     "is_clip": CISPO_IS_CLIPS, "zero_adv_clip": GMPO_ZERO_ADV_CLIPS, "empty_rows": GMPO_EMPTY_ROWS,
                     "adv_norm": GTPO_ADV_NORMS, "equal_groups": EQUAL_GROUPS, "wrong_weight": WRONG_WEIGHTS}
"""The objectives' and the shaping functions' switches: each option that takes one of a few names, and the names."""
TRAINER = TrainerConfig()
"""The core's defaults, which ``minitepo rl``'s flags share (each with its reason, in ``minitepo.rl``)."""


@dataclass
class RLConfig:
    """Reinforcement learning from a warm-start checkpoint with one of the objectives."""

    RESUMABLE: ClassVar[tuple[str, ...]] = ("iterations", "resume", "overwrite", "progress", "verbose", "device", "out")
    # what --resume may change: the run's length, and where and how it is shown (not what it computes)

    # -- the warm start, and the run (the lab reads these; the rest go to the core: ``trainer_config``) --------
    init: str = "runs/sft/checkpoint.pt"
    """Warm-start checkpoint (from ``minitepo sft``); also the frozen reference model when beta > 0."""
    # -- the algorithm ----------------------------------------------------------------------------------------
    algo: str = TRAINER.algo
    """Objective: grpo, dapo, dr_grpo, gspo, gspo_token, tepo, gtpo, grpo_s, cispo, sapo or gmpo."""
    task: str | None = None
    """Toy task; default: the one the warm start was trained on."""
    levels: str | tuple[int, ...] | None = None
    """Difficulty levels, comma-separated ("3" or "1,2,3") or a tuple as for ``make_task``; default: the warm start's."""
    iterations: int = TRAINER.iterations
    """Rollouts to collect; each is followed by epochs x minibatches optimizer steps."""
    prompts: int = TRAINER.prompts
    """Prompts per rollout (P)."""
    group_size: int = TRAINER.group_size
    """Responses sampled per prompt (G); advantages are relative within such a group."""
    minibatches: int = TRAINER.minibatches
    """Optimizer steps per pass over a rollout (K). K > 1 reuses the rollout, so the policy moves away from
    the behaviour policy: ratios differ from 1, clipping acts and TEPO's mask can act."""
    epochs: int = TRAINER.epochs
    """Passes over each rollout."""
    micro_batches: int = TRAINER.micro_batches
    """Gradient-accumulation micro-batches per optimizer step (same gradient, less memory)."""
    lr: float = TRAINER.lr
    """Peak learning rate (> 0); the default's reason is at ``TrainerConfig.lr``."""
    warmup: int = TRAINER.warmup
    """Linear warmup, in optimizer steps."""
    min_lr_frac: float = TRAINER.min_lr_frac
    """Cosine decay to this fraction of lr over the run (1.0: constant after warmup)."""
    weight_decay: float = TRAINER.weight_decay
    """AdamW weight decay."""
    grad_clip: float = TRAINER.grad_clip
    """Clip the global gradient norm to this (0 disables)."""
    temperature: float = TRAINER.temperature
    """Sampling temperature; the loss uses the same one, so old and new log-probs are comparable."""
    max_new_tokens: int | None = TRAINER.max_new_tokens
    """Response-length limit L_max; default: the task's."""
    # -- the objective's hyper-parameters: None is its own default -----------------------------------------------
    eps_low: float | None = None
    """Lower clip range (default: the objective's)."""
    eps_high: float | None = None
    """Upper clip range (default: the objective's)."""
    beta: float | None = None
    """Reference-KL coefficient (GRPO default 0.04, others 0); > 0 creates a frozen reference model."""
    kl_kind: str | None = None
    """Reference-KL estimator: k1, k2 or k3 (default: the objective's)."""
    agg: str | None = None
    """Aggregation mode: token-mean, seq-mean-token-mean, seq-mean-token-sum, seq-mean-token-sum-norm."""
    dual_clip: float | None = None
    """Dual-clip constant c for negative advantages (default: off)."""
    ratio_clip: str | None = None
    """TEPO: where the clip acts: "sequence" (on s_i, with eps_low / eps_high) or "token_log" (each token's log-ratio,
    with delta_low / delta_high, before the geometric mean) (default: token_log, chosen by research/reading-search/README.md)."""
    delta_low: float | None = None
    """TEPO token_log clip and GMPO: a token's log-ratio may fall this many nats when A < 0 (default 0.4)."""
    delta_high: float | None = None
    """TEPO token_log clip and GMPO: a token's log-ratio may rise this many nats when A > 0 (default 0.4)."""
    beta_mask: float | None = None
    """TEPO: strength of the mask: coefficient of the masked KL term; with mask_action gate, 0 is off and any
    positive value on (default 1.0)."""
    mask_criterion: str | None = None
    """TEPO: how "entropy decreased" is decided: measured or predicted (default: measured)."""
    mask_kl: str | None = None
    """TEPO: estimator of the masked KL to the old policy: k3, k1_abs or k2 (default: k3)."""
    mask_action: str | None = None
    """TEPO: what the mask does to a masked token: kl (add beta_mask x KL to the old policy) or gate (its policy term
    carries no gradient) (default: kl)."""
    mask_tol: float | None = None
    """TEPO measured criterion: entropy must drop by more than this many nats (default 1e-4 for tepo: old entropies
    come from the KV-cached sampler, which rounds differently from the loss's teacher-forced pass, ~1e-6 in fp32)."""
    is_clip: str | None = None
    """CISPO: which sides of the IS weight are clipped: upper (min(r, 1 + eps_high), the paper's; default) or both
    (clip(r, 1 - eps_low, 1 + eps_high), verl's)."""
    tau_pos: float | None = None
    """SAPO: gate temperature for tokens with A > 0 (default 1.0)."""
    tau_neg: float | None = None
    """SAPO: gate temperature for tokens with A <= 0 (default 1.05: negative updates decay faster)."""
    zero_adv_clip: str | None = None
    """GMPO: how a token with A = 0 is clipped: zero (its log-ratio counts as 0, the paper's sgn(0) = 0; default),
    as_positive (the paper's code) or as_negative (TRL)."""
    empty_rows: str | None = None
    """GMPO: fully-masked rows in the sequence mean: skip (default) or count (as verl and TRL)."""
    # -- GTPO / GRPO-S advantage shaping: None is the shaping function's default --------------------------------
    alpha1: float | None = None
    """GTPO/GRPO-S: weight of the outcome reward (default 1.0)."""
    alpha2: float | None = None
    """GTPO/GRPO-S: weight of the entropy bonus (default 0.1)."""
    adv_norm: str | None = None
    """GTPO/GRPO-S: z-score over the whole group (union) or within correct/wrong separately (split)."""
    equal_groups: str | None = None
    """GTPO/GRPO-S: a group whose outcome rewards are all equal gets "zero" advantages (default, as for GRPO), or
    "shape" (z-score its entropy-shaped rewards anyway; the papers avoid such groups with DAPO's dynamic sampling)."""
    wrong_weight: str | None = None
    """GTPO/GRPO-S (a reading): how a wrong answer's penalty is spread over its tokens: "inverse_entropy" (default,
    1/H: confident wrong tokens lose most) or "entropy" (H: uncertain wrong tokens lose most, the later paper's wording)."""
    # -- DAPO's data-side techniques -------------------------------------------------------------------------
    dynamic_sampling: bool | None = TRAINER.dynamic_sampling
    """DAPO dynamic sampling: drop groups whose answers are all right or all wrong and sample more (default: the
    objective's recipe, on for dapo, gtpo, grpo_s and tepo; TEPO's takes it from research/reading-search/README.md)."""
    max_resample_rounds: int = TRAINER.max_resample_rounds
    """Dynamic sampling: at most this many extra sampling rounds per iteration."""
    overlong_shaping: bool | None = None
    """DAPO overlong reward shaping (default: on for dapo only)."""
    overlong_cache: int | None = None
    """Overlong shaping: length of the soft-penalty zone L_c (default: L_max // 4, at least 1)."""
    # -- the run: evaluation, stopping rules, checkpoints (the lab reads these) ----------------------------------
    eval_every: int = 10
    """Held-out evaluation every this many iterations (and before the first and after the last)."""
    pass_k: int = 4
    """Also report sampled pass@k on the held-out set at each evaluation (0 disables)."""
    stop_at_accuracy: float | None = None
    """Stop at the first evaluation whose greedy held-out accuracy reaches this."""
    stop_at_reward: float | None = None
    """Stop once the mean sampled reward over the last ``reward_window`` iterations reaches this (then evaluate).
    It reads only the run's own training samples, never the held-out set, so the final held-out accuracy stays an
    honest estimate; ``stop_at_accuracy`` instead picks its stopping point on the held-out set itself."""
    reward_window: int = 10
    """Iterations averaged by ``stop_at_reward`` (after a resume the window fills again first)."""
    save_every: int = 25
    """Write a checkpoint every this many iterations (and at the end, and on Ctrl-C)."""
    # -- the algorithm, continued: randomness, device, numerics ----------------------------------------------
    seed: int = TRAINER.seed
    """Seed for prompts, sampling and mini-batch order."""
    device: str = "auto"
    """auto, cpu, cuda or mps."""
    precision: str = TRAINER.precision
    """fp32, or bf16 (autocast, on CUDA or CPU); auto: bf16 on CUDA, fp32 elsewhere."""
    old_logp: str = TRAINER.old_logp
    """Where the old policy's log-probs and entropies come from: "sampler" (recorded while sampling, free) or
    "recompute" (one no-grad teacher-forced pass before the first optimizer step, so that at theta = theta_old every
    ratio is exactly 1 and TEPO's measured mask exactly empty). auto: sampler in fp32, recompute in bf16, where the
    KV-cached sampler and the teacher-forced pass round differently by ~1e-2 nats."""
    scoring: str = TRAINER.scoring
    """How each optimizer step scores its rows: "plain" (one forward pass over every row's prompt and response) or
    "shared_prompt" (each distinct prompt read once: the same numbers up to round-off, faster; the quickstart and
    compare use it, as their committed results were measured with it)."""
    # -- the run folder -----------------------------------------------------------------------------------------
    out: str = "runs/rl"
    """Run folder: config.json, metrics.jsonl, checkpoint.pt."""
    resume: bool = False
    """Continue the run in ``out`` from its checkpoint. Its settings must stay the run's; only ``iterations`` may
    change (on the command line, flags left out are taken from the run)."""
    overwrite: bool = False
    """Delete the run already in ``out`` and start afresh (without it, an existing run there is an error)."""
    progress: bool = True
    """Show a progress bar with live reward and accuracy."""
    verbose: bool = True
    """With the progress bar off, print a line at each evaluation; False prints nothing (notebooks, lessons)."""

    def __post_init__(self):
        """Every value is checked here, before any file is touched: library callers get the command line's checks."""
        parse_levels(self.levels)  # a bad --levels fails here, before any work
        if self.algo not in OBJECTIVES:
            raise ValueError(f"unknown objective {self.algo!r}; choose one of {', '.join(OBJECTIVES)}")
        if self.task is not None and self.task not in TASK_NAMES:
            raise ValueError(f"unknown task {self.task!r}; allowed tasks: {', '.join(TASK_NAMES)}")
        for name in ("iterations", "prompts", "minibatches", "epochs", "micro_batches", "eval_every", "save_every",
                     "reward_window"):
            check_int(self, name, 1)
        check_int(self, "group_size", 2, "a group of one has no relative advantage: every advantage would be 0")
        check_field_choice(self, "old_logp", OLD_LOGP_SOURCES)
        check_field_choice(self, "scoring", SCORINGS)
        check_field_choice(self, "precision", PRECISIONS)
        batch = self.prompts * self.group_size
        if self.minibatches > batch:
            raise ValueError(f"--minibatches {self.minibatches} is larger than the rollout ({self.prompts} prompts x "
                             f"{self.group_size} responses = {batch} rows); each mini-batch needs at least one row")
        if self.micro_batches * self.minibatches > batch:
            raise ValueError(f"--micro-batches {self.micro_batches} x --minibatches {self.minibatches} exceeds the "
                             f"{batch} rows of a rollout")
        check_number(self, "lr", 0, low_open=True)
        check_int(self, "warmup", 0)
        check_number(self, "min_lr_frac", 0, 1)
        check_number(self, "weight_decay", 0)
        check_number(self, "grad_clip", 0, why="0 disables clipping; a negative norm would flip the update")
        check_number(self, "temperature", 0, low_open=True, why="sampling must be stochastic")
        check_int(self, "max_new_tokens", 1, optional=True)
        check_number(self, "eps_low", 0, 1, optional=True, high_open=True, why="the lower clip bound 1 - eps_low > 0")
        for name in ("eps_high", "beta", "beta_mask", "mask_tol", "alpha1", "alpha2"):
            check_number(self, name, 0, optional=True)
        for name in ("tau_pos", "tau_neg"):
            check_number(self, name, 0, low_open=True, optional=True, why="a gate temperature")
        check_number(self, "dual_clip", 1, low_open=True, optional=True, why="the usual value is 3")
        for name in ("delta_low", "delta_high"):
            check_number(self, name, 0, low_open=True, optional=True, why="a clip range in nats")
        if self.agg is not None and self.agg not in AGG_MODES:
            raise ValueError(f"unknown aggregation {self.agg!r}; choose one of {', '.join(AGG_MODES)}")
        for name, choices in OBJECTIVE_CHOICES.items():
            check_field_choice(self, name, choices, optional=True)
        check_int(self, "max_resample_rounds", 0)
        check_int(self, "overlong_cache", 1, optional=True)
        check_int(self, "pass_k", 0, "0 disables pass@k")
        check_number(self, "stop_at_accuracy", 0, 1, optional=True, why="an accuracy")
        check_number(self, "stop_at_reward", 0, optional=True, low_open=True, why="a mean reward to reach")
        check_int(self, "seed", 0)
        check_device(self)
        init_folder = Path(self.init) if Path(self.init).is_dir() else Path(self.init).parent
        if same_folder(self.out, init_folder):
            raise RunFolderError(f"--out {self.out!r} is the warm start's own folder (--init {self.init!r}); RL never "
                                 f"writes there, so the warm start stays intact: choose another --out")
        check_resume_or_overwrite(self.resume, self.overwrite)
        # an objective's hyper-parameters and its advantage shaping are checked against the functions' signatures
        for names, functions in ((LOSS_PARAMS, OBJECTIVES), (SHAPING_PARAMS, SHAPED_ADVANTAGES)):
            for name in names:
                if getattr(self, name) is not None and not accepts(functions.get(self.algo), name):
                    raise ValueError(f"--{name.replace('_', '-')} does not apply to {self.algo}; it applies to: "
                                     f"{', '.join(a for a, fn in functions.items() if accepts(fn, name))}")
        if self.algo == "tepo" and self.loss_default("ratio_clip") == "token_log" and self.dual_clip is not None:
            raise ValueError("--dual-clip applies to TEPO's ratio_clip 'sequence' only; with 'token_log' every token's "
                             "log-ratio is already bounded on the pessimistic side")

    def loss_kwargs(self) -> dict:
        """The objective's hyper-parameters set explicitly (the rest keep the objective's own defaults)."""
        return {name: getattr(self, name) for name in LOSS_PARAMS if getattr(self, name) is not None}

    def loss_default(self, name: str):
        """The value the objective will use for ``name``: an explicit override, else the objective's own default
        (``TrainerConfig.objective_setting``)."""
        return TrainerConfig(algo=self.algo, objective=self.loss_kwargs()).objective_setting(name)

    def shaping_kwargs(self) -> dict:
        """GTPO / GRPO-S shaping options set explicitly (the rest keep the shaping function's defaults)."""
        return {name: getattr(self, name) for name in SHAPING_PARAMS if getattr(self, name) is not None}

    def trainer_config(self, task) -> TrainerConfig:
        """What the core's ``Trainer`` needs for this run on ``task``: the fields the two configs share, and what
        the lab's own switches resolve to (the objective's and the shaping's overrides, DAPO's techniques)."""
        max_len = self.max_new_tokens or task.max_new_tokens
        shared = {name: getattr(self, name) for name in SHARED_FIELDS}
        return dataclasses.replace(
            TRAINER, **shared, objective=self.loss_kwargs(), shaping=self.shaping_kwargs(),
            overlong_cache=(self.overlong_cache or max(1, max_len // 4)) if self.uses_overlong_shaping else None)

    def resolved_reading(self) -> dict:
        """What this run computes, every default resolved: the objective, its ratio and clip range, TEPO's mask,
        the aggregation, the reference KL, the data recipe (dynamic sampling, overlong shaping) and the rollout's
        reuse. A comparison records it per run and names its entries by it (``reading_label``), so that a name
        cannot drift when a default changes."""
        value = self.loss_default
        if (self.algo == "tepo" and value("ratio_clip") == "token_log") or self.algo == "gmpo":
            ratio, clip = "sequence", f"token log-ratio [-{value('delta_low'):g}, +{value('delta_high'):g}] nats"
        elif self.algo == "cispo":
            both = value("is_clip") == "both"
            ratio, clip = "token", (f"IS weight [1-{value('eps_low'):g}, " if both else "IS weight [0, ") + \
                f"1+{value('eps_high'):g}]"
        elif self.algo == "sapo":
            ratio, clip = "token", f"soft gate tau {value('tau_pos'):g} / {value('tau_neg'):g}"
        else:
            ratio = "sequence" if self.algo in ("gspo", "gspo_token", "tepo") else "token"
            clip = f"[1-{value('eps_low'):g}, 1+{value('eps_high'):g}]" + (" on s_i" if ratio == "sequence" else "")
            if value("dual_clip"):
                clip += f", dual {value('dual_clip'):g}"
        reading = {"algo": self.algo, "ratio": ratio, "clip": clip, "agg": value("agg")}
        if self.algo == "tepo":
            off = value("beta_mask") == 0 or value("mask_criterion") == "none"
            action = "gate" if value("mask_action") == "gate" else value("mask_kl")
            reading["mask"] = "off" if off else f"{action} β_M {value('beta_mask'):g}, {value('mask_criterion')}"
        reading["kl_ref"] = f"{value('beta'):g} {value('kl_kind')}" if value("beta") else "0"
        reading["dynamic_sampling"] = self.uses_dynamic_sampling
        reading["overlong_shaping"] = self.uses_overlong_shaping
        reading["steps_per_rollout"] = self.epochs * self.minibatches
        if self.algo in SHAPED_ADVANTAGES:
            reading["shaping"] = ", ".join(f"{k}={v}" for k, v in self.shaping_kwargs().items()) or "defaults"
        return reading

    @property
    def uses_dynamic_sampling(self) -> bool:
        return OBJECTIVE_FACTS[self.algo].dynamic_sampling if self.dynamic_sampling is None else self.dynamic_sampling

    @property
    def uses_overlong_shaping(self) -> bool:
        return self.algo == "dapo" if self.overlong_shaping is None else self.overlong_shaping


SHARED_FIELDS = tuple(f.name for f in dataclasses.fields(TrainerConfig)
                      if f.name in RLConfig.__dataclass_fields__ and f.name != "overlong_cache")
"""The knobs ``RLConfig`` hands the core's ``TrainerConfig`` as they are (same name, same default). (``overlong_cache``
is resolved instead: the core's is None when overlong shaping is off.)"""
RUN_FIELDS = ("init", "task", "levels", "eval_every", "pass_k", "stop_at_accuracy", "stop_at_reward", "reward_window",
              "save_every", "device", "out", "resume", "overwrite", "progress", "verbose")
"""The run's own settings, which only the lab reads."""


def reading_label(reading: dict) -> str:
    """A ``resolved_reading`` in one line, e.g. "tepo: sequence ratio, token log-ratio [-0.4, +0.4] nats, token-mean,
    mask k3 β_M 1, measured, DS, KL 0"; "DS" is dynamic sampling ("no DS": off), "overlong" DAPO's overlong
    shaping (named only when on)."""
    parts = [f"{reading['ratio']} ratio", reading["clip"], reading["agg"]]
    if "mask" in reading:
        parts.append(f"mask {reading['mask']}")
    if "shaping" in reading:
        parts.append(f"shaping {reading['shaping']}")
    parts += ["DS" if reading["dynamic_sampling"] else "no DS"] + (["overlong"] if reading["overlong_shaping"] else [])
    parts.append(f"KL {reading['kl_ref']}")
    return f"{reading['algo']}: " + ", ".join(parts)


def accepts(function, name: str) -> bool:
    """Whether ``function`` (None: no function) takes a parameter called ``name``."""
    return function is not None and name in inspect.signature(function).parameters
