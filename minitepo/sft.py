"""Supervised warm start: teach the model the task's reference answers.

RL needs a policy that already produces well-formed answers sometimes: a reward of 0 on every
sample gives every group zero advantage and therefore no gradient. Supervised training on the
reference answers (cross-entropy on the answer tokens and the EOS, never on the prompt) gets
there quickly. ``countdown`` has many correct answers; its task trains on self-consistent
expressions whose target was computed from the expression itself.

One step: a batch of ``BOS prompt answer EOS`` rows (``make_batch``) -> cross-entropy on the answer
-> a clipped gradient -> AdamW (``sft_step``). ``steps`` runs them one after the other under a warmup and cosine
schedule, and ``train_supervised`` is the loop around it: greedy held-out accuracy every ``eval_every``; it returns the history
and needs no run folder::

    history = train_supervised(model, tokenizer, make_task("add", levels=(1,)), SupervisedConfig(steps=200), eval_every=100)

The lab's run (``minitepo.lab.sft_run.train_sft``) is another loop around ``steps``: it adds run folders,
checkpoints, resume, a progress bar and the weak warm start's stopping rule; without that rule it trains exactly as
``train_supervised`` does (a test checks it).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from minitepo.device import PRECISIONS, autocast, resolve_precision
from minitepo.evaluate import greedy_accuracy
from minitepo.model import GPT
from minitepo.optim import TrainingError, bad_weight, lr_at, make_optimizer, set_lr
from minitepo.tokenizer import Tokenizer

IGNORE = -100  # cross_entropy's ignore_index: positions that carry no loss


@dataclass(frozen=True)
class SupervisedConfig:
    """What supervised training needs, each knob with its default and the reason for it (``minitepo sft``'s flags
    take their defaults from here)."""

    steps: int = 1500           # optimizer steps; the cosine schedule decays over exactly these
    batch_size: int = 64        # examples per step
    lr: float = 2e-3            # takes 3-digit add to >= 90% held-out within 1,500 steps (research/warm-start/)
    warmup: int = 50            # steps of linear warmup: Adam's first steps are large before its moments settle
    min_lr_frac: float = 0.1    # the cosine decays to this x lr
    weight_decay: float = 0.1   # AdamW's, on weight matrices
    grad_clip: float = 1.0      # global gradient-norm clip (0: none)
    seed: int = 1               # data order (seeds differ a lot on add: research/warm-start/)
    precision: str = "auto"     # "fp32", "bf16" or "auto" (bf16 on CUDA)

    def __post_init__(self):
        """Every value checked once, with an error that says what is allowed."""
        for name, low in (("steps", 1), ("batch_size", 1), ("warmup", 0), ("seed", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"SupervisedConfig.{name} must be an integer >= {low}, got {value!r}")
        for name, ok, allowed in (("lr", lambda v: v > 0, "> 0"), ("min_lr_frac", lambda v: 0 <= v <= 1, "in [0, 1]"),
                                  ("weight_decay", lambda v: v >= 0, ">= 0"), ("grad_clip", lambda v: v >= 0, ">= 0")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and ok(value)):
                raise ValueError(f"SupervisedConfig.{name} must be a finite number {allowed}, got {value!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"SupervisedConfig.precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")


def train_supervised(model: GPT, tokenizer: Tokenizer, task, config: SupervisedConfig, *,
                     eval_every: int) -> list[dict]:
    """Supervised training of ``model`` in place on ``task``'s reference answers, on the model's device; greedy
    held-out accuracy every ``eval_every`` steps and after the last. Returns one record per step."""
    c = config
    device = next(model.parameters()).device
    precision = resolve_precision(device, c.precision)
    optimizer = make_optimizer(model, c.lr, c.weight_decay)
    rng = random.Random(c.seed)  # the data order
    history = []
    for record, _ in steps(model, tokenizer, task, c, optimizer=optimizer, rng=rng, precision=precision):
        if record["step"] % eval_every == 0 or record["step"] == c.steps:
            accuracy = greedy_accuracy(model, tokenizer, task, precision=precision)
            record.update({f"eval/greedy_acc/{k}": v for k, v in accuracy.items()})
        history.append(record)
    return history


def steps(model: GPT, tokenizer: Tokenizer, task, config, *, optimizer, rng: random.Random, precision: str,
          start: int = 0, schedule=None):
    """The supervised steps ``start``, ..., ``config.steps - 1``, one at a time: the learning rate, a batch of
    ``config.batch_size`` examples drawn from ``rng``, one ``sft_step`` (``config.grad_clip``). After each step it
    yields ``(record, x)``: the step's metrics record and its inputs (B, L). The caller evaluates, logs or stops
    (``break``) between steps; ``train`` above and the lab's run (``minitepo.lab.sft_run``) are such callers.

    ``schedule(step)`` gives the learning rate of a step, or None to stop before it (the lab's weak warm start
    decays it to 0 and stops); by default the warmup and cosine of ``config`` (``lr``, ``warmup``, ``min_lr_frac``)."""
    device = next(model.parameters()).device
    model.train()
    for step in range(start, config.steps):
        lr = (lr_at(step, lr=config.lr, warmup=config.warmup, total=config.steps, min_lr_frac=config.min_lr_frac)
              if schedule is None else schedule(step))
        if lr is None:
            return
        x, y = make_batch([task.sample(rng) for _ in range(config.batch_size)], tokenizer, device)   # (B, L) each
        loss, grad_norm = sft_step(model, optimizer, x, y, lr=lr, grad_clip=config.grad_clip, device=device,
                                   precision=precision)
        yield {"step": step + 1, "losses/sft": loss.item(), "charts/lr": lr, "charts/grad_norm": grad_norm.item()}, x


def make_batch(examples, tokenizer: Tokenizer, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets (B, L) for next-token prediction on ``BOS prompt answer EOS`` rows.

    Targets are IGNORE on the prompt and on padding, so only the answer and its EOS are learned.
    Rows are right-padded: with causal attention, padding after a row's end changes nothing before it.
    """
    rows, targets = [], []
    for ex in examples:
        prompt = [tokenizer.bos_id] + tokenizer.encode(ex.prompt)
        answer = tokenizer.encode(ex.answer) + [tokenizer.eos_id]
        seq = prompt + answer
        rows.append(seq[:-1])
        targets.append([IGNORE] * (len(prompt) - 1) + answer)
    width = max(len(r) for r in rows)
    x = torch.full((len(rows), width), tokenizer.pad_id, dtype=torch.long)
    y = torch.full((len(rows), width), IGNORE, dtype=torch.long)
    for i, (r, t) in enumerate(zip(rows, targets)):
        x[i, :len(r)] = torch.tensor(r)
        y[i, :len(t)] = torch.tensor(t)
    return x.to(device), y.to(device)


def sft_step(model: GPT, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, *, lr: float,
             grad_clip: float, device, precision: str) -> tuple[torch.Tensor, torch.Tensor]:
    """One supervised optimizer step on inputs ``x`` and targets ``y`` (B, L); returns (loss, gradient norm).

        L = -(1/n) sum over answer positions of log pi_theta(y_t | x_<=t)          (IGNORE positions excluded)

    Raises ``TrainingError`` on a non-finite loss (before the update) or weight (after it)."""
    set_lr(optimizer, lr)
    with autocast(device, precision):
        logits = model(x)  # (B, L, V)
    loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), ignore_index=IGNORE)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip or float("inf"))
    if not torch.isfinite(loss):
        raise TrainingError(f"loss is {loss.item()}")
    optimizer.step()
    if bad := bad_weight(model.named_parameters()):  # stop where it happens, before the weights are saved
        raise TrainingError(f"after the update, {bad}")
    return loss, grad_norm
