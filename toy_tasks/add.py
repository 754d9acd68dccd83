"""``add``: n-digit addition, answer written least-significant digit first by default.

    prompt  "123+456="      answer  "975"     (579 reversed; "579" with reverse=False)
    prompt  "58+67="        answer  "521"     (125 reversed)

Level n means both operands have exactly n digits (a nonzero leading digit, except that level 1
uses 0-9). Levels 1 to 6 are allowed, (1, 2, 3) is the default. Why the answer is reversed is
explained in ``toy_tasks.base.write_number``, where the reversal happens.
"""

from __future__ import annotations

import random
from typing import ClassVar

from .base import (ArithmeticConfig, Example, Task, TaskConfig, Verdict, judge_digits, operand_count,
                   prompt_error, random_operand, read_operands, write_number)


class AddTask(Task):
    """n-digit + n-digit addition; options in ArithmeticConfig (reverse, format_bonus ...)."""

    name = "add"
    config_class: ClassVar[type[TaskConfig]] = ArithmeticConfig
    default_levels = (1, 2, 3)
    allowed_levels = (1, 2, 3, 4, 5, 6)

    def reference(self, a: int, b: int) -> str:
        """The reference response to ``a + b``, without EOS: the sum, reversed or not."""
        return write_number(a + b, self.config.reverse)

    def generate(self, rng: random.Random, level: int) -> Example:
        a, b = random_operand(rng, level), random_operand(rng, level)
        return Example(prompt=f"{a}+{b}=", answer=self.reference(a, b), level=level)

    def prompt_space_size(self, level: int) -> int:
        return operand_count(level) ** 2

    def max_answer_length(self, level: int) -> int:
        return level + 1  # the sum of two n-digit numbers has at most n + 1 digits

    def judge(self, prompt: str, body: str) -> Verdict:
        """Correct iff ``body`` is exactly the reference digits (see ``judge_digits``)."""
        operands = read_operands(prompt, "+")
        if operands is None:  # the response is still read, for format_ok and the logged answer
            verdict = judge_digits(body, None, self.config.reverse)
            return Verdict(verdict.format_ok, False, verdict.answer, prompt_error(prompt, "+"))
        return judge_digits(body, self.reference(*operands), self.config.reverse)
