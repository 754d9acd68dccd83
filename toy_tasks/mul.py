"""``mul``: multi-digit multiplication, answer least-significant digit first by default.

    prompt  "123*45="       answer  "5355"    (5535 reversed; "5535" with reverse=False)

Levels fix the operand sizes (first operand x second operand, in digits):

    level 1: 1 x 1     level 2: 2 x 1     level 3: 3 x 2     level 4: 4 x 3

Default levels (1, 2, 3). The reversal helps here for the same reason as in addition (the low
digits of a product are settled first; see ``toy_tasks.arithmetic.write_number``), though a
product's middle digits still depend on many digit pairs at once, so ``mul`` stays much harder
than ``add`` for a small model.
"""

from __future__ import annotations

from .arithmetic import DigitArithmeticTask

OPERAND_DIGITS = {1: (1, 1), 2: (2, 1), 3: (3, 2), 4: (4, 3)}
"""Digits of (first operand, second operand) at each level."""


class MulTask(DigitArithmeticTask):
    """Multiplication of a (level)-digit number by a (level-1)-digit one (1 x 1 at level 1)."""

    name = "mul"
    symbol = "*"
    default_levels = (1, 2, 3)
    allowed_levels = tuple(OPERAND_DIGITS)

    def operand_digits(self, level: int) -> tuple[int, int]:
        return OPERAND_DIGITS[level]

    def combine(self, a: int, b: int) -> int:
        return a * b
