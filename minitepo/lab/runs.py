"""Run folders and metrics.

Each run writes into its own folder: ``config.json`` (what was asked for), ``metrics.jsonl``
(one JSON object per logged step, CleanRL-style grouped names like ``charts/reward_mean`` or
``losses/clip_frac``), checkpoints, and plots.
"""

from __future__ import annotations

import json
import math
import os
import sys
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
        try:
            with self.path.open("a") as f:
                f.write(json.dumps(to_plain(record)) + "\n")
        except OSError as e:  # a full disk: name the file (a failed write's own error does not)
            raise OSError(e.errno, e.strerror, str(self.path)) from e


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """All records of a ``metrics.jsonl`` (or of a run folder holding one).

    A process killed while appending a record leaves a torn last line: it is skipped, with a note on stderr
    (``--resume`` then rewrites the log without it). A broken line anywhere else is an error naming the line."""
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.jsonl"
    if not path.is_file():
        raise ValueError(f"no metrics found: {str(path)!r} does not exist")
    lines = [(number, line) for number, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]
    records = []
    for index, (number, line) in enumerate(lines):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if index < len(lines) - 1:
                raise ValueError(f"{str(path)!r} line {number} is not a JSON record ({line[:40]!r}); "
                                 f"only a torn last line (a crash mid-write) is skipped") from None
            print(f"minitepo: skipped the torn last line {number} of {str(path)!r} (a crash mid-write): {line[:40]!r}",
                  file=sys.stderr)
    return records


def write_json(path: str | os.PathLike, data: dict) -> None:
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(to_plain(data), indent=2) + "\n")
    except OSError as e:  # a full disk: name the file (a failed write's own error does not)
        raise OSError(e.errno, e.strerror, str(path)) from e
