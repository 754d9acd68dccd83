"""``add``: n-digit addition, answer written least-significant digit first by default.

    prompt  "123+456="      answer  "975"     (579 reversed; "579" with reverse=False)
    prompt  "58+67="        answer  "521"     (125 reversed)

Level n means both operands have exactly n digits (a nonzero leading digit, except that level 1
uses 0-9). Levels 1 to 6 are allowed, (1, 2, 3) is the default. Why the answer is reversed is
explained in ``toy_tasks.arithmetic.write_number``, where the reversal happens.
"""

from __future__ import annotations

from .arithmetic import DigitArithmeticTask


class AddTask(DigitArithmeticTask):
    """n-digit + n-digit addition; options in ``ArithmeticConfig`` (``reverse``, ``format_bonus`` ...)."""

    name = "add"
    symbol = "+"
    default_levels = (1, 2, 3)
    allowed_levels = (1, 2, 3, 4, 5, 6)

    def operand_digits(self, level: int) -> tuple[int, int]:
        return level, level

    def combine(self, a: int, b: int) -> int:
        return a + b
