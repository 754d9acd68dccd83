"""The RL trainer: one readable loop for every objective in ``minitepo.losses``.

One *iteration* (``Trainer.iterate``, read it top to bottom):

1. **sample** ``prompts`` prompts x ``group_size`` responses with the current policy; the sampler
   records each token's log-prob and entropy, which are the behaviour policy's ``old_logp`` and
   ``old_entropy`` (``collect_rollout``);
2. **reward** every response with the task's verifier (plus DAPO's overlong shaping, when on, in the
   same function). With DAPO's dynamic sampling, groups whose answers are all right or all wrong are
   dropped and more prompts are sampled, up to ``resample_rounds`` extra rounds;
3. **advantages**: group-relative; mean-only for Dr. GRPO; entropy-shaped for GTPO / GRPO-S;
4. **optimise**: ``epochs`` passes over the rollout, each split into ``minibatches`` optimizer steps.
   From the second step on the policy has moved away from the behaviour policy: ratios differ from 1,
   clipping acts, and TEPO's measured-entropy KL mask can be non-empty. (On the first step the
   policy *is* the behaviour policy, so TEPO's mask is empty by construction.) Each optimizer step
   may be split further into ``micro_batches`` (gradient accumulation); each micro-batch divides by
   the whole step's normaliser, so the gradient is the same either way;
5. **log**: one metrics record; every ``eval_every`` iterations also greedy held-out accuracy per
   level and sampled pass@k (the run loop, ``minitepo.lab.rl_run``, which also checkpoints).

Old log-probs and entropies are the ones recorded at sampling time, under the temperature the loss
also uses; in fp32 no extra forward pass recomputes them (in bf16 one no-grad teacher-forced pass does,
``Trainer.recompute_old_policy``: ``old_logp="auto"``). A frozen reference model exists only when the
objective's ``beta`` > 0. The names of the metrics are in ``records.rl_record``.

This file is the algorithm and nothing else: run folders, checkpoints, resume, Ctrl-C and the stopping
rules live in the lab (``minitepo.lab.rl_run``), which drives this ``Trainer``.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import random
import time
from dataclasses import dataclass

import torch

from minitepo import advantages as adv_lib
from minitepo.device import autocast, make_generator, pick_device, resolve_precision
from minitepo.losses import OBJECTIVES, objective_default, predicted_entropy_drop_score, step_normalizer
from minitepo.model import GPT
from minitepo.optim import TrainingError, bad_weight, lr_at, make_optimizer, set_lr
from minitepo.records import combine_micro_batches, combine_steps, rl_record
from minitepo.rollout import collect_rollout
from minitepo.sampling import Rollout, concat_rollouts, score_rollout
from minitepo.tokenizer import Tokenizer


@dataclass(frozen=True)
class TrainerConfig:
    """What the RL iterations need, and nothing else. It has no defaults: the command line's ``RLConfig``
    (``minitepo.lab.rl_config``) holds them with their reasons, checks every value and builds this one
    (``RLConfig.trainer_config``)."""

    algo: str                   # the objective, a key of ``losses.OBJECTIVES``
    objective: dict             # its hyper-parameters that differ from its own defaults (the spec's), by name
    shaping: dict               # GTPO / GRPO-S: the advantage shaping's options that differ from its defaults
    iterations: int             # rollouts in the run (the learning-rate schedule spans them)
    prompts: int                # P prompts per rollout
    group_size: int             # G responses per prompt; advantages are relative within such a group
    minibatches: int            # K optimizer steps per pass over a rollout (K > 1: off-policy steps)
    epochs: int                 # passes over each rollout
    micro_batches: int          # gradient accumulation within an optimizer step: the same gradient, less memory
    lr: float                   # peak learning rate, after ``warmup`` steps; cosine decay to ``min_lr_frac`` x lr
    warmup: int
    min_lr_frac: float
    weight_decay: float         # AdamW's, on weight matrices
    grad_clip: float            # global gradient-norm clip (0: none)
    temperature: float          # sampling temperature; the loss's log-probs use the same one
    max_new_tokens: int         # L_max, the response-length limit
    resample_rounds: int | None  # DAPO's dynamic sampling: at most this many extra sampling rounds; None: off
    overlong_cache: int | None  # DAPO's overlong shaping: length L_c of the soft-penalty zone; None: off
    old_logp: str               # "sampler", "recompute" or "auto" (recompute in bf16): where old log-probs come from
    seed: int                   # prompts, sampling and mini-batch order
    device: str
    precision: str              # "fp32", "bf16" or "auto" (bf16 on CUDA)

    def __post_init__(self):
        """The overrides name parameters of the functions they go to (a typo would otherwise fail mid-run)."""
        for what, function in (("objective", OBJECTIVES[self.algo]),
                               ("shaping", adv_lib.SHAPED_ADVANTAGES.get(self.algo))):
            accepted = set(inspect.signature(function).parameters) if function else set()
            if unknown := sorted(set(getattr(self, what)) - accepted):
                raise ValueError(f"{self.algo}: {what} options {unknown} are not parameters of "
                                 f"{getattr(function, '__name__', 'its advantages')}")

    def objective_setting(self, name: str):
        """The value the objective uses for ``name``: the one set here, else its own default (None: no such
        parameter)."""
        return self.objective[name] if name in self.objective else objective_default(self.algo, name)


class Trainer:
    """The state of RL on one policy: the model, its optimizer, the RNGs and the counters. ``iterate`` is one
    iteration of the algorithm. The run around the iterations (folders, checkpoints, evaluation, stopping) is
    the lab's (``minitepo.lab.rl_run.RLRun``)."""

    def __init__(self, config: TrainerConfig, model: GPT, tokenizer: Tokenizer, task):
        self.config = c = config
        self.device = pick_device(c.device)
        self.model, self.tokenizer, self.task = model.to(self.device), tokenizer, task
        self.max_len = c.max_new_tokens
        self.precision = resolve_precision(self.device, c.precision)      # "fp32" or "bf16"
        self.recompute_old = c.old_logp == "recompute" or (c.old_logp == "auto" and self.precision == "bf16")
        self.objective = OBJECTIVES[c.algo]
        self.agg = c.objective_setting("agg")
        self.predicted_mask = c.algo == "tepo" and c.objective_setting("mask_criterion") == "predicted"
        self.ref_model = None
        if (c.objective_setting("beta") or 0.0) > 0:  # a frozen copy of the starting policy, only when it is used
            self.ref_model = copy.deepcopy(self.model).eval().requires_grad_(False)
        self.optimizer = make_optimizer(self.model, c.lr, c.weight_decay)
        self.prompt_rng = random.Random(c.seed)
        self.generators = {"sample": make_generator(self.device, c.seed),
                           "shuffle": torch.Generator().manual_seed(c.seed + 1),
                           "eval": make_generator(self.device, c.seed + 2)}
        self.iteration = 0
        self.opt_step = 0
        self.t_train = 0.0  # seconds spent in iterations (excluding evaluation), carried across resumes
        self.total_opt_steps = c.iterations * c.epochs * c.minibatches

    # -- one iteration: sample -> reward -> advantages -> optimizer steps -> record ---------------------------

    def iterate(self) -> dict:
        """One RL iteration, top to bottom; returns its metrics record (names in ``records.rl_record``)."""
        c = self.config
        t0 = time.perf_counter()
        # 1-2. sample a group of responses per prompt and reward them (dynamic sampling: informative groups only)
        rollout, sampled = self.sample_rollout()                             # rollout.rewards: (B,)
        t_sample = time.perf_counter() - t0
        steps, t_ref = [], 0.0
        if rollout.rewards.numel():
            # 3. advantages, (B,) or (B, T) for GTPO
            advantages = compute_advantages(c, rollout)
            # the mini-batches of every epoch (a split left empty by dynamic sampling's short batches is skipped)
            B, shuffle = rollout.mask.size(0), self.generators["shuffle"]
            epochs = [splits(torch.randperm(B, generator=shuffle).to(self.device), c.minibatches)
                      for _ in range(c.epochs)]
            # extra forward passes: the frozen reference (beta > 0), and in bf16 the old policy's own numbers
            t1 = time.perf_counter()
            ref_logp = None
            if self.ref_model is not None:
                with torch.no_grad(), autocast(self.device, self.precision):
                    ref_logp, _ = score_rollout(self.ref_model, rollout)
            if self.recompute_old:
                rollout = self.recompute_old_policy(rollout, epochs[0])
            t_ref = time.perf_counter() - t1
            # 4. epochs x minibatches optimizer steps on this one rollout
            self.model.train()
            for minibatches in epochs:
                for rows in minibatches:
                    steps.append(self.optimizer_step(rollout, advantages, ref_logp, rows))
        # 5. the record of this iteration
        seconds = time.perf_counter() - t0
        self.t_train += seconds
        return rl_record(sampled, rollout, combine_steps(steps), seconds=seconds, sample_s=t_sample,
                         update_s=seconds - t_sample, ref_forward_s=t_ref, train_s=self.t_train,
                         opt_steps=self.opt_step, forms=getattr(self.task, "FORMS", ()))

    def sample_rollout(self) -> tuple[Rollout, list[Rollout]]:
        """A rollout of ``prompts`` groups to train on, and every rollout sampled for it (for the metrics).
        With dynamic sampling, only groups whose answers differ are kept, and more rounds are sampled
        until ``prompts`` groups are kept or ``max_resample_rounds`` extra rounds are spent."""
        c, G = self.config, self.config.group_size
        sampled, kept, kept_groups = [], [], 0
        while True:
            examples = [self.task.sample(self.prompt_rng) for _ in range(c.prompts)]
            rollout = collect_rollout(self.model, self.tokenizer, self.task, examples, group_size=G,
                                      temperature=c.temperature, max_new_tokens=self.max_len,
                                      generator=self.generators["sample"], overlong_cache=c.overlong_cache,
                                      precision=self.precision)
            sampled.append(rollout)
            if c.resample_rounds is None:
                return rollout, sampled
            # DAPO filters on accuracy: a group whose answers are all right or all wrong has no signal
            informative = adv_lib.informative_groups(rollout.correct.float(), rollout.group_ids)  # (B,) bool
            rows = informative.nonzero().squeeze(-1)[: (c.prompts - kept_groups) * G]
            if rows.numel():
                kept.append(rollout.select(rows))
                kept_groups += rows.numel() // G
            if kept_groups >= c.prompts or len(sampled) > c.resample_rounds:
                break
        if not kept:  # every group of every round had equal answers: nothing to learn from
            return rollout.select(torch.arange(0, device=self.device)), sampled
        return concat_rollouts(kept, self.tokenizer.pad_id), sampled

    def optimizer_step(self, rollout: Rollout, advantages: torch.Tensor, ref_logp: torch.Tensor | None,
                       rows: torch.Tensor) -> dict:
        """One optimizer step on the rollout's ``rows``, accumulated over ``micro_batches``; returns its statistics."""
        c = self.config
        lr = lr_at(self.opt_step, lr=c.lr, warmup=c.warmup, total=self.total_opt_steps, min_lr_frac=c.min_lr_frac)
        set_lr(self.optimizer, lr)
        self.optimizer.zero_grad(set_to_none=True)
        # The step's N, B' or C: every micro-batch divides by the same one, so their gradients add up to the step's
        normalizer = step_normalizer(rollout.mask[rows], self.agg, self.max_len)
        micro_stats = []
        for micro_rows in splits(rows, c.micro_batches):
            micro = rollout.select(micro_rows)
            extra = {}
            with autocast(self.device, self.precision):
                if self.predicted_mask:  # TEPO's "predicted" criterion reads the full distribution
                    logp, entropy, logprobs = score_rollout(self.model, micro, return_logprobs=True)
                    extra["entropy_drop_score"] = predicted_entropy_drop_score(logprobs.detach(), micro.response_ids)
                else:
                    logp, entropy = score_rollout(self.model, micro)
            loss, stats = self.objective(
                logp=logp, old_logp=micro.logp, advantages=advantages[micro_rows], mask=micro.mask,
                entropy=entropy, old_entropy=micro.entropy,
                ref_logp=None if ref_logp is None else ref_logp[micro_rows],
                normalizer=normalizer, max_len=self.max_len, **c.objective, **extra)
            self.check_finite(loss, f"the {c.algo} loss")
            loss.backward()
            micro_stats.append(({"loss": loss.item(), **{k: float(v) for k, v in stats.items()}},
                                int(micro.mask.sum()), int((micro.lengths > 0).sum())))
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), c.grad_clip or float("inf"))
        self.check_finite(grad_norm, "the gradient norm")
        self.optimizer.step()
        if bad := bad_weight(self.model.named_parameters()):  # caught where it happens, before any checkpoint
            raise TrainingError(f"iteration {self.iteration + 1}, optimizer step {self.opt_step + 1}: after the "
                                f"update, {bad}")
        self.opt_step += 1
        per_sequence_clip = c.algo == "gspo" and advantages.dim() == 1  # GSPO clips (and counts) whole sequences
        return {**combine_micro_batches(micro_stats, per_sequence_clip), "grad_norm": grad_norm.item(), "lr": lr}

    @torch.no_grad()
    def recompute_old_policy(self, rollout: Rollout, first_epoch: list[torch.Tensor]) -> Rollout:
        """The rollout with ``logp`` and ``entropy`` recomputed by the teacher-forced pass the loss itself uses.

        In bf16 the KV-cached sampler rounds differently from a full forward pass (gaps of ~1e-2 nats), so
        its numbers are not the old policy's as the loss sees it. Recomputed in exactly the first step's
        micro-batches, they make every ratio of that step exactly 1 and TEPO's measured mask exactly empty."""
        logp, entropy = torch.zeros_like(rollout.logp), torch.zeros_like(rollout.entropy)
        for rows in first_epoch:
            for micro_rows in splits(rows, self.config.micro_batches):  # exactly optimizer_step's micro-batches
                with autocast(self.device, self.precision):
                    logp[micro_rows], entropy[micro_rows] = score_rollout(self.model, rollout.select(micro_rows))
        return dataclasses.replace(rollout, logp=logp * rollout.mask, entropy=entropy * rollout.mask)

    def check_finite(self, value: torch.Tensor, what: str) -> None:
        if not torch.isfinite(value):
            raise TrainingError(f"iteration {self.iteration + 1}, optimizer step {self.opt_step + 1}: "
                                f"{what} is {value.item()}")


def splits(rows: torch.Tensor, k: int) -> list[torch.Tensor]:
    """``rows`` in ``k`` near-equal consecutive parts, leaving out the empty ones (dynamic sampling can keep fewer
    rows than there are mini-batches). Mini-batches, micro-batches and the bf16 recompute all split this way."""
    return [part for part in rows.tensor_split(k) if part.numel()]


def compute_advantages(c: TrainerConfig, rollout: Rollout) -> torch.Tensor:
    """Group-relative advantages of the rollout's rewards: z-scores (mean-only for Dr. GRPO), or GTPO's /
    GRPO-S's entropy-shaped ones. (B,), or (B, T) for GTPO."""
    if shaped := adv_lib.SHAPED_ADVANTAGES.get(c.algo):
        return shaped(rollout.rewards, rollout.entropy, rollout.mask, rollout.group_ids, correct=rollout.correct,
                      **c.shaping)
    scale = "none" if c.algo == "dr_grpo" else "std"
    return adv_lib.group_advantages(rollout.rewards, rollout.group_ids, scale=scale)
