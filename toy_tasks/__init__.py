"""Toy tasks with verifiable answers, small enough for a tiny model to learn on a laptop.

Every task makes ``(prompt, reference answer)`` pairs over one small alphabet (one token per
character), keeps a fixed held-out eval set that training never sees, and scores model text with
a verifier that never raises. A task is found by name::

    from toy_tasks import make_task
    task = make_task("add", levels=(1, 2), reverse=False)
    ex = task.sample(random.Random(0))            # Example(prompt='63+15=', answer='78', level=2)
    score, info = task.reward(ex.prompt, ex.answer + EOS)   # 1.0, info["correct"] is True

Tasks: ``add`` (n-digit addition), ``mul`` (multiplication), ``add_cot`` (addition with written
column steps, rewarded only on the final answer), ``countdown`` (reach a target with + - * /).
The module docstring of each task shows its exact prompt and answer format.
"""

from __future__ import annotations

from dataclasses import fields

from .add import AddTask
from .add_cot import AddCoTTask
from .alphabet import ALPHABET, BOS, EOS, PAD
from .base import Example, Task, TaskConfig, split_at_eos
from .countdown import CountdownTask
from .mul import MulTask

_TASKS: dict[str, type[Task]] = {cls.name: cls for cls in (AddTask, MulTask, AddCoTTask, CountdownTask)}

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


__all__ = ["ALPHABET", "BOS", "EOS", "PAD", "TASK_NAMES", "Example", "Task", "TaskConfig",
           "make_task", "split_at_eos"]
