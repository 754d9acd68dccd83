"""Guards that keep a run from going wrong silently: flag values, run folders, resumes and weights.

The library's math checks its tensors; these guards check what a *person* asks for, before any
work starts, and what the training loop produces, as it happens:

* **flag values** (``check_int``, ``check_number``, ``check_field_choice``): a config's ``__post_init__``
  refuses values that make no sense (a negative clip norm flips the update; a non-finite learning
  rate poisons every weight) with one line naming the flag, the value and what is allowed;
* **run folders** (``prepare_run_folder``): a run never overwrites another one by accident;
* **resumes** (``check_resume``): a resumed run is the same run, only longer;
* **weights** (``bad_weight``): after every optimizer step and whenever a checkpoint is read or
  written, every weight must be finite and below ``WEIGHT_LIMIT``.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import tempfile
from pathlib import Path


from minitepo.device import DEVICES
from minitepo.optim import WEIGHT_LIMIT, bad_weight  # noqa: F401  (the weight check belongs to the optimizer step)
from toy_tasks import parse_levels

RUN_FILES = ("checkpoint.pt", "metrics.jsonl", "config.json")
"""The files that make a folder a run folder (what ``--out`` receives)."""



class RunFolderError(ValueError):
    """``--out`` cannot take this run: it holds another run, is a file, or cannot be written."""


def flag(name: str) -> str:
    """The command-line flag of a config field: ``grad_clip`` -> ``--grad-clip``."""
    return "--" + name.replace("_", "-")


# -- flag values --------------------------------------------------------------------------------------------------

def refuse(name: str, value, allowed: str) -> None:
    raise ValueError(f"{flag(name)} must be {allowed}, got {value!r}")


def check_int(config, name: str, low: int, why: str = "", optional: bool = False) -> None:
    """``config.name`` is an integer >= ``low`` (or None when ``optional``)."""
    value = getattr(config, name)
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        refuse(name, value, f"an integer >= {low}" + (f" ({why})" if why else ""))


def check_number(config, name: str, low: float | None = None, high: float | None = None, *, low_open: bool = False,
                 high_open: bool = False, optional: bool = False, why: str = "") -> None:
    """``config.name`` is a finite number in [low, high] (open ends with ``low_open`` / ``high_open``; None when
    ``optional``)."""
    value = getattr(config, name)
    if optional and value is None:
        return
    bounds = []
    if low is not None:
        bounds.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        bounds.append(f"{'<' if high_open else '<='} {high:g}")
    allowed = "a finite number" + (" " + " and ".join(bounds) if bounds else "") + (f" ({why})" if why else "")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        refuse(name, value, allowed)
    if low is not None and (value <= low if low_open else value < low):
        refuse(name, value, allowed)
    if high is not None and (value >= high if high_open else value > high):
        refuse(name, value, allowed)


def check_field_choice(config, name: str, choices, optional: bool = False) -> None:
    value = getattr(config, name)
    if optional and value is None:
        return
    if value not in choices:
        refuse(name, value, "one of " + ", ".join(map(str, choices)))


def check_device(config) -> None:
    """``config.device`` is a device name (whether it exists here is ``pick_device``'s question)."""
    if config.device not in DEVICES:
        raise ValueError(f"--device: unknown device {config.device!r}; choose one of {', '.join(DEVICES)}")


# -- run folders ----------------------------------------------------------------------------------------------------

def check_resume_or_overwrite(resume: bool, overwrite: bool) -> None:
    """``--resume`` and ``--overwrite`` are not both given (every command with a run folder checks this here)."""
    if resume and overwrite:
        raise RunFolderError("--resume and --overwrite contradict each other: --resume continues the run in --out, "
                             "--overwrite deletes it; pass one of them")


def prepare_run_folder(out, *, resume: bool, overwrite: bool) -> Path:
    """Make ``out`` ready for a run, or refuse with one line, before anything is written.

    * ``--out`` must be a folder that can be written;
    * a folder holding a run (``RUN_FILES``) is continued only with ``resume``, and replaced only with
      ``overwrite`` (its run files are deleted first, so nothing of the old run mixes with the new);
    * ``resume`` needs a checkpoint to continue from;
    * checkpoint writes that a crash left unfinished (``checkpoint.pt.*.tmp``) are removed.
    """
    out = Path(out)
    check_resume_or_overwrite(resume, overwrite)
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"--out {str(out)!r} is a file, not a folder; name a folder for the run")
    existing = [name for name in RUN_FILES if (out / name).exists()]
    if resume and not (out / "checkpoint.pt").is_file():
        hint = "pass --overwrite instead of --resume to start afresh there" if existing else "drop --resume to start it"
        raise RunFolderError(f"--resume: {str(out)!r} holds no checkpoint.pt to continue from; {hint}")
    if existing and not resume and not overwrite:
        raise RunFolderError(f"--out {str(out)!r} already holds a run ({', '.join(existing)}); continue it with "
                             f"--resume, or start afresh with another --out or with --overwrite (which deletes it)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):  # can we write here? (read-only disk, no permission, ...)
            pass
    except OSError as e:
        raise RunFolderError(f"--out {str(out)!r} cannot be written: {e.strerror or e}") from None
    if overwrite:
        for name in existing:
            (out / name).unlink()
    orphans = sorted(out.glob("checkpoint.pt.*.tmp"))
    for tmp in orphans:
        tmp.unlink()
    if orphans:
        print(f"minitepo: removed {len(orphans)} unfinished checkpoint write(s) left in {str(out)!r} by a crash",
              file=sys.stderr)
    return out


def prepare_parent_folder(out, runs, *, overwrite: bool) -> list[str]:
    """For commands that write several runs into sub-folders of ``out`` (quickstart, compare): check them all
    before the first one starts, and return those that hold a run already (replaced only with ``overwrite``)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"--out {str(out)!r} is a file, not a folder; name a folder for the runs")
    if held := [name for name in RUN_FILES if (out / name).exists()]:
        raise RunFolderError(f"--out {str(out)!r} is a run folder itself ({', '.join(held)}); this command writes "
                             f"its runs into sub-folders of a folder of their own: choose another --out")
    previous = [f"{run}/" for run in runs if any((out / run / name).exists() for name in RUN_FILES)]
    if previous and not overwrite:
        raise RunFolderError(f"--out {str(out)!r} already holds runs ({', '.join(previous)}); start afresh with "
                             f"--overwrite (which deletes them) or another --out")
    for run in runs:
        if (out / run).exists() and not (out / run).is_dir():
            raise RunFolderError(f"{str(out / run)!r} is a file, not a folder; choose another --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise RunFolderError(f"--out {str(out)!r} cannot be written: {e.strerror or e}") from None
    return previous


def same_folder(a, b) -> bool:
    """Whether two paths name the same folder (whether or not it exists yet)."""
    return Path(a).resolve() == Path(b).resolve()


# -- resumes --------------------------------------------------------------------------------------------------------

def _comparable(name: str, value):
    """A setting in a form where equal settings compare equal: levels as a tuple, paths resolved."""
    if name == "levels":
        try:
            return parse_levels(value)
        except ValueError:
            return value
    if name == "init" and isinstance(value, str):
        return str(Path(value).resolve())
    if isinstance(value, list):
        return tuple(value)
    return value


def changed_settings(saved: dict, config, resolved: dict | None = None) -> list[str]:
    """Each setting of ``config`` that differs from the run's (``saved``), as ``--flag NEW (the run: OLD)``,
    except the fields the config class lists in ``RESUMABLE`` (the run's length, progress bars, ...).

    A field missing from ``saved`` (a checkpoint written before the field existed) counts as its default.
    ``resolved`` maps a field to (the run's, this one's) values when the config's own value is not the whole
    story (RL's task: None means "the warm start's")."""
    changes = []
    for field in dataclasses.fields(config):
        name = field.name
        if name in type(config).RESUMABLE:
            continue
        old, new = saved.get(name, field.default), getattr(config, name)
        if resolved and name in resolved:
            old, new = resolved[name]
        old, new = _comparable(name, old), _comparable(name, new)
        if old != new:
            changes.append(f"{flag(name)} {_shown(new)} (the run: {_shown(old)})")
    return changes


def _shown(value) -> str:
    """A setting as it is typed on the command line: ``1,2,3`` for levels, ``mul`` for a name."""
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


def check_resume(path, saved: dict, config, resolved: dict | None = None) -> None:
    """Refuse to resume the run at ``path`` with settings that make it a different run, naming each one."""
    changes = changed_settings(saved, config, resolved)
    if changes:
        lengths = ", ".join(flag(n) for n in ("iterations", "steps") if n in type(config).RESUMABLE)
        raise ValueError(f"cannot resume {str(path)!r} with other settings: {'; '.join(changes)}. Only {lengths} may "
                         f"change on --resume; start a new run (another --out) to change the rest")


# -- weights --------------------------------------------------------------------------------------------------------
