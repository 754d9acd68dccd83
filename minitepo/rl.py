"""The RL trainer: one readable loop for every objective in ``minitepo.losses``.

One *iteration*:

1. sample ``prompts`` prompts x ``group_size`` responses with the current policy (the sampler
   records each token's log-prob and entropy: these are ``old_logp`` and ``old_entropy``);
2. score every response with the task's verifier (optionally DAPO's overlong shaping, and
   DAPO's dynamic sampling: groups whose rewards are all equal are dropped and more prompts are
   sampled, up to ``max_resample_rounds`` extra rounds);
3. advantages (group-relative; mean-only for Dr. GRPO; entropy-shaped for GTPO / GRPO-S);
4. ``epochs`` passes over the rollout, each split into ``minibatches`` optimizer steps. From the
   second step on the policy has moved away from the behaviour policy: ratios differ from 1,
   clipping acts, and TEPO's measured-entropy KL mask can be non-empty. (On the first step the
   policy *is* the behaviour policy, so TEPO's mask is empty by construction.)
   Each optimizer step may be split further into ``micro_batches`` (gradient accumulation); each
   micro-batch divides by the whole step's normaliser, so the gradient is the same either way;
5. every ``eval_every`` iterations: greedy held-out accuracy per level and sampled pass@k.

Old log-probs and entropies are the ones recorded at sampling time, under the temperature the
loss also uses (``temperature``); no extra forward pass recomputes them. A frozen reference model
exists only when the objective's ``beta`` > 0.

Metrics go to ``OUT/metrics.jsonl`` with grouped names (``charts/``, ``losses/``, ``eval/``, ``tepo/``,
``time/``). Checkpoints are atomic, hold every RNG state, and resuming reproduces an uninterrupted
run exactly on CPU. Ctrl-C finishes the current iteration, writes a checkpoint and exits.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from minitepo import advantages as adv_lib
from minitepo.checkpoint import (CheckpointError, checkpoint_task, load_checkpoint, load_model, python_rng_state,
                                 rng_state, save_checkpoint, set_rng_state)
from minitepo.device import autocast, make_generator, pick_device
from minitepo.evaluate import completions, encode_prompts, greedy_accuracy, pass_at_k
from minitepo.losses import AGG_MODES, OBJECTIVES, predicted_entropy_drop_score, step_normalizer
from minitepo.optim import lr_at, make_optimizer, set_lr
from minitepo.runs import MetricsLog, write_json
from minitepo.sampling import Rollout, SamplerConfig, concat_rollouts, sample, score_rollout

# Objective hyper-parameters that can be overridden from the command line. None means "the
# objective's own default" (the spec's), read from the objective function's signature.
LOSS_PARAMS = ("eps_low", "eps_high", "beta", "kl_kind", "agg", "dual_clip",
               "beta_mask", "mask_criterion", "mask_kl", "mask_tol")
SHAPING_PARAMS = ("alpha1", "alpha2", "adv_norm")  # GTPO / GRPO-S advantage shaping

# The sampler records old entropies with a KV cache, one token at a time; the loss recomputes
# entropies in one teacher-forced pass. Same weights, different summation order: they differ by
# ~1e-6 nats in float32. Without a guard, TEPO's "entropy decreased" test would flag about half
# the positive-advantage tokens on the first update from round-off alone.
TEPO_MASK_TOL = 1e-4


class TrainingError(RuntimeError):
    """Training cannot continue (e.g. a non-finite loss); the last good checkpoint is kept."""


@dataclass
class RLConfig:
    """Reinforcement learning from a warm-start checkpoint with one of the objectives."""

    init: str = "runs/sft/checkpoint.pt"
    """Warm-start checkpoint (from ``minitepo sft``); also the frozen reference model when beta > 0."""
    algo: str = "tepo"
    """Objective: grpo, dapo, dr_grpo, gspo, gspo_token, tepo, gtpo or grpo_s."""
    task: str | None = None
    """Toy task; default: the one the warm start was trained on."""
    levels: str | None = None
    """Difficulty levels, comma-separated; default: the warm start's."""
    iterations: int = 200
    """Rollouts to collect; each is followed by epochs x minibatches optimizer steps."""
    prompts: int = 32
    """Prompts per rollout (P)."""
    group_size: int = 8
    """Responses sampled per prompt (G); advantages are relative within such a group."""
    minibatches: int = 4
    """Optimizer steps per pass over a rollout (K). K > 1 reuses the rollout, so the policy moves away from
    the behaviour policy: ratios differ from 1, clipping acts and TEPO's mask can act."""
    epochs: int = 1
    """Passes over each rollout."""
    micro_batches: int = 1
    """Gradient-accumulation micro-batches per optimizer step (same gradient, less memory)."""
    lr: float = 1e-4
    """Peak learning rate. RL from a weak warm start is fragile: 3e-4 and up collapsed it in our runs."""
    warmup: int = 10
    """Linear warmup, in optimizer steps."""
    min_lr_frac: float = 1.0
    """Cosine decay to this fraction of lr over the run (1.0: constant after warmup)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Clip the global gradient norm to this (0 disables)."""
    temperature: float = 1.0
    """Sampling temperature; the loss uses the same one, so old and new log-probs are comparable."""
    max_new_tokens: int | None = None
    """Response-length limit L_max; default: the task's."""
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
    beta_mask: float | None = None
    """TEPO: coefficient of the masked KL term (default 1.0)."""
    mask_criterion: str | None = None
    """TEPO: how "entropy decreased" is decided: measured or predicted (default: measured)."""
    mask_kl: str | None = None
    """TEPO: estimator of the masked KL to the old policy: k3, k1_abs or k2 (default: k3)."""
    mask_tol: float | None = None
    """TEPO measured criterion: entropy must drop by more than this many nats (default 1e-4 for tepo: old entropies
    come from the KV-cached sampler, which rounds differently from the loss's teacher-forced pass, ~1e-6 in fp32)."""
    alpha1: float | None = None
    """GTPO/GRPO-S: weight of the outcome reward (default 1.0)."""
    alpha2: float | None = None
    """GTPO/GRPO-S: weight of the entropy bonus (default 0.1)."""
    adv_norm: str | None = None
    """GTPO/GRPO-S: z-score over the whole group (union) or within correct/wrong separately (split)."""
    dynamic_sampling: bool | None = None
    """DAPO dynamic sampling: drop groups with all-equal rewards and sample more (default: on for dapo only)."""
    max_resample_rounds: int = 3
    """Dynamic sampling: at most this many extra sampling rounds per iteration."""
    overlong_shaping: bool | None = None
    """DAPO overlong reward shaping (default: on for dapo only)."""
    overlong_cache: int | None = None
    """Overlong shaping: length of the soft-penalty zone L_c (default: L_max // 4, at least 1)."""
    eval_every: int = 10
    """Held-out evaluation every this many iterations (and before the first and after the last)."""
    pass_k: int = 4
    """Also report sampled pass@k on the held-out set at each evaluation (0 disables)."""
    stop_at_accuracy: float | None = None
    """Stop at the first evaluation whose greedy held-out accuracy reaches this."""
    save_every: int = 25
    """Write a checkpoint every this many iterations (and at the end, and on Ctrl-C)."""
    seed: int = 0
    """Seed for prompts, sampling and mini-batch order."""
    device: str = "auto"
    """auto, cpu, cuda or mps."""
    out: str = "runs/rl"
    """Run folder: config.json, metrics.jsonl, checkpoint.pt."""
    resume: bool = False
    """Continue the run in ``out`` from its checkpoint."""
    progress: bool = True
    """Show a progress bar with live reward and accuracy."""

    def __post_init__(self):
        if self.algo not in OBJECTIVES:
            raise ValueError(f"unknown objective {self.algo!r}; choose one of {', '.join(OBJECTIVES)}")
        positive = ("iterations", "prompts", "group_size", "minibatches", "epochs", "micro_batches", "eval_every",
                    "save_every")
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be a positive integer, got {value!r}")
        batch = self.prompts * self.group_size
        if self.minibatches > batch:
            raise ValueError(f"--minibatches {self.minibatches} is larger than the rollout ({self.prompts} prompts x "
                             f"{self.group_size} responses = {batch} rows); each mini-batch needs at least one row")
        if self.micro_batches * self.minibatches > batch:
            raise ValueError(f"--micro-batches {self.micro_batches} x --minibatches {self.minibatches} exceeds the "
                             f"{batch} rows of a rollout")
        if not self.lr > 0 or self.warmup < 0 or not 0 <= self.min_lr_frac <= 1:
            raise ValueError("need lr > 0, warmup >= 0 and 0 <= min_lr_frac <= 1")
        if not self.temperature > 0:
            raise ValueError(f"--temperature must be > 0 for RL (sampling must be stochastic), got {self.temperature}")
        if self.agg is not None and self.agg not in AGG_MODES:
            raise ValueError(f"unknown aggregation {self.agg!r}; choose one of {', '.join(AGG_MODES)}")
        if self.pass_k < 0 or self.max_resample_rounds < 0:
            raise ValueError("--pass-k and --max-resample-rounds must be >= 0")
        objective = OBJECTIVES[self.algo]
        accepted = set(inspect.signature(objective).parameters)
        for name in LOSS_PARAMS:
            if getattr(self, name) is not None and name not in accepted:
                raise ValueError(f"--{name.replace('_', '-')} does not apply to {self.algo}; "
                                 f"it applies to: {', '.join(a for a in OBJECTIVES if name in inspect.signature(OBJECTIVES[a]).parameters)}")
        for name in SHAPING_PARAMS:
            if getattr(self, name) is not None and self.algo not in ("gtpo", "grpo_s"):
                raise ValueError(f"--{name.replace('_', '-')} shapes GTPO / GRPO-S advantages; it does not apply to {self.algo}")

    def loss_kwargs(self) -> dict:
        """Hyper-parameters passed to the objective: those set explicitly (the rest keep the spec's defaults),
        plus TEPO's round-off guard on the measured entropy criterion."""
        kwargs = {name: getattr(self, name) for name in LOSS_PARAMS if getattr(self, name) is not None}
        if self.algo == "tepo" and self.mask_tol is None:
            kwargs["mask_tol"] = TEPO_MASK_TOL
        return kwargs

    def loss_default(self, name: str):
        """The value the objective will use for ``name``: an explicit override, else its own default."""
        if getattr(self, name, None) is not None:
            return getattr(self, name)
        param = inspect.signature(OBJECTIVES[self.algo]).parameters.get(name)
        return None if param is None else param.default

    @property
    def uses_dynamic_sampling(self) -> bool:
        return self.algo == "dapo" if self.dynamic_sampling is None else self.dynamic_sampling

    @property
    def uses_overlong_shaping(self) -> bool:
        return self.algo == "dapo" if self.overlong_shaping is None else self.overlong_shaping


class Trainer:
    """Holds the state of one RL run; ``run()`` is the loop described in the module docstring."""

    def __init__(self, config: RLConfig):
        self.config = c = config
        self.device = pick_device(c.device)
        self.out = Path(c.out)
        # the warm start first: a missing or foreign checkpoint fails here, before any work
        self.model, self.tokenizer, init = load_model(c.init, self.device)
        self.task = checkpoint_task(init, c.task, c.levels)
        self.max_len = c.max_new_tokens or self.task.max_new_tokens
        self.objective = OBJECTIVES[c.algo]
        self.loss_kwargs = c.loss_kwargs()
        self.agg = c.loss_default("agg")
        self.predicted_mask = c.algo == "tepo" and c.loss_default("mask_criterion") == "predicted"
        beta = c.loss_default("beta") or 0.0

        self.ref_model = None
        if beta > 0:  # a frozen copy of the starting policy, only when the objective uses it
            self.ref_model = copy.deepcopy(self.model).eval().requires_grad_(False)
        self.optimizer = make_optimizer(self.model, c.lr, c.weight_decay)
        self.prompt_rng = random.Random(c.seed)
        self.sample_gen = make_generator(self.device, c.seed)
        self.shuffle_gen = torch.Generator().manual_seed(c.seed + 1)
        self.eval_gen = make_generator(self.device, c.seed + 2)
        self.iteration = 0
        self.opt_step = 0
        self.t_train = 0.0  # seconds spent in iterations (excluding evaluation), carried across resumes
        self.total_opt_steps = c.iterations * c.epochs * c.minibatches
        self.stop_requested = False
        self.ref_forward_s = 0.0

    # -- checkpoints ---------------------------------------------------------------------------------

    def generators(self) -> dict:
        return {"sample": self.sample_gen, "shuffle": self.shuffle_gen, "eval": self.eval_gen}

    def save(self) -> None:
        save_checkpoint(self.out / "checkpoint.pt", {
            "kind": "rl", "step": self.iteration, "opt_step": self.opt_step, "t_train": self.t_train,
            "model_config": self.model.config.to_dict(), "alphabet": self.tokenizer.alphabet,
            "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "rng": rng_state(self.generators()), "prompt_rng": self.prompt_rng.getstate(),
            "config": dataclasses.asdict(self.config), "task": self.task.name, "levels": list(self.task.levels)})

    def restore(self) -> None:
        path = self.out / "checkpoint.pt"
        data = load_checkpoint(path, alphabet=self.tokenizer.alphabet)
        if data.get("kind") != "rl":
            raise CheckpointError(f"{str(path)!r} is not an RL checkpoint; cannot resume from it")
        saved = data["config"]
        for key in ("algo", "prompts", "group_size", "minibatches", "epochs", "seed", "init"):
            if saved.get(key) != getattr(self.config, key):
                raise ValueError(f"cannot resume {str(path)!r}: it was run with {key}={saved.get(key)!r}, "
                                 f"now {key}={getattr(self.config, key)!r}")
        self.model.load_state_dict(data["model"])
        self.optimizer.load_state_dict(data["optimizer"])
        set_rng_state(data["rng"], self.generators())
        self.prompt_rng.setstate(python_rng_state(data["prompt_rng"]))
        self.iteration, self.opt_step, self.t_train = int(data["step"]), int(data["opt_step"]), float(data["t_train"])

    # -- one iteration ---------------------------------------------------------------------------------

    def collect(self) -> tuple[Rollout, torch.Tensor, torch.Tensor, dict]:
        """Sample and score a rollout (with dynamic sampling if enabled). Returns rollout, rewards,
        correctness and statistics."""
        c, G = self.config, self.config.group_size
        sampler = SamplerConfig(max_new_tokens=self.max_len, temperature=c.temperature)
        parts, rewards, correct = [], [], []
        stats = {"sampled_groups": 0, "rounds": 0, "sampled_tokens": 0, "all_rewards": []}
        kept_groups = 0
        while True:
            examples = [self.task.sample(self.prompt_rng) for _ in range(c.prompts)]
            self.model.eval()
            with autocast(self.device):
                rollout = sample(self.model, encode_prompts(self.tokenizer, [e.prompt for e in examples]),
                                 group_size=G, eos_id=self.tokenizer.eos_id, pad_id=self.tokenizer.pad_id,
                                 config=sampler, generator=self.sample_gen)
            texts = completions(self.tokenizer, rollout)
            verdicts = [self.task.reward(examples[i // G].prompt, t) for i, t in enumerate(texts)]
            r = torch.tensor([v[0] for v in verdicts], dtype=torch.float32, device=self.device)
            ok = torch.tensor([bool(v[1]["correct"]) for v in verdicts], device=self.device)
            stats["rounds"] += 1
            stats["sampled_groups"] += c.prompts
            stats["sampled_tokens"] += int(rollout.mask.sum())
            stats["all_rewards"].append(r)
            if not c.uses_dynamic_sampling:
                return rollout, r, ok, stats
            informative = adv_lib.informative_groups(r, rollout.group_ids)  # (B,) bool, whole groups
            rows = informative.nonzero().squeeze(-1)[: (c.prompts - kept_groups) * G]
            if rows.numel():
                parts.append(rollout.select(rows))
                rewards.append(r[rows])
                correct.append(ok[rows])
                kept_groups += rows.numel() // G
            if kept_groups >= c.prompts or stats["rounds"] > c.max_resample_rounds:
                break
        if not parts:  # every group of every round had equal rewards: nothing to learn from
            return rollout.select(torch.arange(0, device=self.device)), r[:0], ok[:0], stats
        return concat_rollouts(parts, self.tokenizer.pad_id), torch.cat(rewards), torch.cat(correct), stats

    def compute_advantages(self, rollout: Rollout, rewards: torch.Tensor, correct: torch.Tensor) -> torch.Tensor:
        c = self.config
        gids = rollout.group_ids
        if c.algo == "gtpo" or c.algo == "grpo_s":
            shaping = {k: getattr(c, k) for k in SHAPING_PARAMS if getattr(c, k) is not None}
            fn = adv_lib.gtpo_advantages if c.algo == "gtpo" else adv_lib.grpo_s_advantages
            return fn(rewards, rollout.entropy, rollout.mask, gids, correct=correct, **shaping)
        scale = "none" if c.algo == "dr_grpo" else "std"
        return adv_lib.group_advantages(rewards, gids, scale=scale)

    def update(self, rollout: Rollout, advantages: torch.Tensor) -> list[dict]:
        """``epochs`` x ``minibatches`` optimizer steps on one rollout; returns per-step statistics."""
        c = self.config
        self.model.train()
        ref_logp = None
        t0 = time.perf_counter()
        if self.ref_model is not None:  # the only extra forward pass: the frozen reference, when beta > 0
            with torch.no_grad(), autocast(self.device):
                ref_logp, _ = score_rollout(self.ref_model, rollout, c.temperature)
        self.ref_forward_s = time.perf_counter() - t0
        B = rollout.mask.size(0)
        steps = []
        for _ in range(c.epochs):
            order = torch.randperm(B, generator=self.shuffle_gen).to(self.device)
            for rows in order.tensor_split(c.minibatches):
                lr = lr_at(self.opt_step, lr=c.lr, warmup=c.warmup, total=self.total_opt_steps, min_lr_frac=c.min_lr_frac)
                set_lr(self.optimizer, lr)
                self.optimizer.zero_grad(set_to_none=True)
                normalizer = step_normalizer(rollout.mask[rows], self.agg, self.max_len)  # N, B' or C of this step
                step_stats: dict[str, float] = {}
                for micro_rows in rows.tensor_split(c.micro_batches):
                    micro = rollout.select(micro_rows)
                    extra = {}
                    with autocast(self.device):
                        if self.predicted_mask:  # TEPO's "predicted" criterion reads the full distribution
                            logp, entropy, logprobs = score_rollout(self.model, micro, c.temperature, True)
                            extra["entropy_drop_score"] = predicted_entropy_drop_score(logprobs.detach(),
                                                                                       micro.response_ids)
                        else:
                            logp, entropy = score_rollout(self.model, micro, c.temperature)
                    loss, stats = self.objective(
                        logp=logp, old_logp=micro.logp, advantages=advantages[micro_rows], mask=micro.mask,
                        entropy=entropy.detach(), old_entropy=micro.entropy,
                        ref_logp=None if ref_logp is None else ref_logp[micro_rows],
                        normalizer=normalizer, max_len=self.max_len, **self.loss_kwargs, **extra)
                    if not torch.isfinite(loss):
                        raise TrainingError(f"iteration {self.iteration + 1}, optimizer step {self.opt_step + 1}: "
                                            f"the {c.algo} loss is {loss.item()}")
                    loss.backward()
                    weight = micro_rows.numel() / rows.numel()
                    step_stats["loss"] = step_stats.get("loss", 0.0) + loss.item()
                    for k, v in stats.items():  # row-weighted average of the micro-batches' diagnostics
                        step_stats[k] = step_stats.get(k, 0.0) + weight * float(v)
                grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), c.grad_clip or float("inf"))
                if not torch.isfinite(grad_norm):
                    raise TrainingError(f"iteration {self.iteration + 1}, optimizer step {self.opt_step + 1}: "
                                        f"the gradient norm is {grad_norm.item()}")
                self.optimizer.step()
                self.opt_step += 1
                step_stats.update({"grad_norm": grad_norm.item(), "lr": lr})
                steps.append(step_stats)
        return steps

    def evaluate(self) -> dict:
        accuracy = greedy_accuracy(self.model, self.tokenizer, self.task)
        record = {f"eval/greedy_acc/{k}": v for k, v in accuracy.items()}
        if self.config.pass_k:
            record[f"eval/pass@{self.config.pass_k}"] = pass_at_k(
                self.model, self.tokenizer, self.task, k=self.config.pass_k, temperature=self.config.temperature,
                generator=self.eval_gen)
        return record

    def iterate(self) -> dict:
        """One iteration: collect -> advantages -> update. Returns the metrics record."""
        c = self.config
        t0 = time.perf_counter()
        rollout, rewards, correct, collect_stats = self.collect()
        t_sample = time.perf_counter() - t0
        if self.config.uses_overlong_shaping and rewards.numel():
            cache = c.overlong_cache or max(1, self.max_len // 4)
            rewards = rewards + adv_lib.overlong_penalty(rollout.lengths, self.max_len, cache).to(rewards)
        all_r = torch.cat(collect_stats["all_rewards"])
        spread = all_r.view(-1, c.group_size)
        record = {
            "charts/reward_mean": all_r.mean().item(), "charts/reward_std": all_r.std().item() if all_r.numel() > 1 else 0.0,
            "charts/zero_spread_groups": (spread.max(1).values == spread.min(1).values).float().mean().item(),
            "charts/groups_trained": rewards.numel() // c.group_size, "charts/sample_rounds": collect_stats["rounds"],
        }
        t1 = time.perf_counter()
        steps = []
        if rewards.numel():
            record.update({"charts/response_len": rollout.lengths.float().mean().item(),
                           "charts/truncated_frac": (~rollout.finished).float().mean().item(),
                           "charts/entropy": (rollout.entropy.sum() / rollout.mask.sum()).item()})
            advantages = self.compute_advantages(rollout, rewards, correct)
            steps = self.update(rollout, advantages)
        t_update = time.perf_counter() - t1
        record["time/ref_forward_s"] = self.ref_forward_s if steps else 0.0
        for key in sorted({k for s in steps for k in s}):
            values = [s[key] for s in steps if key in s]
            name = {"loss": "losses/loss", "grad_norm": "charts/grad_norm", "lr": "charts/lr"}.get(key, f"losses/{key}")
            if key.startswith("mask_frac"):
                name = f"tepo/{key}"
            record[name] = sum(values) / len(values)
        if steps and "mask_frac" in steps[0]:
            record["tepo/mask_frac_first_step"] = steps[0]["mask_frac"]
            record["tepo/mask_frac_later_steps"] = (sum(s["mask_frac"] for s in steps[1:]) / (len(steps) - 1)
                                                    if len(steps) > 1 else 0.0)
        seconds = time.perf_counter() - t0
        self.t_train += seconds
        record.update({"time/step_s": seconds, "time/sample_s": t_sample, "time/update_s": t_update,
                       "time/sampled_tokens_per_s": collect_stats["sampled_tokens"] / max(t_sample, 1e-9),
                       "time/train_s": self.t_train, "charts/opt_steps": self.opt_step})
        return record

    # -- the loop ----------------------------------------------------------------------------------------

    def run(self) -> dict:
        c = self.config
        if c.resume:
            self.restore()
        write_json(self.out / "config.json", {"kind": "rl", **dataclasses.asdict(c)})
        log = MetricsLog(self.out, resume=c.resume, keep_until_step=self.iteration)
        if self.iteration == 0:
            first = {"step": 0, **self.evaluate(), "time/train_s": 0.0, "charts/opt_steps": 0}
            log.log(first)
            self.save()
        start_acc = None if c.resume else first["eval/greedy_acc/all"]
        last_eval: dict = {}

        def request_stop(signum, frame):  # first Ctrl-C: finish this iteration, checkpoint, stop
            if self.stop_requested:
                raise KeyboardInterrupt
            self.stop_requested = True
            print("\nCtrl-C: finishing this iteration, then writing a checkpoint (press again to abort)", flush=True)

        previous = signal.signal(signal.SIGINT, request_stop) if _main_thread() else None
        bar = tqdm(total=c.iterations, initial=self.iteration, desc=c.algo, disable=not c.progress, dynamic_ncols=True)
        try:
            while self.iteration < c.iterations and not self.stop_requested:
                record = self.iterate()
                self.iteration += 1
                done = self.iteration == c.iterations
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
                if self.iteration % c.save_every == 0 or done or self.stop_requested:
                    self.save()
                if (c.stop_at_accuracy is not None and "eval/greedy_acc/all" in record
                        and record["eval/greedy_acc/all"] >= c.stop_at_accuracy):
                    self.save()
                    break
        finally:
            bar.close()
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        return {"iterations": self.iteration, "seconds": self.t_train, "start_accuracy": start_acc,
                "final": last_eval, "interrupted": self.stop_requested, "checkpoint": str(self.out / "checkpoint.pt")}


def _main_thread() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


def train_rl(config: RLConfig) -> dict:
    """Build a trainer for ``config`` and run it."""
    return Trainer(config).run()
