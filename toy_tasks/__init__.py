"""Toy tasks with verifiable answers, small enough for a tiny model to learn on a laptop.

Every task makes ``(prompt, reference answer)`` pairs over one small alphabet (one token per
character), keeps a fixed held-out eval set that training never sees, and scores model text with
a verifier that never raises. A task is found by name::

    from toy_tasks import make_task
    task = make_task("add", levels=(1, 2), reverse=False)
    ex = task.sample(random.Random(0))            # Example(prompt='63+15=', answer='78', level=2)
    score, info = task.reward(ex.prompt, ex.answer + EOS)   # 1.0, info["correct"] is True

Tasks: ``add`` (n-digit addition), ``mul`` (multiplication), ``add_cot`` (addition with written
column steps, rewarded only on the final answer), ``add_or_cot`` (addition answered directly or with
those steps: responses of very different lengths to one prompt), ``countdown`` (reach a target with + - * /).
The module docstring of each task shows its exact prompt and answer format.
"""

from __future__ import annotations

from dataclasses import fields

from .add import AddTask
from .add_cot import AddCoTTask
from .add_or_cot import AddOrCoTTask
from .alphabet import ALPHABET, BOS, EOS, PAD
from .base import Example, Task, TaskConfig, split_at_eos
from .countdown import CountdownTask
from .mul import MulTask

_TASKS: dict[str, type[Task]] = {cls.name: cls for cls in (AddTask, MulTask, AddCoTTask, AddOrCoTTask, CountdownTask)}

TASK_NAMES: tuple[str, ...] = tuple(_TASKS)
"""Names ``make_task`` accepts."""


def make_task(name: str, levels: tuple[int, ...] | None = None, **options) -> Task:
    """Build the task called ``name``.

    ``levels`` picks difficulties (None = the task's default); ``options`` set fields of the
    task's config dataclass (e.g. ``reverse=False``, ``format_bonus=0.5``). An unknown name,
    level or option raises ``ValueError`` listing what is allowed.
    """
    if name not in _TASKS:
        raise ValueError(f"unknown task {name!r}; allowed tasks: {', '.join(TASK_NAMES)}")
    cls = _TASKS[name]
    allowed = [f.name for f in fields(cls.config_class) if f.name != "levels"]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"task {name!r} has no option {', '.join(map(repr, unknown))}; "
                         f"allowed options: levels, {', '.join(allowed)}")
    return cls(cls.config_class(levels=levels, **options))


def parse_levels(levels) -> tuple[int, ...] | None:
    """Levels as ``make_task`` takes them: ``"1,2,3"`` or ``(1, 2, 3)`` -> ``(1, 2, 3)``; None or "" -> None
    (the task's default levels). Whether each level exists is checked by the task itself."""
    if levels is None or (isinstance(levels, str) and not levels.strip()):
        return None
    values = levels.split(",") if isinstance(levels, str) else levels
    try:
        return tuple(int(str(v).strip()) for v in values)
    except (TypeError, ValueError):
        raise ValueError(f"levels must be comma-separated integers such as '3' or '1,2,3' (or a tuple of ints), "
                         f"got {levels!r}") from None


def resolve_task(name: str | None = None, levels=None, *, trained_name: str | None = None,
                 trained_levels=None) -> Task:
    """The task a run uses: ``name`` and ``levels`` when given, else what its model was trained on
    (``trained_name``; ``trained_levels`` only when the task is the same one)."""
    chosen_name = name or trained_name
    if chosen_name is None:
        raise ValueError("no task given and the model does not record one; pass a task name such as 'add'")
    chosen = parse_levels(levels)
    if chosen is None and chosen_name == trained_name and trained_levels is not None:
        chosen = parse_levels(trained_levels)
    return make_task(chosen_name, levels=chosen)


__all__ = ["ALPHABET", "BOS", "EOS", "PAD", "TASK_NAMES", "Example", "Task", "TaskConfig",
           "make_task", "parse_levels", "resolve_task", "split_at_eos"]
