"""The RL trainer: one readable loop for every objective in ``minitepo.losses``.

One *iteration* (``Trainer.iterate``, read it top to bottom):

1. **sample** ``prompts`` prompts x ``group_size`` responses with the current policy; the sampler
   records each token's log-prob and entropy, which are the behaviour policy's ``old_logp`` and
   ``old_entropy`` (``collect_rollout``);
2. **reward** every response with the task's verifier (plus DAPO's overlong shaping, when on, in the
   same function). With DAPO's dynamic sampling, groups whose answers are all right or all wrong are
   dropped and more prompts are sampled, up to ``max_resample_rounds`` extra rounds;
3. **advantages**: group-relative; mean-only for Dr. GRPO; entropy-shaped for GTPO / GRPO-S;
4. **optimise**: ``epochs`` passes over the rollout, each split into ``minibatches`` optimizer steps.
   From the second step on the policy has moved away from the behaviour policy: ratios differ from 1,
   clipping acts, and TEPO's measured-entropy KL mask can be non-empty. (On the first step the
   policy *is* the behaviour policy, so TEPO's mask is empty by construction.) Each optimizer step
   may be split further into ``micro_batches`` (gradient accumulation); each micro-batch divides by
   the whole step's normaliser, so the gradient is the same either way;
5. **log**: one metrics record; every ``eval_every`` iterations also greedy held-out accuracy per
   level and sampled pass@k (``Trainer.run``, the outer loop, which also checkpoints).

Old log-probs and entropies are the ones recorded at sampling time, under the temperature the loss
also uses; no extra forward pass recomputes them. A frozen reference model exists only when the
objective's ``beta`` > 0. Metrics go to ``OUT/metrics.jsonl`` (names: ``runs.rl_record``).
Checkpoints are atomic, hold every RNG state, and resuming reproduces an uninterrupted run exactly on
CPU. Ctrl-C finishes the current iteration, writes a checkpoint and exits.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import random
import signal
import threading
import time
from pathlib import Path

import torch
from tqdm import tqdm

from minitepo import advantages as adv_lib
from minitepo.checkpoint import restore_run, save_run
from minitepo.device import autocast, make_generator, pick_device, resolve_precision
from minitepo.evaluate import greedy_accuracy, pass_at_k
from minitepo.guards import bad_weight, check_resume, prepare_run_folder
from minitepo.losses import OBJECTIVES, predicted_entropy_drop_score, step_normalizer
from minitepo.model import GPT, load_model
from minitepo.optim import lr_at, make_optimizer, set_lr
from minitepo.rl_config import LOSS_PARAMS, SHAPING_PARAMS, TEPO_MASK_TOL, RLConfig  # noqa: F401  (re-exported)
from minitepo.rollout import collect_rollout
from minitepo.runs import MetricsLog, combine_micro_batches, combine_steps, rl_record, write_json
from minitepo.sampling import Rollout, concat_rollouts, score_rollout
from minitepo.tokenizer import Tokenizer
from toy_tasks import resolve_task


class TrainingError(RuntimeError):
    """Training cannot continue (e.g. a non-finite loss); the last good checkpoint is kept."""


class Trainer:
    """The state of one RL run: policy, optimizer, RNGs and counters. ``iterate`` is one iteration of
    the algorithm; ``run`` is the outer loop (evaluation, logging, checkpoints)."""

    def __init__(self, config: RLConfig, model: GPT | None = None, tokenizer: Tokenizer | None = None):
        self.config = c = config
        self.device = pick_device(c.device)
        self.out = Path(c.out)
        if model is None:  # the warm start first: a missing or foreign checkpoint fails here, before any work
            model, tokenizer, init = load_model(c.init, self.device)
            trained_name, trained_levels = init.get("task"), init.get("levels")
        else:  # an in-memory model (a notebook); its task must then be named in the config
            tokenizer, trained_name, trained_levels = tokenizer or Tokenizer(), None, None
        self.model, self.tokenizer = model.to(self.device), tokenizer
        self.task = resolve_task(c.task, c.levels, trained_name=trained_name, trained_levels=trained_levels)
        self.max_len = c.max_new_tokens or self.task.max_new_tokens
        self.precision = resolve_precision(self.device, c.precision)      # "fp32" or "bf16"
        self.recompute_old = c.old_logp == "recompute" or (c.old_logp == "auto" and self.precision == "bf16")
        self.objective = OBJECTIVES[c.algo]
        self.loss_kwargs = c.loss_kwargs()
        self.agg = c.loss_default("agg")
        self.predicted_mask = c.algo == "tepo" and c.loss_default("mask_criterion") == "predicted"
        self.ref_model = None
        if (c.loss_default("beta") or 0.0) > 0:  # a frozen copy of the starting policy, only when it is used
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
        self.stop_requested = False

    # -- one iteration: sample -> reward -> advantages -> optimizer steps -> record ---------------------------

    def iterate(self) -> dict:
        """One RL iteration, top to bottom; returns its metrics record (names in ``runs.rl_record``)."""
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
                         opt_steps=self.opt_step)

    def sample_rollout(self) -> tuple[Rollout, list[Rollout]]:
        """A rollout of ``prompts`` groups to train on, and every rollout sampled for it (for the metrics).
        With dynamic sampling, only groups whose answers differ are kept, and more rounds are sampled
        until ``prompts`` groups are kept or ``max_resample_rounds`` extra rounds are spent."""
        c, G = self.config, self.config.group_size
        cache = (c.overlong_cache or max(1, self.max_len // 4)) if c.uses_overlong_shaping else None
        sampled, kept, kept_groups = [], [], 0
        while True:
            examples = [self.task.sample(self.prompt_rng) for _ in range(c.prompts)]
            rollout = collect_rollout(self.model, self.tokenizer, self.task, examples, group_size=G,
                                      temperature=c.temperature, max_new_tokens=self.max_len,
                                      generator=self.generators["sample"], overlong_cache=cache,
                                      precision=self.precision)
            sampled.append(rollout)
            if not c.uses_dynamic_sampling:
                return rollout, sampled
            # DAPO filters on accuracy: a group whose answers are all right or all wrong has no signal
            informative = adv_lib.informative_groups(rollout.correct.float(), rollout.group_ids)  # (B,) bool
            rows = informative.nonzero().squeeze(-1)[: (c.prompts - kept_groups) * G]
            if rows.numel():
                kept.append(rollout.select(rows))
                kept_groups += rows.numel() // G
            if kept_groups >= c.prompts or len(sampled) > c.max_resample_rounds:
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
                normalizer=normalizer, max_len=self.max_len, **self.loss_kwargs, **extra)
            self.check_finite(loss, f"the {c.algo} loss")
            loss.backward()
            micro_stats.append(({"loss": loss.item(), **{k: float(v) for k, v in stats.items()}},
                                int(micro.mask.sum()), int((micro.lengths > 0).sum())))
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), c.grad_clip or float("inf"))
        self.check_finite(grad_norm, "the gradient norm")
        self.optimizer.step()
        if bad := bad_weight(self.model.named_parameters()):  # caught where it happens, before any checkpoint
            raise TrainingError(f"iteration {self.iteration + 1}, optimizer step {self.opt_step + 1}: after the "
                                f"update, {bad}; the checkpoint in {str(self.out)!r} is the last good one")
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

    # -- the outer loop: evaluation, logging, checkpoints ------------------------------------------------------

    def run(self) -> dict:
        c = self.config
        prepare_run_folder(self.out, resume=c.resume, overwrite=c.overwrite)  # never overwrites a run by accident
        if c.resume:
            self.restore()
        write_json(self.out / "config.json", {"kind": "rl", **dataclasses.asdict(c)})
        log = MetricsLog(self.out, resume=c.resume, keep_until_step=self.iteration)
        start_acc = None
        if self.iteration == 0 and not c.resume:  # (resumed from the step-0 checkpoint: step 0 is logged already)
            first = {"step": 0, **self.evaluate(), "time/train_s": 0.0, "charts/opt_steps": 0}
            log.log(first)
            self.save()
            start_acc = first["eval/greedy_acc/all"]
        last_eval: dict = {}
        recent = collections.deque(maxlen=c.reward_window)  # sampled rewards, for stop_at_reward
        bar = tqdm(total=c.iterations, initial=self.iteration, desc=c.algo, disable=not c.progress, dynamic_ncols=True)
        with first_ctrl_c_stops(self):
            while self.iteration < c.iterations and not self.stop_requested:
                record = self.iterate()
                self.iteration += 1
                recent.append(record["charts/reward_mean"])
                rewarded = (c.stop_at_reward is not None and len(recent) == c.reward_window
                            and sum(recent) / len(recent) >= c.stop_at_reward)
                done = self.iteration == c.iterations or rewarded
                if self.iteration % c.eval_every == 0 or done:
                    last_eval = self.evaluate()
                    record.update(last_eval)
                log.log({"step": self.iteration, **record})
                bar.update(1)
                bar.set_postfix(reward=f"{record['charts/reward_mean']:.2f}",
                                acc=f"{last_eval.get('eval/greedy_acc/all', float('nan')):.2f}")
                if not c.progress and "eval/greedy_acc/all" in record:
                    print(f"{c.algo} iteration {self.iteration:4d}  reward {record['charts/reward_mean']:.3f}  "
                          f"held-out acc {record['eval/greedy_acc/all']:.3f}  ({self.t_train:.0f}s)", flush=True)
                reached = (c.stop_at_accuracy is not None and "eval/greedy_acc/all" in record
                           and record["eval/greedy_acc/all"] >= c.stop_at_accuracy)
                if self.iteration % c.save_every == 0 or done or self.stop_requested or reached:
                    self.save()
                if reached or rewarded:
                    break
        bar.close()
        return {"iterations": self.iteration, "seconds": self.t_train, "start_accuracy": start_acc,
                "final": last_eval, "interrupted": self.stop_requested, "checkpoint": str(self.out / "checkpoint.pt")}

    def evaluate(self) -> dict:
        accuracy = greedy_accuracy(self.model, self.tokenizer, self.task, precision=self.precision)
        record = {f"eval/greedy_acc/{k}": v for k, v in accuracy.items()}
        if self.config.pass_k:
            record[f"eval/pass@{self.config.pass_k}"] = pass_at_k(
                self.model, self.tokenizer, self.task, k=self.config.pass_k, temperature=self.config.temperature,
                generator=self.generators["eval"], precision=self.precision)
        return record

    def save(self) -> None:
        save_run(self.out / "checkpoint.pt", kind="rl", step=self.iteration, model=self.model,
                 optimizer=self.optimizer, alphabet=self.tokenizer.alphabet, task=self.task, config=self.config,
                 generators=self.generators, python_rngs={"prompt_rng": self.prompt_rng},
                 opt_step=self.opt_step, t_train=self.t_train)

    def restore(self) -> None:
        path = self.out / "checkpoint.pt"
        data = restore_run(path, kind="rl", model=self.model, optimizer=self.optimizer,
                           alphabet=self.tokenizer.alphabet, generators=self.generators,
                           python_rngs={"prompt_rng": self.prompt_rng})
        check_resume(path, data["config"], self.config, resolved={  # the same run, only longer
            "task": (data.get("task"), self.task.name), "levels": (data.get("levels"), self.task.levels)})
        self.iteration, self.opt_step, self.t_train = int(data["step"]), int(data["opt_step"]), float(data["t_train"])


def splits(rows: torch.Tensor, k: int) -> list[torch.Tensor]:
    """``rows`` in ``k`` near-equal consecutive parts, leaving out the empty ones (dynamic sampling can keep fewer
    rows than there are mini-batches). Mini-batches, micro-batches and the bf16 recompute all split this way."""
    return [part for part in rows.tensor_split(k) if part.numel()]


def compute_advantages(c: RLConfig, rollout: Rollout) -> torch.Tensor:
    """Group-relative advantages of the rollout's rewards: z-scores (mean-only for Dr. GRPO), or GTPO's /
    GRPO-S's entropy-shaped ones. (B,), or (B, T) for GTPO."""
    if shaped := adv_lib.SHAPED_ADVANTAGES.get(c.algo):
        return shaped(rollout.rewards, rollout.entropy, rollout.mask, rollout.group_ids, correct=rollout.correct,
                      **c.shaping_kwargs())
    scale = "none" if c.algo == "dr_grpo" else "std"
    return adv_lib.group_advantages(rollout.rewards, rollout.group_ids, scale=scale)


class first_ctrl_c_stops:
    """While active, the first Ctrl-C asks the trainer to stop after the current iteration (and checkpoint);
    a second one aborts at once. Only in the main thread, where Python delivers signals."""

    def __init__(self, trainer: Trainer):
        self.trainer, self.previous = trainer, None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self.handle)
        return self

    def handle(self, signum, frame):
        if self.trainer.stop_requested:
            raise KeyboardInterrupt
        self.trainer.stop_requested = True
        print("\nCtrl-C: finishing this iteration, then writing a checkpoint (press again to abort)", flush=True)

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False


def train_rl(config: RLConfig, model: GPT | None = None, tokenizer: Tokenizer | None = None) -> dict:
    """Run RL as ``config`` says, from its ``init`` checkpoint or from an in-memory ``model`` (then name the task
    in the config). The model is trained in place. Returns a summary with start and final held-out accuracy."""
    return Trainer(config, model, tokenizer).run()
