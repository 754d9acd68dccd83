"""Two-operand digit problems such as ``"123+456="``: shared by ``add``, ``mul`` and ``add_cot``.

The prompt is ``<a><op><b>=`` with both operands written normally. Each level fixes how many
digits each operand has; an n-digit operand has a nonzero leading digit, except that a 1-digit
operand is any of 0-9. The verifier accepts any prompt of this shape (operands of up to
``MAX_OPERAND_DIGITS`` digits), not only the ones the generator makes.

By default the answer is written least-significant digit first; see ``write_number``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import ClassVar

from .base import Example, Task, TaskConfig, Verdict, shorten

MAX_OPERAND_DIGITS = 18
"""Longest operand the verifier reads from a prompt; longer prompts are refused, not parsed."""

MAX_ANSWER_DIGITS = 40
"""Longest digit answer the verifier reads; a longer run of digits is badly formed (no prompt
the verifier accepts has an answer this long)."""

_DIGITS = re.compile(rf"[0-9]{{1,{MAX_ANSWER_DIGITS}}}")


@dataclass
class ArithmeticConfig(TaskConfig):
    """Options of ``add`` and ``mul``."""

    reverse: bool = True
    """Write the answer least-significant digit first ("579" is written "975"); False writes it
    in the usual order. See ``write_number`` for why reversed is the default."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.reverse, bool):
            raise ValueError(f"reverse must be True or False, got {self.reverse!r}")


def operand_count(n_digits: int) -> int:
    """How many n-digit operands exist: 10 for one digit (0-9), else 9 * 10**(n-1)."""
    return 10 if n_digits == 1 else 9 * 10 ** (n_digits - 1)


def random_operand(rng: random.Random, n_digits: int) -> int:
    """A uniform n-digit number (leading digit nonzero unless n == 1)."""
    low = 0 if n_digits == 1 else 10 ** (n_digits - 1)
    return rng.randrange(low, 10 ** n_digits)


def write_number(value: int, reverse: bool) -> str:
    """Write a non-negative ``value`` in decimal, least-significant digit first when ``reverse``.

    Why reversed: a language model writes its answer left to right, one token at a time, and
    each token can only depend on what is already written. Column arithmetic runs the other way:
    the ones digit of a sum is known first, and every higher digit needs the carry coming out of
    the digits below it. Written in the usual order, the model's *first* token would have to
    account for every carry in the whole number at once. Written reversed, each token is one
    column's digit plus a carry the model has just produced, so the rule it has to learn is the
    same small rule at every position. Tiny models learn reversed addition far faster; the flag
    ``reverse=False`` is there to see the difference.
    """
    digits = str(value)
    return digits[::-1] if reverse else digits


class DigitArithmeticTask(Task):
    """A task whose prompt is ``<a><symbol><b>=``. Subclasses set ``symbol`` and implement
    ``operand_digits`` and ``combine``; ``reference`` and ``judge_answer`` default to a plain
    digit answer and may be replaced (``add_cot`` does)."""

    config_class: ClassVar[type[TaskConfig]] = ArithmeticConfig
    symbol: ClassVar[str]
    """The operator character in the prompt, e.g. ``"+"``."""

    def operand_digits(self, level: int) -> tuple[int, int]:
        """Digits of (first operand, second operand) at ``level``."""
        raise NotImplementedError

    def combine(self, a: int, b: int) -> int:
        """The true result of ``a <symbol> b``."""
        raise NotImplementedError

    def reference(self, a: int, b: int) -> str:
        """The reference response to ``a <symbol> b``, without EOS."""
        return write_number(self.combine(a, b), self.config.reverse)

    def judge_answer(self, body: str, a: int | None, b: int | None) -> Verdict:
        """Judge a digits-only response. ``a, b`` are None when the prompt could not be read.

        Well formed: 1 to ``MAX_ANSWER_DIGITS`` digits and nothing else. Correct: exactly the
        reference digits, so a padded ``"0975"`` or a space anywhere is wrong even though it
        names the same number; the task is to produce the canonical text.
        """
        if not _DIGITS.fullmatch(body):
            return Verdict(False, False, None, f"response {shorten(body)} is not a run of 1 to "
                                               f"{MAX_ANSWER_DIGITS} digits")
        answer = int(body[::-1] if self.config.reverse else body)
        if a is None or b is None:
            return Verdict(True, False, answer, "prompt not understood")
        expected = self.reference(a, b)
        if body != expected:
            return Verdict(True, False, answer, f"expected {expected!r}, got {shorten(body)}")
        return Verdict(True, True, answer, None)

    # ---- Task methods ----------------------------------------------------------------------

    def generate(self, rng: random.Random, level: int) -> Example:
        digits_a, digits_b = self.operand_digits(level)
        a, b = random_operand(rng, digits_a), random_operand(rng, digits_b)
        return Example(prompt=f"{a}{self.symbol}{b}=", answer=self.reference(a, b), level=level)

    def prompt_space_size(self, level: int) -> int:
        digits_a, digits_b = self.operand_digits(level)
        return operand_count(digits_a) * operand_count(digits_b)

    def max_answer_length(self, level: int) -> int:
        # The largest operands give the longest reference for add, mul and add_cot alike: more
        # carries and more digits never make an answer shorter. tests/test_tasks.py checks it.
        digits_a, digits_b = self.operand_digits(level)
        return len(self.reference(10 ** digits_a - 1, 10 ** digits_b - 1))

    def judge(self, prompt: str, body: str) -> Verdict:
        number = rf"([0-9]{{1,{MAX_OPERAND_DIGITS}}})"
        match = re.fullmatch(rf"{number}{re.escape(self.symbol)}{number}=", prompt)  # re caches it
        if match is None:
            verdict = self.judge_answer(body, None, None)
            error = (f"prompt {shorten(prompt)} is not of the form '<a>{self.symbol}<b>=' with "
                     f"1 to {MAX_OPERAND_DIGITS}-digit operands")
            return Verdict(verdict.format_ok, False, verdict.answer, error)
        return self.judge_answer(body, int(match.group(1)), int(match.group(2)))
