"""``add_or_cot``: addition answered either at once or with written column steps, rewarded on the answer.

    prompt  "58+67="
    answer  "521"                      direct: the sum, ones digit first as ``add`` writes it (3 tokens + EOS)
    answer  "8+7+0=15;5+6+1=12:125"    steps: ``add_cot``'s worked columns, then ":" and the sum (21 + EOS)

Both answers are right; the reward is 1 when the final answer is the sum, whichever form it takes. A
response that contains ``:`` is read as steps (only the text after the last ``:`` counts, exactly as in
``add_cot``); any other response must be the sum's digits and nothing else, ones digit first (``add``'s
rule, ``toy_tasks.base.write_number`` says why; ``reverse=False`` asks for the usual order instead).

Why this task exists: in every other task the responses to one prompt have nearly the same length, so
token-mean aggregation (each token weighs 1/N, so a response weighs |o_i|/N) and per-sequence aggregation
(each response weighs 1/B', so a token weighs 1/(B' |o_i|)) weigh a group's responses alike, and a loss
cannot show which one it uses. Here a group holds answers of 4 and of about 30 tokens to the same prompt,
so the two weightings differ by a factor of about 7 per token. Both forms are learnable by a small model
(the direct one is written ones digit first for that reason: in the usual order it stays near 0% and RL
drops it within a few iterations), so right answers of both lengths meet in one group, and which form RL
drifts to, and how fast, is what an aggregation decides.

The supervised references mix the forms: a share ``steps_share`` of training examples is written with
steps, the rest direct (drawn with the example's own random generator, so it is reproducible), and a warm
start writes both. ``response_form(body)`` says which form a response took; the trainer and the held-out
evaluation report each form's share and accuracy (``FORMS``). Levels are ``add_cot``'s: n-digit + n-digit,
operands in the usual order, 1-6, default (1, 2, 3).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import ClassVar

from .add_cot import AddCoTTask
from .base import (ArithmeticConfig, Example, Task, TaskConfig, Verdict, judge_digits, operand_count, prompt_error,
                   random_operand, read_operands, write_number)

FORMS = ("direct", "steps")
"""The two forms of a response, as ``response_form`` names them."""


@dataclass
class AddOrCoTConfig(ArithmeticConfig):
    """Options of ``add_or_cot``: ``reverse`` (the direct form's digit order; the steps form always ends in the usual
    order) and the share of supervised references written with steps."""

    steps_share: float = 0.5
    """Chance that a training example's reference answer is written with steps (else direct). It shapes only
    the supervised warm start; the reward accepts either form whatever this is."""

    def __post_init__(self) -> None:
        super().__post_init__()
        share = self.steps_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not math.isfinite(share) \
                or not 0 <= share <= 1:
            raise ValueError(f"steps_share must be a number from 0 (always direct) to 1 (always steps), got {share!r}")


class AddOrCoTTask(Task):
    """n-digit addition answered directly or with column steps (``add_cot``'s), rewarded on the final answer."""

    name = "add_or_cot"
    FORMS: ClassVar[tuple[str, ...]] = FORMS
    config_class: ClassVar[type[TaskConfig]] = AddOrCoTConfig
    default_levels = (1, 2, 3)
    allowed_levels = (1, 2, 3, 4, 5, 6)

    def __init__(self, config: AddOrCoTConfig | None = None) -> None:
        super().__init__(config)
        self._steps = AddCoTTask(TaskConfig(levels=self.levels))   # writes and judges the steps form

    def reference(self, a: int, b: int, form: str = "steps") -> str:
        """The reference response to ``a + b`` in ``form`` ("direct" or "steps"), without EOS."""
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {form!r}")
        return write_number(a + b, self.config.reverse) if form == "direct" else self._steps.reference(a, b)

    @staticmethod
    def response_form(body: str) -> str:
        """"steps" if the response (its text before EOS) holds a ``:``, else "direct": the form the verifier reads."""
        return "steps" if ":" in body else "direct"

    def generate(self, rng: random.Random, level: int) -> Example:
        a, b = random_operand(rng, level), random_operand(rng, level)
        form = "steps" if rng.random() < self.config.steps_share else "direct"
        return Example(prompt=f"{a}+{b}=", answer=self.reference(a, b, form), level=level)

    def prompt_space_size(self, level: int) -> int:
        return operand_count(level) ** 2

    def max_answer_length(self, level: int) -> int:
        return self._steps.max_answer_length(level)   # the steps form is the longer one

    def judge(self, prompt: str, body: str) -> Verdict:
        """A body with ``:`` is judged as ``add_cot`` judges it; any other must be exactly the sum's digits."""
        if self.response_form(body) == "steps":
            return self._steps.judge(prompt, body)
        operands = read_operands(prompt, "+")
        if operands is None:  # the response is still read, for format_ok and the logged answer
            verdict = judge_digits(body, None, self.config.reverse)
            return Verdict(verdict.format_ok, False, verdict.answer, prompt_error(prompt, "+"))
        return judge_digits(body, write_number(sum(operands), self.config.reverse), self.config.reverse)
