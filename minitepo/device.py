"""Choosing a device and the numeric setup that goes with it.

On CUDA the model runs under bf16 autocast with TF32 matmuls; the objectives always compute
ratios and KL terms in float32 (see losses). On CPU and MPS everything stays float32.
"""

from __future__ import annotations

import contextlib

import torch

DEVICES = ("auto", "cpu", "cuda", "mps")


def pick_device(name: str = "auto") -> torch.device:
    """``auto`` prefers CUDA, then MPS, then CPU; an explicit device must exist."""
    if name not in DEVICES:
        raise ValueError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)}")
    mps_ok = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "mps" if mps_ok else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda was asked for, but torch sees no CUDA GPU (install a CUDA build of torch, or use --device cpu)")
    if name == "mps" and not mps_ok:
        raise ValueError("--device mps was asked for, but MPS is not available on this machine")
    if name == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return torch.device(name)


def autocast(device: torch.device):
    """bf16 autocast on CUDA; a no-op context elsewhere."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def make_generator(device: torch.device, seed: int) -> torch.Generator:
    """A seeded generator on ``device`` (torch.multinomial needs one on the same device)."""
    return torch.Generator(device=device).manual_seed(seed)


def set_cpu_threads(n: int) -> None:
    """Use ``n`` CPU threads for torch's intra-op parallelism.

    minitepo's command line defaults to 1: these models are so small that a second thread buys
    little on an idle machine and costs a great deal on a busy one (threads that spin-wait for a
    core another process holds), and with a fixed thread count seeded runs give the same numbers
    on machines with different core counts.
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"--threads must be a positive integer, got {n!r}")
    torch.set_num_threads(n)
