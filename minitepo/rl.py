"""The RL trainer: one readable loop for every objective in ``minitepo.losses``.

One *iteration* (``Trainer.iterate``, read it top to bottom):

1. **sample** ``prompts`` prompts x ``group_size`` responses with the current policy (``collect_rollout``); the
   sampler records each token's log-prob and entropy: the behaviour policy's ``old_logp`` and ``old_entropy``;
2. **reward** every response with the task's verifier, in the same call. With DAPO's dynamic sampling, groups whose
   answers are all right or all wrong are dropped and more prompts are sampled, at most ``max_resample_rounds``
   extra rounds;
3. **advantages**: group-relative (``advantages.advantages_for``: z-score, mean-only, or entropy-shaped);
4. **optimise**: ``epochs`` passes over the rollout, each split into ``minibatches`` optimizer steps. Each step
   scores its rows teacher-forced (``score_rollout``: one forward pass over prompt and response) and calls the
   objective. From the second step on the policy has moved away from the behaviour policy: ratios differ from 1,
   clipping acts, and TEPO's measured-entropy KL mask can be non-empty. A step may be split further into
   ``micro_batches`` (gradient accumulation); each micro-batch divides by the whole step's normaliser;
5. **record**: one metrics record (``rl_record``, at the end of this file).

``Trainer.train`` is the whole loop: ``iterations`` iterations, greedy held-out accuracy before the first, every
``eval_every`` and after the last; it returns one record per iteration and needs no run folder::

    trainer = Trainer(TrainerConfig(iterations=20, temperature=0.7), model, tokenizer, task)
    history = trainer.train(eval_every=10)

What the trainer knows about an objective comes from its registration (``losses.OBJECTIVE_FACTS``: which
advantages, whether its recipe filters groups, whether it clips whole sequences), never from its name. A frozen
reference model exists only when the objective's ``beta`` > 0. The hyper-parameters are checked once, when the
config is made, so the objective is called with ``validate=False`` on tensors the trainer itself built.

This file is the algorithm and nothing else: run folders, checkpoints, resume, Ctrl-C, progress bars, pass@k and the
stopping rules live in the lab (``minitepo.lab.rl_run``), whose run holds a ``Trainer``.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import random
import time
from dataclasses import dataclass, field

import torch

from minitepo.advantages import SHAPED_ADVANTAGES, advantages_for
from minitepo.device import PRECISIONS, make_generator, resolve_precision, uses_bf16
from minitepo.evaluate import greedy_accuracy
from minitepo.losses import (OBJECTIVE_FACTS, OBJECTIVES, check_objective_kwargs, get_objective, objective_default,
                             predicted_entropy_drop_score, step_normalizer)
from minitepo.model import GPT
from minitepo.optim import TrainingError, bad_weight, lr_at, make_optimizer, set_lr
from minitepo.rollout import Rollout, collect_rollout, concat_rollouts, score_rollout
from minitepo.tokenizer import Tokenizer

OLD_LOGP_SOURCES = ("auto", "sampler", "recompute")
SCORINGS = ("plain", "shared_prompt")


@dataclass(frozen=True)
class TrainerConfig:
    """What RL needs, each knob with its default and the reason for it. ``minitepo rl``'s flags take their defaults
    from here, and the lab's recipes are ``replace(TrainerConfig(), ...)``."""

    algo: str = "tepo"                # the objective, a key of ``losses.OBJECTIVES``: minitepo is about TEPO
    objective: dict = field(default_factory=dict)  # hyper-parameters that differ from the objective's signature (the spec's)
    shaping: dict = field(default_factory=dict)    # GTPO / GRPO-S shaping options that differ from the function's
    iterations: int = 200             # rollouts in the run; the learning-rate schedule spans exactly these
    prompts: int = 32                 # P prompts per rollout: enough mixed groups per step on the toy tasks
    group_size: int = 8               # G responses per prompt: advantages are relative within a group, so G >= 2
    minibatches: int = 4              # K optimizer steps per pass: K > 1 goes off-policy, so clipping and TEPO's mask act
    epochs: int = 1                   # passes over each rollout; one, as in GRPO, so old log-probs stay close
    micro_batches: int = 1            # gradient accumulation within a step: the same gradient, less memory
    lr: float = 1e-4                  # RL from a weak warm start is fragile: 3e-4 and up collapsed it (constant lr)
    warmup: int = 10                  # optimizer steps of linear warmup to ``lr``: Adam's moments settle first
    min_lr_frac: float = 1.0          # cosine decay to this x lr over the run; 1.0: constant after warmup
    weight_decay: float = 0.0         # AdamW's, on weight matrices: RL runs are short, nothing to regularise (0: off)
    grad_clip: float = 1.0            # global gradient-norm clip (0: none): one outlier rollout cannot throw the policy
    temperature: float = 1.0          # sampling temperature; the loss's log-probs use the same one, so ratios compare
    max_new_tokens: int | None = None  # L_max, the response-length limit; None: the task's (its longest answer + slack)
    dynamic_sampling: bool | None = None  # DAPO's filter: train only on groups whose answers differ; None: the
    #                                       objective's recipe (``OBJECTIVE_FACTS``: on for dapo, gtpo, grpo_s, tepo)
    max_resample_rounds: int = 3      # dynamic sampling's extra sampling rounds per iteration; then train on what is kept
    overlong_cache: int | None = None  # DAPO's overlong shaping: length L_c of the soft-penalty zone; None: off
    old_logp: str = "auto"            # "sampler", "recompute" or "auto" (recompute in bf16, where the two round apart)
    scoring: str = "plain"            # "plain": one forward pass per row; "shared_prompt": each distinct prompt once,
    #                                   the same numbers up to round-off and faster (``minitepo.shared_prompt``)
    seed: int = 0                     # prompts, sampling and mini-batch order
    precision: str = "auto"           # "fp32", "bf16" or "auto" (bf16 on CUDA): bf16 is where a GPU is fast

    def __post_init__(self):
        """Every value checked once, here, with an error that says what is allowed: the trainer never meets a bad one
        mid-run, and the objective's own checks need not run again on every call."""
        get_objective(self.algo)  # an unknown name: a ValueError that lists the known ones
        shaped = SHAPED_ADVANTAGES.get(OBJECTIVE_FACTS[self.algo].advantages)   # GTPO's / GRPO-S's, else None
        for what, function in (("objective", OBJECTIVES[self.algo]), ("shaping", shaped)):
            accepted = set(inspect.signature(function).parameters) if function else set()
            if unknown := sorted(set(getattr(self, what)) - accepted):
                raise ValueError(f"{self.algo}: {what} options {unknown} are not parameters of "
                                 f"{getattr(function, '__name__', 'its advantages')}")
        for name, low in (("iterations", 1), ("prompts", 1), ("group_size", 2), ("minibatches", 1), ("epochs", 1),
                          ("micro_batches", 1), ("warmup", 0), ("max_resample_rounds", 0), ("seed", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                why = " (advantages are relative within a group)" if name == "group_size" else ""
                raise ValueError(f"TrainerConfig.{name} must be an integer >= {low}{why}, got {value!r}")
        for name, ok, allowed in (("lr", lambda v: v > 0, "> 0"), ("temperature", lambda v: v > 0, "> 0 (RL samples)"),
                                  ("min_lr_frac", lambda v: 0 <= v <= 1, "in [0, 1]"),
                                  ("weight_decay", lambda v: v >= 0, ">= 0"), ("grad_clip", lambda v: v >= 0, ">= 0")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and ok(value)):
                raise ValueError(f"TrainerConfig.{name} must be a finite number {allowed}, got {value!r}")
        for name in ("max_new_tokens", "overlong_cache"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"TrainerConfig.{name} must be None or an integer >= 1, got {value!r}")
        for name, allowed in (("old_logp", OLD_LOGP_SOURCES), ("scoring", SCORINGS), ("precision", PRECISIONS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"TrainerConfig.{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        if self.dynamic_sampling not in (None, True, False):
            raise ValueError(f"TrainerConfig.dynamic_sampling must be None (the objective's recipe), True or False, "
                             f"got {self.dynamic_sampling!r}")
        check_objective_kwargs(self.algo, self.objective)  # the objective's own checks, once

    def objective_kwargs(self) -> dict:
        """What the trainer passes the objective: the values set here; every other parameter keeps the objective's own
        default (TEPO's ``mask_tol`` included: ``tepo_loss`` defaults to ``TEPO_MASK_TOL`` itself)."""
        return dict(self.objective)

    def objective_setting(self, name: str):
        """The value the objective uses for ``name``: the one the trainer passes, else the objective's own default
        (None: no such parameter)."""
        return self.objective[name] if name in self.objective else objective_default(self.algo, name)

    @property
    def uses_dynamic_sampling(self) -> bool:
        """Whether groups with equal answers are dropped: as set, or the objective's recipe."""
        facts = OBJECTIVE_FACTS[self.algo]
        return facts.dynamic_sampling if self.dynamic_sampling is None else self.dynamic_sampling


class Trainer:
    """The state of RL on one policy: the model, its optimizer, the RNGs and the counters. ``iterate`` is one
    iteration of the algorithm, ``train`` the loop of them. It trains the model in place, on the model's device."""

    def __init__(self, config: TrainerConfig, model: GPT, tokenizer: Tokenizer, task):
        self.config = c = config
        self.device = next(model.parameters()).device
        self.model, self.tokenizer, self.task = model, tokenizer, task
        self.max_len = c.max_new_tokens or task.max_new_tokens
        task.eval_set()  # the held-out prompts are drawn once, here, before any training prompt (task.sample avoids them)
        self.precision = resolve_precision(self.device, c.precision)      # "fp32" or "bf16"
        self.bf16 = uses_bf16(self.device, c.precision)                   # autocast's switch (a clear error on mps)
        self.recompute_old = c.old_logp == "recompute" or (c.old_logp == "auto" and self.bf16)
        self.objective, self.objective_kwargs = OBJECTIVES[c.algo], c.objective_kwargs()
        self.facts = OBJECTIVE_FACTS[c.algo]
        self.dynamic_sampling = c.uses_dynamic_sampling                  # DAPO's filter: as set, or the objective's recipe
        self.agg = c.objective_setting("agg")
        self.predicted_mask = self.objective_kwargs.get("mask_criterion") == "predicted"  # reads the full distribution
        self.score = score_rollout
        if c.scoring == "shared_prompt":  # a speed optimisation, tested equal to score_rollout
            from minitepo.shared_prompt import score_rollout_shared_prompt
            self.score = score_rollout_shared_prompt
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
        if isinstance(eval_every, bool) or not isinstance(eval_every, int) or eval_every < 1:
            raise ValueError(f"eval_every must be an integer >= 1 (iterations between evaluations), got {eval_every!r}")
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
        """One RL iteration, top to bottom; returns its metrics record (names in ``rl_record``)."""
        c = self.config
        t0 = time.perf_counter()
        # 1-2. sample a group of responses per prompt and reward them (dynamic sampling: informative groups only)
        rollout, sampled = self.sample_rollout()                             # rollout.rewards: (B,)
        t_sample = time.perf_counter() - t0
        steps, t_ref = [], 0.0
        if rollout.rewards.numel():
            # 3. advantages: (B,), or (B, T) for GTPO
            advantages = advantages_for(self.facts.advantages, rollout, **c.shaping)
            # the rows of every optimizer step: each pass over the rollout shuffled and cut in ``minibatches``
            # (a cut left empty by dynamic sampling's short batches is skipped)
            B, shuffle = rollout.mask.size(0), self.generators["shuffle"]
            passes = [splits(torch.randperm(B, generator=shuffle).to(self.device), c.minibatches)
                      for _ in range(c.epochs)]
            # extra forward passes: the frozen reference (beta > 0), and in bf16 the old policy's own numbers
            t1 = time.perf_counter()
            ref_logp = None
            if self.ref_model is not None:
                with torch.no_grad(), torch.autocast(self.device.type, torch.bfloat16, enabled=self.bf16):
                    ref_logp, _ = self.score(self.ref_model, rollout)
            if self.recompute_old:
                rollout = self.recompute_old_policy(rollout, passes[0])
            t_ref = time.perf_counter() - t1
            # 4. epochs x minibatches optimizer steps on this one rollout
            self.model.train()
            for step_rows in passes:
                for rows in step_rows:
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
            if not self.dynamic_sampling:
                return rollout, sampled
            # DAPO filters on accuracy: a group whose answers are all right or all wrong has no signal
            correct = rollout.correct.view(-1, G)                                       # (P, G)
            informative = (correct.any(1) & ~correct.all(1)).repeat_interleave(G)       # (B,) groups whose answers differ
            rows = informative.nonzero().squeeze(-1)[: (c.prompts - kept_groups) * G]
            if rows.numel():
                kept.append(rollout.select(rows))
                kept_groups += rows.numel() // G
            if kept_groups >= c.prompts or len(sampled) > c.max_resample_rounds:
                break
        if not kept:  # every group of every round had equal answers: nothing to learn from
            return rollout.select(torch.arange(0, device=self.device)), sampled
        return (kept[0] if len(kept) == 1 else concat_rollouts(kept, self.tokenizer.pad_id)), sampled

    def optimizer_step(self, rollout: Rollout, advantages: torch.Tensor, ref_logp: torch.Tensor | None,
                       rows: torch.Tensor) -> dict:
        """One optimizer step on the rollout's ``rows``, accumulated over ``micro_batches``; returns its statistics."""
        c = self.config
        lr = lr_at(self.opt_step, lr=c.lr, warmup=c.warmup, total=self.total_opt_steps, min_lr_frac=c.min_lr_frac)
        set_lr(self.optimizer, lr)
        self.optimizer.zero_grad(set_to_none=True)
        # The step's N, B' or C: every micro-batch divides by the same one, so their gradients add up to the step's.
        # (One micro-batch is the whole step, and the objective computes that normaliser itself.)
        normalizer = step_normalizer(rollout.mask[rows], self.agg, self.max_len) if c.micro_batches > 1 else None
        micro_stats = []
        for micro_rows in splits(rows, c.micro_batches):
            micro = rollout.select(micro_rows)
            extra = {}
            with torch.autocast(self.device.type, torch.bfloat16, enabled=self.bf16):
                if self.predicted_mask:  # TEPO's "predicted" criterion reads the full distribution
                    logp, entropy, logprobs = self.score(self.model, micro, return_logprobs=True)
                    extra["entropy_drop_score"] = predicted_entropy_drop_score(logprobs.detach(), micro.response_ids)
                else:
                    logp, entropy = self.score(self.model, micro)               # (b, T) each, logp with gradient
            loss, stats = self.objective(
                logp=logp, old_logp=micro.old_logp, advantages=advantages[micro_rows], mask=micro.mask,
                entropy=entropy, old_entropy=micro.old_entropy,
                ref_logp=None if ref_logp is None else ref_logp[micro_rows],
                normalizer=normalizer, max_len=self.max_len, validate=False, **self.objective_kwargs, **extra)
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
        if len(micro_stats) == 1:  # the step is one micro-batch: its statistics are the step's
            return {**micro_stats[0][0], "grad_norm": grad_norm.item(), "lr": lr}
        per_sequence_clip = self.facts.clips_sequences and advantages.dim() == 1  # GSPO counts whole sequences
        return {**combine_micro_batches(micro_stats, per_sequence_clip), "grad_norm": grad_norm.item(), "lr": lr}

    @torch.no_grad()
    def recompute_old_policy(self, rollout: Rollout, first_pass: list[torch.Tensor]) -> Rollout:
        """The rollout with ``old_logp`` and ``old_entropy`` recomputed by the teacher-forced pass the loss itself uses.

        In bf16 the KV-cached sampler rounds differently from a full forward pass (gaps of ~1e-2 nats), so
        its numbers are not the old policy's as the loss sees it. Recomputed in exactly the first step's
        micro-batches, they make every ratio of that step exactly 1 and TEPO's measured mask exactly empty."""
        logp, entropy = torch.zeros_like(rollout.old_logp), torch.zeros_like(rollout.old_entropy)
        for rows in first_pass:
            for micro_rows in splits(rows, self.config.micro_batches):  # exactly optimizer_step's micro-batches
                with torch.autocast(self.device.type, torch.bfloat16, enabled=self.bf16):
                    logp[micro_rows], entropy[micro_rows] = self.score(self.model, rollout.select(micro_rows))
        return dataclasses.replace(rollout, old_logp=logp * rollout.mask, old_entropy=entropy * rollout.mask)

    def check_finite(self, value: torch.Tensor, what: str) -> None:
        if not torch.isfinite(value):
            raise TrainingError(f"iteration {self.iteration + 1}, optimizer step {self.opt_step + 1}: "
                                f"{what} is {value.item()}")


def splits(rows: torch.Tensor, k: int) -> list[torch.Tensor]:
    """``rows`` in ``k`` near-equal consecutive parts, leaving out the empty ones (dynamic sampling can keep fewer
    rows than there are mini-batches). Mini-batches, micro-batches and the bf16 recompute all split this way."""
    return [part for part in rows.tensor_split(k) if part.numel()]


# -- the record: what one iteration measured ---------------------------------------------------------------------
#
# Metric names, CleanRL-style: charts/ (what the run is doing), losses/ (the objective's statistics), tepo/ (TEPO's
# mask), time/ (seconds), eval/ (held-out accuracy, added by ``train``). Two populations, and each name says which:
# *sampled* (every response of every sampling round) and *trained* (the rows the optimizer steps use: with dynamic
# sampling only the groups whose answers differ). ``charts/entropy_sampled`` is the entropy to compare across
# objectives; ``charts/entropy_trained`` is the policy's entropy where the gradient acts.

SUMMED_STATS = ("loss", "pg_loss", "mask_kl")
"""Each micro-batch's value is its share of the step's total (every micro-batch divides by the step's normaliser)."""
SEQUENCE_STATS = ("seq_ratio_mean",)
"""Averages over responses; every other statistic is an average over tokens."""
CLIP_STATS = ("clip_frac", "clip/pos_high", "clip/pos_low", "clip/neg_high", "clip/neg_low", "clip/dual")


def combine_micro_batches(parts: list[tuple[dict, int, int]], per_sequence_clip: bool = False) -> dict:
    """One optimizer step's statistics from its micro-batches' (stats, real tokens, non-empty responses): the summed
    statistics add up, the averages are weighted by what they average over (tokens, or responses for the sequence
    statistics and GSPO's sequence-level clipping), so the step logs the same numbers however it is split."""
    tokens = sum(n for _, n, _ in parts) or 1
    sequences = sum(n for _, _, n in parts) or 1
    step: dict[str, float] = {}
    for stats, n_tokens, n_sequences in parts:
        for key, value in stats.items():
            if key in SUMMED_STATS:
                weight = 1.0
            elif key in SEQUENCE_STATS or (per_sequence_clip and key in CLIP_STATS):
                weight = n_sequences / sequences
            else:
                weight = n_tokens / tokens
            step[key] = step.get(key, 0.0) + weight * value
    return step


def combine_steps(steps: list[dict]) -> dict:
    """One iteration's optimizer-step statistics, named: the mean over its steps, plus TEPO's mask on the first step
    (where the policy is the behaviour policy, so the measured mask must be empty) and on the later ones, and how far
    the policy strays from the one that sampled (on the last step, and over the later steps)."""
    record = {}
    for key in sorted({k for s in steps for k in s}):
        values = [s[key] for s in steps if key in s]
        name = {"loss": "losses/loss", "grad_norm": "charts/grad_norm", "lr": "charts/lr"}.get(key, f"losses/{key}")
        record["tepo/" + key if key.startswith("mask_frac") else name] = sum(values) / len(values)
    later = steps[1:]
    if steps and "mask_frac" in steps[0]:
        record["tepo/mask_frac_first_step"] = steps[0]["mask_frac"]
        record["tepo/mask_frac_later_steps"] = sum(s["mask_frac"] for s in later) / len(later) if later else 0.0
    for key in ("approx_kl_old", "clip_frac"):
        if steps and key in steps[-1]:
            record[f"losses/{key}_last_step"] = steps[-1][key]
            values = [s[key] for s in later if key in s]
            record[f"losses/{key}_later_steps"] = sum(values) / len(values) if values else 0.0
    return record


def length_cv_in_groups(lengths: torch.Tensor, group_size: int) -> float:
    """The mean over groups of the coefficient of variation of response lengths within a group (population sd /
    mean): 0 when every response of a group has the same length; how unequally token-mean and per-sequence
    aggregation weigh a group's responses. ``lengths``: (B,), rows grouped by prompt."""
    per_group = lengths.float().view(-1, group_size)                         # (groups, G)
    return (per_group.std(1, unbiased=False) / per_group.mean(1).clamp(min=1e-9)).mean().item()


def rl_record(sampled: list[Rollout], trained: Rollout, steps: dict, *, seconds: float, sample_s: float,
              update_s: float, ref_forward_s: float, opt_steps: int, forms: tuple[str, ...] = ()) -> dict:
    """The metrics of one RL iteration: what was sampled (every round of dynamic sampling), what was trained on,
    the combined optimizer-step statistics (``combine_steps``) and where the time went. ``forms``: the task's
    answer forms (``task.FORMS``), whose share and accuracy among the sampled responses are recorded too."""
    rewards = torch.cat([r.rewards for r in sampled])                        # (B_sampled,) every sampled response
    lengths = torch.cat([r.lengths for r in sampled])                        # (B_sampled,)
    sampled_tokens, G = int(lengths.sum()), sampled[0].group_size
    spread = rewards.view(-1, G)                                             # (groups, G)
    record = {
        "charts/reward_mean": rewards.mean().item(),
        "charts/reward_std": rewards.std().item() if rewards.numel() > 1 else 0.0,
        "charts/zero_spread_groups": (spread.max(1).values == spread.min(1).values).float().mean().item(),
        "charts/groups_trained": trained.rewards.numel() // G,
        "charts/sample_rounds": len(sampled),
        # what the iteration cost, whatever the data recipe: responses and response tokens sampled (every round)
        "charts/responses_sampled": lengths.numel(),
        "charts/tokens_sampled": sampled_tokens,
        "charts/response_len_sampled": lengths.float().mean().item(),
        "charts/len_cv_in_group": length_cv_in_groups(lengths, G),
        # the policy's entropy over EVERY sampled token (nats per token): comparable across data recipes
        "charts/entropy_sampled": (sum(r.old_entropy.sum() for r in sampled) / max(sampled_tokens, 1)).item(),
    }
    if forms:
        form = torch.cat([r.form for r in sampled])                          # (B_sampled,) index into forms
        correct = torch.cat([r.correct for r in sampled]).float()
        for index, name in enumerate(forms):
            share = form == index
            record[f"charts/form_share/{name}"] = share.float().mean().item()
            record[f"charts/form_acc/{name}"] = correct[share].mean().item() if share.any() else 0.0
    if trained.rewards.numel():
        record.update({"charts/response_len": trained.lengths.float().mean().item(),
                       "charts/truncated_frac": (~trained.finished).float().mean().item(),
                       # over the trained rows only (with dynamic sampling: the groups with mixed answers)
                       "charts/entropy_trained": (trained.old_entropy.sum() / trained.mask.sum()).item()})
    record["time/ref_forward_s"] = ref_forward_s if steps else 0.0
    record.update(steps)
    record.update({"time/step_s": seconds, "time/sample_s": sample_s, "time/update_s": update_s,
                   "time/sampled_tokens_per_s": sampled_tokens / max(sample_s, 1e-9), "charts/opt_steps": opt_steps})
    return record
