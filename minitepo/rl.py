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
5. **log**: one metrics record.

``Trainer.train`` is the whole loop: ``iterations`` iterations, greedy held-out accuracy before the first, every
``eval_every`` and after the last; it returns the history (one record per iteration) and needs no run folder::

    trainer = Trainer(TrainerConfig(iterations=20, temperature=0.7), model, tokenizer, task)
    history = trainer.train(eval_every=10)

Old log-probs and entropies are the ones recorded at sampling time, under the temperature the loss
also uses; in fp32 no extra forward pass recomputes them (in bf16 one no-grad teacher-forced pass does,
``Trainer.recompute_old_policy``: ``old_logp="auto"``). A frozen reference model exists only when the
objective's ``beta`` > 0. The names of the metrics are in ``records.rl_record``.

This file is the algorithm and nothing else: run folders, checkpoints, resume, Ctrl-C, progress bars, pass@k and
the stopping rules live in the lab (``minitepo.lab.rl_run``), whose run holds a ``Trainer``.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import random
import time
from dataclasses import dataclass, field

import torch

from minitepo import advantages as adv_lib
from minitepo.device import autocast, make_generator, resolve_precision
from minitepo.evaluate import greedy_accuracy
from minitepo.losses import (OBJECTIVES, get_objective, objective_default, predicted_entropy_drop_score,
                             step_normalizer)
from minitepo.model import GPT
from minitepo.optim import TrainingError, bad_weight, lr_at, make_optimizer, set_lr
from minitepo.records import combine_micro_batches, combine_steps, rl_record
from minitepo.rollout import collect_rollout
from minitepo.sampling import Rollout, concat_rollouts, score_rollout
from minitepo.tokenizer import Tokenizer


@dataclass(frozen=True)
class TrainerConfig:
    """What RL needs, each knob with its default and the reason for it. ``minitepo rl``'s flags take their defaults
    from here (the lab's ``RLConfig``, which also switches DAPO's data-side techniques on per objective), and the
    lab's presets are ``replace(TrainerConfig(), ...)``. The objective's hyper-parameters default to its signature's."""

    algo: str = "tepo"                # the objective, a key of ``losses.OBJECTIVES``
    objective: dict = field(default_factory=dict)  # its hyper-parameters that differ from its signature's, by name
    shaping: dict = field(default_factory=dict)    # GTPO / GRPO-S: shaping options that differ from the function's
    iterations: int = 200             # rollouts in the run; the learning-rate schedule spans exactly these
    prompts: int = 32                 # P prompts per rollout
    group_size: int = 8               # G responses per prompt: advantages are relative within such a group
    minibatches: int = 4              # K optimizer steps per pass: K > 1 goes off-policy, so clipping and TEPO's mask act
    epochs: int = 1                   # passes over each rollout
    micro_batches: int = 1            # gradient accumulation within a step: the same gradient, less memory
    lr: float = 1e-4                  # RL from a weak warm start is fragile: 3e-4 and up collapsed it (constant lr)
    warmup: int = 10                  # optimizer steps of linear warmup to ``lr``
    min_lr_frac: float = 1.0          # cosine decay to this x lr over the run; 1.0: constant after warmup
    weight_decay: float = 0.0         # AdamW's, on weight matrices (0: off)
    grad_clip: float = 1.0            # global gradient-norm clip (0: none): one outlier rollout cannot throw the policy
    temperature: float = 1.0          # sampling temperature; the loss's log-probs use the same one
    max_new_tokens: int | None = None  # L_max, the response-length limit; None: the task's
    resample_rounds: int | None = None  # DAPO's dynamic sampling: at most this many extra sampling rounds; None: off
    overlong_cache: int | None = None  # DAPO's overlong shaping: length L_c of the soft-penalty zone; None: off
    old_logp: str = "auto"            # "sampler", "recompute" or "auto" (recompute in bf16, where the two round apart)
    seed: int = 0                     # prompts, sampling and mini-batch order
    precision: str = "auto"           # "fp32", "bf16" or "auto" (bf16 on CUDA)

    def __post_init__(self):
        """The objective exists, and the overrides name parameters of the functions they go to (a typo would
        otherwise fail mid-run)."""
        get_objective(self.algo)  # an unknown name: a ValueError that lists the known ones
        for what, function in (("objective", OBJECTIVES[self.algo]),
                               ("shaping", adv_lib.SHAPED_ADVANTAGES.get(self.algo))):
            accepted = set(inspect.signature(function).parameters) if function else set()
            if unknown := sorted(set(getattr(self, what)) - accepted):
                raise ValueError(f"{self.algo}: {what} options {unknown} are not parameters of "
                                 f"{getattr(function, '__name__', 'its advantages')}")

    def objective_kwargs(self) -> dict:
        """What the trainer passes the objective: the values set here; every other parameter keeps the objective's own
        default (TEPO's ``mask_tol`` included: ``tepo_loss`` defaults to ``TEPO_MASK_TOL`` itself)."""
        return dict(self.objective)

    def objective_setting(self, name: str):
        """The value the objective uses for ``name``: the one the trainer passes, else the objective's own default
        (None: no such parameter)."""
        kwargs = self.objective_kwargs()
        return kwargs[name] if name in kwargs else objective_default(self.algo, name)


class Trainer:
    """The state of RL on one policy: the model, its optimizer, the RNGs and the counters. ``iterate`` is one
    iteration of the algorithm, ``train`` the loop of them. It trains the model in place, on the model's device."""

    def __init__(self, config: TrainerConfig, model: GPT, tokenizer: Tokenizer, task):
        self.config = c = config
        self.device = next(model.parameters()).device
        self.model, self.tokenizer, self.task = model, tokenizer, task
        self.max_len = c.max_new_tokens or task.max_new_tokens
        self.precision = resolve_precision(self.device, c.precision)      # "fp32" or "bf16"
        self.recompute_old = c.old_logp == "recompute" or (c.old_logp == "auto" and self.precision == "bf16")
        self.objective, self.objective_kwargs = OBJECTIVES[c.algo], c.objective_kwargs()
        self.agg = c.objective_setting("agg")
        self.predicted_mask = c.algo == "tepo" and c.objective_setting("mask_criterion") == "predicted"
        self.ref_model = None
        if (c.objective_setting("beta") or 0.0) > 0:  # a frozen copy of the starting policy, only when it is used
            self.ref_model = copy.deepcopy(self.model).eval().requires_grad_(False)
        self.optimizer = make_optimizer(self.model, c.lr, c.weight_decay)
        self.prompt_rng = random.Random(c.seed)
        self.generators = {"sample": make_generator(self.device, c.seed),
                           "shuffle": torch.Generator().manual_seed(c.seed + 1)}
        self.iteration = 0   # iterations done
        self.opt_step = 0    # optimizer steps done (the learning-rate schedule's clock)
        self.total_opt_steps = c.iterations * c.epochs * c.minibatches

    # -- the loop: iterate, evaluate every eval_every iterations, return the history --------------------------

    def train(self, eval_every: int) -> list[dict]:
        """The remaining iterations of the run, with held-out accuracy at the start, every ``eval_every`` iterations
        and at the end; returns one record per iteration (after a step-0 record of the accuracy at the start)."""
        history = [{"step": self.iteration, **self.evaluate(), "charts/opt_steps": self.opt_step}]
        while self.iteration < self.config.iterations:
            record = self.iterate()
            if self.iteration % eval_every == 0 or self.iteration == self.config.iterations:
                record.update(self.evaluate())
            history.append({"step": self.iteration, **record})
        return history

    def evaluate(self) -> dict:
        """Greedy held-out accuracy, overall and per level: ``{"eval/greedy_acc/all": ..., ...}``."""
        accuracy = greedy_accuracy(self.model, self.tokenizer, self.task, precision=self.precision)
        return {f"eval/greedy_acc/{k}": v for k, v in accuracy.items()}

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
        self.iteration += 1
        seconds = time.perf_counter() - t0
        return rl_record(sampled, rollout, combine_steps(steps), seconds=seconds, sample_s=t_sample,
                         update_s=seconds - t_sample, ref_forward_s=t_ref, opt_steps=self.opt_step,
                         forms=getattr(self.task, "FORMS", ()))

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
                normalizer=normalizer, max_len=self.max_len, **self.objective_kwargs, **extra)
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
