"""``add_cot``: addition with a written chain of thought, rewarded only on the final answer.

    prompt  "58+67="
    answer  "8+7+0=15;5+6+1=12:125"

The response works through the columns from the ones digit up. Each step is
``<digit of a>+<digit of b>+<carry in>=<column sum>``; the carry into the next column is the tens
digit of that sum. Steps are separated by ``;``. After the last step comes ``:`` and the final
answer in the usual digit order (the steps already produced its digits, lowest first, so writing
it out is copying, not arithmetic). A 3-digit problem takes 27 to 31 characters. Operands follow
the ``add`` levels: level n is n-digit + n-digit, levels 1-6, default (1, 2, 3).

The reward reads only the text after the last ``:``. The steps are never checked: a response
with wrong or missing steps but the right final answer scores 1, and perfect steps followed by a
wrong final answer score 0. That is deliberate. It is the sparse *outcome* reward that RL on
reasoning models uses: one number for a whole long response, with no say on which tokens earned
it. Spreading that single number sensibly over the tokens of a long response is the problem TEPO
and its relatives address, and this task is the smallest place to watch it. ``format_ok`` does
look at the steps, but only at their shape (every step reads ``d+d+d=s``), never their values.
"""

from __future__ import annotations

import random
import re
from typing import ClassVar

from .base import (MAX_ANSWER_DIGITS, Example, Task, TaskConfig, Verdict, operand_count, prompt_error,
                   random_operand, read_operands, shorten)

_STEP = r"[0-9]\+[0-9]\+[0-9]=[0-9]{1,2}"
_WELL_FORMED = re.compile(rf"{_STEP}(?:;{_STEP}){{0,{MAX_ANSWER_DIGITS}}}:[0-9]{{1,{MAX_ANSWER_DIGITS}}}")
_FINAL = re.compile(rf"[0-9]{{1,{MAX_ANSWER_DIGITS}}}")


class AddCoTTask(Task):
    """Column addition with one written step per column, rewarded only on the final answer.

    Options are the shared ones of ``TaskConfig`` (``format_bonus`` ...) and no ``reverse``: the
    final answer is always in the usual order.
    """

    name = "add_cot"
    config_class: ClassVar[type[TaskConfig]] = TaskConfig
    default_levels = (1, 2, 3)
    allowed_levels = (1, 2, 3, 4, 5, 6)

    def reference(self, a: int, b: int) -> str:
        """Steps for every column (the shorter operand padded with zeros), then ``:`` and a+b."""
        digits_a, digits_b = str(a)[::-1], str(b)[::-1]  # ones digit first
        width = max(len(digits_a), len(digits_b))
        digits_a, digits_b = digits_a.ljust(width, "0"), digits_b.ljust(width, "0")
        steps, carry = [], 0
        for da, db in zip(digits_a, digits_b):
            column = int(da) + int(db) + carry
            steps.append(f"{da}+{db}+{carry}={column}")
            carry = column // 10
        return ";".join(steps) + ":" + str(a + b)

    def max_answer_length(self, level: int) -> int:
        # n steps of at most 8 characters ("9+9+1=19"), n - 1 ";", one ":" and a sum of at most
        # n + 1 digits: 10n + 1, which the largest operands reach.
        return 10 * level + 1

    def judge(self, prompt: str, body: str) -> Verdict:
        """Correct iff the text after the last ``:`` is exactly the sum's digits; ``format_ok``
        also asks that every step before it reads ``d+d+d=s``."""
        format_ok = _WELL_FORMED.fullmatch(body) is not None
        _, colon, final = body.rpartition(":")
        answer = int(final) if colon and _FINAL.fullmatch(final) else None
        operands = read_operands(prompt, "+")
        if operands is None:
            return Verdict(format_ok, False, answer, prompt_error(prompt, "+"))
        if answer is None:
            return Verdict(format_ok, False, None, f"response {shorten(body)} does not end in ':' "
                                                   f"and the final answer's digits")
        expected = str(sum(operands))
        if final != expected:
            return Verdict(format_ok, False, answer, f"final answer {final!r}, expected {expected!r}")
        return Verdict(format_ok, True, answer, None)

    def prompt_space_size(self, level: int) -> int:
        return operand_count(level) ** 2  # the prompts of add at the same level

    def generate(self, rng: random.Random, level: int) -> Example:
        a, b = random_operand(rng, level), random_operand(rng, level)
        return Example(prompt=f"{a}+{b}=", answer=self.reference(a, b), level=level)
