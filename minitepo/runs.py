"""Run folders and metrics.

Each run writes into its own folder: ``config.json`` (what was asked for), ``metrics.jsonl``
(one JSON object per logged step, CleanRL-style grouped names like ``charts/reward_mean`` or
``losses/clip_frac``), checkpoints, and plots.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path


def to_plain(value):
    """Make tensors/numpy scalars/paths JSON-friendly; non-finite floats become None-safe strings."""
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (Path, os.PathLike)):
        return str(value)
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


class MetricsLog:
    """Appends one JSON line per ``log`` call to ``run_dir/metrics.jsonl``."""

    def __init__(self, run_dir: str | os.PathLike, resume: bool = False, keep_until_step: int | None = None):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume and self.path.exists() and keep_until_step is not None:
            # Drop lines written after the checkpoint we resume from, so the log has no duplicates.
            kept = [line for line in read_metrics(self.path) if line.get("step", -1) <= keep_until_step]
            self.path.write_text("".join(json.dumps(r) + "\n" for r in kept))
        elif not resume:
            self.path.write_text("")

    def log(self, record: dict) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(to_plain(record)) + "\n")


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """All records of a ``metrics.jsonl`` (or of a run folder holding one)."""
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.jsonl"
    if not path.is_file():
        raise ValueError(f"no metrics found: {str(path)!r} does not exist")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_json(path: str | os.PathLike, data: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(to_plain(data), indent=2) + "\n")
