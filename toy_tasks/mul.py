"""``mul``: multi-digit multiplication, answer least-significant digit first by default.

    prompt  "123*45="       answer  "5355"    (5535 reversed; "5535" with reverse=False)

Levels fix the operand sizes (first operand x second operand, in digits):

    level 1: 1 x 1     level 2: 2 x 1     level 3: 3 x 2     level 4: 4 x 3

Default levels (1, 2, 3). The reversal helps here for the same reason as in addition (the low
digits of a product are settled first; see ``toy_tasks.base.write_number``), though a product's
middle digits still depend on many digit pairs at once, so ``mul`` stays much harder than
``add`` for a small model.
"""

from __future__ import annotations

import random
from typing import ClassVar

from .base import (ArithmeticConfig, Example, Task, TaskConfig, Verdict, judge_digits, operand_count,
                   prompt_error, random_operand, read_operands, write_number)

OPERAND_DIGITS = {1: (1, 1), 2: (2, 1), 3: (3, 2), 4: (4, 3)}
"""Digits of (first operand, second operand) at each level."""


class MulTask(Task):
    """Multiplication of a (level)-digit number by a (level-1)-digit one (1 x 1 at level 1)."""

    name = "mul"
    config_class: ClassVar[type[TaskConfig]] = ArithmeticConfig
    default_levels = (1, 2, 3)
    allowed_levels = tuple(OPERAND_DIGITS)
    exact_reference = True  # judge_digits: exactly the reference digits

    def reference(self, a: int, b: int) -> str:
        """The reference response to ``a * b``, without EOS: the product, reversed or not."""
        return write_number(a * b, self.config.reverse)

    def generate(self, rng: random.Random, level: int) -> Example:
        digits_a, digits_b = OPERAND_DIGITS[level]
        a, b = random_operand(rng, digits_a), random_operand(rng, digits_b)
        return Example(prompt=f"{a}*{b}=", answer=self.reference(a, b), level=level)

    def prompt_space_size(self, level: int) -> int:
        digits_a, digits_b = OPERAND_DIGITS[level]
        return operand_count(digits_a) * operand_count(digits_b)

    def max_answer_length(self, level: int) -> int:
        digits_a, digits_b = OPERAND_DIGITS[level]
        return digits_a + digits_b  # an m-digit times an n-digit number has at most m + n digits

    def judge(self, prompt: str, body: str) -> Verdict:
        """Correct iff ``body`` is exactly the reference digits (see ``judge_digits``)."""
        operands = read_operands(prompt, "*")
        if operands is None:  # the response is still read, for format_ok and the logged answer
            verdict = judge_digits(body, None, self.config.reverse)
            return Verdict(verdict.format_ok, False, verdict.answer, prompt_error(prompt, "*"))
        return judge_digits(body, self.reference(*operands), self.config.reverse)
