"""Supervised warm start: teach the model the task's reference answers.

RL needs a policy that already produces well-formed answers sometimes: a reward of 0 on every
sample gives every group zero advantage and therefore no gradient. Supervised training on the
reference answers (cross-entropy on the answer tokens and the EOS, never on the prompt) gets
there quickly. ``countdown`` has many correct answers; its task trains on self-consistent
expressions whose target was computed from the expression itself.

One step: a batch of ``BOS prompt answer EOS`` rows (``make_batch``) -> cross-entropy on the answer
-> a clipped gradient -> AdamW (``sft_step``). The loop around it (schedule, evaluation, checkpoints,
the weak warm start's stopping rule) is the lab's: ``minitepo.lab.sft_run.train_sft``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from minitepo.device import autocast
from minitepo.model import GPT
from minitepo.optim import TrainingError, bad_weight, set_lr
from minitepo.tokenizer import Tokenizer

IGNORE = -100  # cross_entropy's ignore_index: positions that carry no loss


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
