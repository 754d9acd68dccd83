"""Checkpoints: written atomically, loaded safely, checked before use.

A checkpoint is one ``torch.save`` file holding plain data only (tensors, numbers, strings,
lists, dicts), so it loads with ``torch.load(weights_only=True)`` — no arbitrary code runs when
you open a file someone sent you. It holds everything needed to continue a run exactly: model
config and weights, the tokenizer alphabet, optimizer state, every RNG state, the step, and the
run's config.

Atomic write: the file is written to a temporary name in the same folder, flushed to disk, then
renamed over the target. A crash or Ctrl-C mid-write leaves the previous checkpoint intact (a
SIGKILL can leave the temporary file behind; the next run in that folder removes it). A write that
fails (disk full, read-only disk) removes its temporary file and says which path failed and why.

Weights are checked on the way out and on the way in (``guards.bad_weight``): a checkpoint never
holds a non-finite or diverged weight, so the one on disk is always the last healthy one.
"""

from __future__ import annotations

import dataclasses
import os
import random
import tempfile
from pathlib import Path

import torch

from minitepo.model import GPT, ModelConfig
from minitepo.optim import bad_weight
from minitepo.tokenizer import Tokenizer
from toy_tasks.alphabet import ALPHABET

FORMAT = "minitepo-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint is missing, truncated, corrupt, or does not fit what it is loaded into."""


class CheckpointWriteError(RuntimeError):
    """A checkpoint could not be written (disk full, read-only, ...); the previous one is intact."""


def os_cause(e: BaseException) -> str:
    """The operating system's reason behind ``e`` ("No space left on device"), else its first line. torch.save
    turns a failed write into a RuntimeError from its zip writer; the OSError is in the exception's context."""
    for cause in (e, e.__cause__, e.__context__):
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def save_checkpoint(path: str | os.PathLike, payload: dict) -> Path:
    """Atomically write ``payload`` (plain data and tensors) to ``path``."""
    path = Path(path)
    if isinstance(payload.get("model"), dict) and (bad := bad_weight(payload["model"].items())):
        raise FloatingPointError(f"not writing checkpoint {str(path)!r}: {bad}; the previous checkpoint is kept")
    data = {"format": FORMAT, "version": VERSION, **payload}
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            torch.save(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, (OSError, RuntimeError)):
            raise CheckpointWriteError(f"could not write checkpoint {str(path)!r}: {os_cause(e)}; "
                                       f"the previous checkpoint is intact") from e
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
        detail = str(e).splitlines()[0] if str(e) else ""
        if "weights_only" in str(e) or "weights only" in str(e).lower():  # torch's advice to load it unsafely
            detail = "not plain data; refused without running any of its code"  # is never passed on
        raise CheckpointError(f"checkpoint {str(path)!r} is truncated or not a minitepo checkpoint "
                              f"({type(e).__name__}: {detail})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{str(path)!r} is not a minitepo checkpoint")
    if data.get("version") != VERSION:
        raise CheckpointError(f"checkpoint {str(path)!r} has format version {data.get('version')}, "
                              f"this minitepo reads version {VERSION}")
    for key in ("model_config", "model", "alphabet", "step"):
        if key not in data:
            raise CheckpointError(f"checkpoint {str(path)!r} lacks its {key!r} entry")
    if isinstance(data["model"], dict) and (bad := bad_weight(data["model"].items())):
        raise CheckpointError(f"checkpoint {str(path)!r} cannot be used: {bad}; train from an earlier checkpoint")
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
    if data["model_config"] != model.config.to_dict():
        differ = [f"{k}={data['model_config'].get(k)!r} there, {v!r} here"
                  for k, v in model.config.to_dict().items() if data["model_config"].get(k) != v]
        raise CheckpointError(f"cannot resume {str(path)!r}: its model differs from the one built here "
                              f"({'; '.join(differ)}); was the warm start (--init) replaced by another model?")
    load_weights(model, data["model"], path)
    optimizer.load_state_dict(data["optimizer"])
    set_rng_state(data["rng"], generators)
    for name, rng in (python_rngs or {}).items():
        rng.setstate(python_rng_state(data[name]))
    return data


def load_weights(model, state: dict, path) -> None:
    """``model.load_state_dict(state)``, or one line naming the first weight that does not fit (torch's own
    message lists every tensor over many lines)."""
    try:
        model.load_state_dict(state)
    except RuntimeError:
        own = model.state_dict()
        missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own))
        shapes = [f"{k} is {tuple(state[k].shape)} there, {tuple(own[k].shape)} here"
                  for k in own if k in state and tuple(state[k].shape) != tuple(own[k].shape)]
        what = (f"{len(shapes)} weight(s) have other shapes, first {shapes[0]}" if shapes
                else f"missing {', '.join(missing[:3])}" if missing else f"unexpected {', '.join(unexpected[:3])}")
        raise CheckpointError(f"checkpoint {str(path)!r}: weights do not fit its model config ({what})") from None


def load_model(path: str | os.PathLike, device: torch.device | str = "cpu"):
    """Model, tokenizer and the raw checkpoint dict from a checkpoint file (or a run folder).

    The tokenizer is rebuilt from the checkpoint's alphabet; it must match the alphabet the tasks
    use today, or every token id would mean something else.
    """
    data = load_checkpoint(path, alphabet=ALPHABET)
    try:
        config = ModelConfig(**data["model_config"])
    except TypeError as e:
        raise CheckpointError(f"checkpoint {str(path)!r} has an unreadable model config: {e}") from None
    tokenizer = Tokenizer(data["alphabet"])
    if config.vocab_size != tokenizer.vocab_size:
        raise CheckpointError(f"checkpoint {str(path)!r}: model vocab_size {config.vocab_size} does not match "
                              f"its tokenizer's {tokenizer.vocab_size}")
    model = GPT(config)
    load_weights(model, data["model"], path)  # one line naming the first weight that does not fit its config
    return model.to(device), tokenizer, data
