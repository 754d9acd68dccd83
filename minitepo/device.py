"""Choosing a device and the numeric setup that goes with it.

Precision: ``fp32`` runs everything in float32; ``bf16`` runs the model's matmuls under bfloat16
autocast (on CUDA, and on the CPU too, so that the mixed-precision path can be tested on any
machine). ``auto`` is bf16 on CUDA and fp32 elsewhere. On CUDA, float32 matmuls may use TF32. The
objectives always compute ratios and KL terms in float32 (see losses), whatever the precision.

Under bf16 the KV-cached sampler and a teacher-forced pass round differently (log-prob gaps of
~1e-2 nats instead of ~1e-6), so the sampler's numbers cannot serve as the old policy's: the RL
trainer then recomputes old log-probs and entropies with a teacher-forced pass (``RLConfig.old_logp``).
"""

from __future__ import annotations

import contextlib
import os

import torch

DEVICES = ("auto", "cpu", "cuda", "mps")
PRECISIONS = ("auto", "fp32", "bf16")


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


def resolve_precision(device: torch.device, precision: str = "auto") -> str:
    """``fp32`` or ``bf16``: what ``precision`` means on ``device`` (auto: bf16 on CUDA, fp32 elsewhere)."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    if precision == "auto":
        return "bf16" if torch.device(device).type == "cuda" else "fp32"
    return precision


def uses_bf16(device: torch.device, precision: str = "auto") -> bool:
    """Whether ``precision`` means bf16 autocast on ``device``; a clear error where this project does not support it.
    The trainer asks once and passes the answer to ``torch.autocast(..., enabled=...)`` on its hot path."""
    device = torch.device(device)
    if resolve_precision(device, precision) != "bf16":
        return False
    if device.type not in ("cuda", "cpu"):
        raise ValueError(f"bf16 autocast is supported here on cuda and cpu, not on {device.type}; use fp32")
    return True


def autocast(device: torch.device, precision: str = "auto"):
    """bf16 autocast when ``precision`` resolves to bf16 on ``device`` (CUDA or CPU); a no-op context otherwise."""
    device = torch.device(device)
    return torch.autocast(device.type, dtype=torch.bfloat16) if uses_bf16(device, precision) else contextlib.nullcontext()


def make_generator(device: torch.device, seed: int) -> torch.Generator:
    """A seeded generator on ``device`` (torch.multinomial needs one on the same device)."""
    return torch.Generator(device=device).manual_seed(seed)


def default_threads(command: str) -> int:
    """The command line's CPU threads when ``--threads`` is not given: 1, except for ``quickstart``, which takes 2
    (1 on a 1-core machine). The quickstart is one job on an otherwise idle machine, and its README time and seed
    table were measured that way; on an idle 2-core CPU its supervised and RL steps run about 1.3x faster with both
    cores. A different thread count changes the order of float sums, so the same seed gives other (equally valid)
    numbers with ``--threads 1``; the tests use 1. With 2 threads the RL stage was once not bit-reproducible from
    run to run (seed 1 ended at 86.0% in one run and 90.5% in another); the command line now switches on torch's
    deterministic algorithms whenever it uses more than one CPU thread (``set_cpu_threads``)."""
    return min(2, os.cpu_count() or 1) if command == "quickstart" else 1


def set_cpu_threads(n: int, deterministic: bool = False) -> None:
    """Use ``n`` CPU threads for torch's intra-op parallelism, and (``deterministic``) torch's deterministic
    algorithms.

    minitepo's command line defaults to 1 (``default_threads``; the quickstart takes 2): on a busy machine
    more threads cost a great deal (threads that spin-wait for a core another process holds), and with a
    fixed thread count seeded runs give the same numbers on machines with different core counts. With more
    than one thread on the CPU the command line also asks for deterministic algorithms, so that a seeded run
    gives the same numbers every time (without them the quickstart's RL stage was not bit-reproducible with
    2 threads); with one thread they change nothing, and the command line leaves them off.
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"--threads must be a positive integer, got {n!r}")
    torch.set_num_threads(n)
    torch.use_deterministic_algorithms(bool(deterministic))
