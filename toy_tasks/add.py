"""``add``: n-digit addition with every number written least-significant digit first.

    problem 123 + 456 = 579   prompt  "321+654="   answer  "975"
    problem  58 +  67 = 125   prompt  "850+760="   answer  "521"
    problem   5 +   3 =   8   prompt  "500+300="   answer  "8"

Level n means both operands have exactly n digits (a nonzero leading digit, except that level 1
uses 0-9). Levels 1 to 6 are allowed, (1, 2, 3) is the default.

By default the whole problem is written the way column addition is done, ones first:

* the answer reversed (``reverse=True``): each answer digit is one column's sum plus the carry the
  model has just written (``toy_tasks.base.write_number`` says more);
* the operands reversed too (``reverse_operands=True``) and zero-padded to ``width`` digits
  (default 3): the k-th digit of ``a``, of ``b`` and of the answer are then the same distance apart
  in every column and at every level, so the model can look them up the same way everywhere.

Why both defaults: with the operands in the usual order, a 4-layer d = 128 model learning levels
1-3 got stuck for hundreds of steps with one answer column at chance, and whether and when it
escaped was a coin flip over seeds; ``research/warm-start/README.md`` has the measurements. The usual
schoolbook format is one switch away: ``reverse_operands=False, width=0`` gives ``"123+456="``,
and ``reverse=False`` the answer ``"579"``.

Training draws the widest level four times as often as each other one (``level_weights``):
with zero-padded operands a 1- or 2-digit sum is a 3-digit sum with zero columns, so only the
widest level exercises every column.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import ClassVar

from .base import (ArithmeticConfig, Example, Task, TaskConfig, Verdict, judge_digits, operand_count,
                   prompt_error, random_operand, read_operands, write_number)

MAX_WIDTH = 18
"""Widest zero-padding allowed (the verifier reads operands of up to 18 digits)."""


@dataclass
class AddConfig(ArithmeticConfig):
    """Options of ``add``: ArithmeticConfig's, plus how the operands are written and drawn."""

    reverse_operands: bool = True
    """Write the operands least-significant digit first ("123" is written "321")."""
    width: int = 3
    """Zero-pad each operand to at least this many digits before any reversal (5 -> "005" -> "500"); 0 or 1:
    no padding. A fixed number, not the task's widest level, so a prompt is written the same way whichever
    levels a run picks."""
    level_weights: tuple[float, ...] | None = None
    """Relative chance of each level in training draws, in ``levels`` order; None: the widest level weighs 4 and
    every other 1 (with the default levels, two draws in three are 3-digit sums). Evaluation is unaffected."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.reverse_operands, bool):
            raise ValueError(f"reverse_operands must be True or False, got {self.reverse_operands!r}")
        if isinstance(self.width, bool) or not isinstance(self.width, int) or not 0 <= self.width <= MAX_WIDTH:
            raise ValueError(f"width must be an int from 0 (no padding) to {MAX_WIDTH}, got {self.width!r}")
        weights = self.level_weights
        if weights is not None:
            try:
                weights = tuple(weights)
            except TypeError:
                raise ValueError(f"level_weights must be a tuple of numbers or None, got {weights!r}") from None
            if not weights or any(isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w)
                                  or w < 0 for w in weights) or sum(weights) <= 0:
                raise ValueError(f"level_weights must be finite numbers >= 0 with a positive sum, one per level, "
                                 f"got {self.level_weights!r}")
            self.level_weights = tuple(float(w) for w in weights)


class AddTask(Task):
    """n-digit + n-digit addition; options in AddConfig (reverse, reverse_operands, width, ...)."""

    name = "add"
    config_class: ClassVar[type[TaskConfig]] = AddConfig
    default_levels = (1, 2, 3)
    allowed_levels = (1, 2, 3, 4, 5, 6)
    exact_reference = True  # judge_digits: exactly the reference digits

    def __init__(self, config: AddConfig | None = None) -> None:
        super().__init__(config)
        weights = self.config.level_weights
        if weights is None:
            weights = tuple(4.0 if level == max(self.levels) else 1.0 for level in self.levels)
        elif len(weights) != len(self.levels):
            raise ValueError(f"level_weights {weights} has {len(weights)} entries but the task has "
                             f"{len(self.levels)} levels {self.levels}; give one weight per level")
        self.level_weights = weights

    def draw_level(self, rng: random.Random) -> int:
        if len(self.levels) == 1:
            return self.levels[0]
        if len(set(self.level_weights)) == 1:  # equal weights draw exactly as every other task does
            return super().draw_level(rng)
        return rng.choices(self.levels, weights=self.level_weights)[0]

    def write_operand(self, value: int) -> str:
        """One operand as the prompt shows it: zero-padded to ``width``, then reversed if so configured."""
        digits = str(value).zfill(self.config.width)
        return digits[::-1] if self.config.reverse_operands else digits

    def reference(self, a: int, b: int) -> str:
        """The reference response to ``a + b``, without EOS: the sum, reversed or not."""
        return write_number(a + b, self.config.reverse)

    def generate(self, rng: random.Random, level: int) -> Example:
        a, b = random_operand(rng, level), random_operand(rng, level)
        return Example(prompt=f"{self.write_operand(a)}+{self.write_operand(b)}=", answer=self.reference(a, b),
                       level=level)

    def prompt_space_size(self, level: int) -> int:
        return operand_count(level) ** 2

    def max_answer_length(self, level: int) -> int:
        return level + 1  # the sum of two n-digit numbers has at most n + 1 digits

    def judge(self, prompt: str, body: str) -> Verdict:
        """Correct iff ``body`` is exactly the reference digits (see ``judge_digits``). Any operand digits are
        read (reversed when ``reverse_operands``), padded to ``width`` or not."""
        operands = read_operands(prompt, "+", reverse=self.config.reverse_operands)
        if operands is None:  # the response is still read, for format_ok and the logged answer
            verdict = judge_digits(body, None, self.config.reverse)
            return Verdict(verdict.format_ok, False, verdict.answer, prompt_error(prompt, "+"))
        return judge_digits(body, self.reference(*operands), self.config.reverse)
