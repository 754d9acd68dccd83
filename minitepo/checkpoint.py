"""Checkpoints: written atomically, loaded safely, checked before use.

A checkpoint is one ``torch.save`` file holding plain data only (tensors, numbers, strings,
lists, dicts), so it loads with ``torch.load(weights_only=True)`` — no arbitrary code runs when
you open a file someone sent you. It holds everything needed to continue a run exactly: model
config and weights, the tokenizer alphabet, optimizer state, every RNG state, the step, and the
run's config.

Atomic write: the file is written to a temporary name in the same folder, flushed to disk, then
renamed over the target. A crash or Ctrl-C mid-write leaves the previous checkpoint intact.
"""

from __future__ import annotations

import dataclasses
import os
import random
import tempfile
from pathlib import Path

import torch

FORMAT = "minitepo-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint is missing, truncated, corrupt, or does not fit what it is loaded into."""


def save_checkpoint(path: str | os.PathLike, payload: dict) -> Path:
    """Atomically write ``payload`` (plain data and tensors) to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"format": FORMAT, "version": VERSION, **payload}
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_checkpoint(path: str | os.PathLike, alphabet: str | None = None) -> dict:
    """Read a checkpoint written by ``save_checkpoint`` (tensors land on the CPU).

    ``alphabet``: if given, the checkpoint's tokenizer alphabet must equal it — a model trained
    on another vocabulary would silently read wrong token ids.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "checkpoint.pt"
    if not path.is_file():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated zip, foreign pickle, ... all mean the same to a user
        raise CheckpointError(f"checkpoint {str(path)!r} is truncated or not a minitepo checkpoint "
                              f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{str(path)!r} is not a minitepo checkpoint")
    if data.get("version") != VERSION:
        raise CheckpointError(f"checkpoint {str(path)!r} has format version {data.get('version')}, "
                              f"this minitepo reads version {VERSION}")
    for key in ("model_config", "model", "alphabet", "step"):
        if key not in data:
            raise CheckpointError(f"checkpoint {str(path)!r} lacks its {key!r} entry")
    if alphabet is not None and data["alphabet"] != alphabet:
        raise CheckpointError(f"checkpoint {str(path)!r} was trained with the alphabet {data['alphabet']!r}, "
                              f"but the tokenizer here uses {alphabet!r}")
    return data


def rng_state(generators: dict[str, torch.Generator] | None = None) -> dict:
    """Every RNG state a run depends on, as plain data."""
    state = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    for name, g in (generators or {}).items():
        state["gen/" + name] = g.get_state().cpu()
    return state


def python_rng_state(state) -> tuple:
    """A ``random.Random`` state as ``setstate`` wants it: torch.load gives its inner tuple back as a list."""
    version, internal, gauss = state
    return version, tuple(internal), gauss


def set_rng_state(state: dict, generators: dict[str, torch.Generator] | None = None) -> None:
    """Restore what ``rng_state`` recorded."""
    random.setstate(python_rng_state(state["python"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    for name, g in (generators or {}).items():
        key = "gen/" + name
        if key in state:
            g.set_state(state[key])  # generator states are CPU byte tensors on every device


def save_run(path: str | os.PathLike, *, kind: str, step: int, model, optimizer, alphabet: str, task, config,
             generators: dict[str, torch.Generator] | None = None,
             python_rngs: dict[str, random.Random] | None = None, **extra) -> Path:
    """A checkpoint that continues a training run exactly: weights, optimizer, every RNG state, the
    step and the run's config and task; ``extra`` holds run-specific counters (plain data)."""
    payload = {"kind": kind, "step": step, "model_config": model.config.to_dict(), "alphabet": alphabet,
               "model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": rng_state(generators),
               "config": dataclasses.asdict(config), "task": task.name, "levels": list(task.levels), **extra}
    for name, rng in (python_rngs or {}).items():
        payload[name] = rng.getstate()
    return save_checkpoint(path, payload)


def restore_run(path: str | os.PathLike, *, kind: str, model, optimizer, alphabet: str,
                generators: dict[str, torch.Generator] | None = None,
                python_rngs: dict[str, random.Random] | None = None) -> dict:
    """Load what ``save_run`` wrote back into ``model``, ``optimizer`` and the RNGs; returns the raw dict."""
    data = load_checkpoint(path, alphabet=alphabet)
    if data.get("kind") != kind:
        raise CheckpointError(f"{str(path)!r} is a {data.get('kind')!r} checkpoint, not a {kind!r} one; "
                              "cannot resume from it")
    model.load_state_dict(data["model"])
    optimizer.load_state_dict(data["optimizer"])
    set_rng_state(data["rng"], generators)
    for name, rng in (python_rngs or {}).items():
        rng.setstate(python_rng_state(data[name]))
    return data
