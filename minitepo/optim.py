"""AdamW with linear warmup and cosine decay — the one optimiser every trainer here uses."""

from __future__ import annotations

import math

import torch


def make_optimizer(model: torch.nn.Module, lr: float, weight_decay: float, betas=(0.9, 0.95)) -> torch.optim.AdamW:
    """AdamW that decays matrices only: biases, LayerNorm gains and such 1-D tensors are not shrunk."""
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # fused: one kernel updates every parameter, instead of a Python loop of small ops per tensor
    # (3x faster for this model on a CPU). Available on CPU and CUDA.
    device = next(model.parameters()).device.type
    return torch.optim.AdamW(groups, lr=lr, betas=betas, fused=device in ("cpu", "cuda"))


def lr_at(step: int, *, lr: float, warmup: int, total: int, min_lr_frac: float = 0.1) -> float:
    """Learning rate at optimizer step ``step`` (0-based).

    Linear warmup from lr/warmup to lr over ``warmup`` steps, then a half cosine from lr down to
    ``min_lr_frac * lr`` at ``total`` steps (and flat after).
    """
    if step < warmup:
        return lr * (step + 1) / warmup
    if total <= warmup:
        return lr
    progress = min(1.0, (step - warmup) / (total - warmup))
    floor = lr * min_lr_frac
    return floor + 0.5 * (lr - floor) * (1.0 + math.cos(math.pi * progress))


def set_lr(optimizer: torch.optim.Optimizer, value: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = value
