"""``add_or_cot``: addition answered either at once or with written column steps, rewarded on the answer.

    problem 58 + 67 = 125     prompt  "850+760="   (``add``'s prompt: operands zero-padded, ones digit first)
    answer  "521"                      direct: the sum, ones digit first as ``add`` writes it (3 tokens + EOS)
    answer  "8+7+0=15;5+6+1=12:125"    steps: ``add_cot``'s worked columns, then ":" and the sum (21 + EOS)

Both answers are right; the reward is 1 when the final answer is the sum, whichever form it takes. A
response that contains ``:`` is read as steps (only the text after the last ``:`` counts, exactly as in
``add_cot``, and the steps' shape decides ``format_ok``); any other response must be the sum's digits and
nothing else, as ``add`` judges it (its options ``reverse``, ``reverse_operands``, ``width`` apply).

Why this task exists: in every other task the responses to one prompt have nearly the same length, so
token-mean aggregation (each token weighs 1/N, so a response weighs |o_i|/N) and per-sequence aggregation
(each response weighs 1/B', so a token weighs 1/(B' |o_i|)) weigh a group's responses alike, and a loss
cannot show which one it uses. Here a group holds answers of 4 and of about 30 tokens to the same prompt,
so the two weightings differ by a factor of about 7 per token. Both forms must be learnable by a small model
for right answers of both lengths to meet in one group: with ``add_cot``'s usual-order prompt the direct form
stayed near 0% right while the steps form learned, and RL dropped the direct form within a few iterations. So
the prompt is written the way ``add`` writes it (``research/warm-start/README.md`` says why that format is
learnable); the steps read the operands' digits in the order the prompt gives them.

The supervised references mix the forms: a share ``steps_share`` of training examples is written with
steps, the rest direct (drawn with the example's own random generator, so it is reproducible), and a warm
start writes both. ``response_form(body)`` says which form a response took; the trainer and the held-out
evaluation report each form's share and accuracy (``FORMS``). Levels are ``add``'s (1-6, default (1, 2, 3)),
and training draws the widest level four times as often as each other one, as ``add`` does.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import ClassVar

from .add import AddConfig, AddTask
from .add_cot import AddCoTTask
from .base import Example, Task, TaskConfig, Verdict, operand_count, random_operand, read_operands

FORMS = ("direct", "steps")
"""The two forms of a response, as ``response_form`` names them."""


@dataclass
class AddOrCoTConfig(AddConfig):
    """Options of ``add_or_cot``: ``add``'s (how the prompt and the direct answer are written, level weights) and the
    share of supervised references written with steps. The steps form always ends in the usual digit order."""

    steps_share: float = 0.25
    """Chance that a training example's reference answer is written with steps (else direct). It shapes only
    the supervised warm start; the reward accepts either form whatever this is."""

    def __post_init__(self) -> None:
        super().__post_init__()
        share = self.steps_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not math.isfinite(share) \
                or not 0 <= share <= 1:
            raise ValueError(f"steps_share must be a number from 0 (always direct) to 1 (always steps), got {share!r}")


class AddOrCoTTask(Task):
    """n-digit addition answered directly (as ``add``) or with column steps (``add_cot``'s), rewarded on the answer."""

    name = "add_or_cot"
    FORMS: ClassVar[tuple[str, ...]] = FORMS
    config_class: ClassVar[type[TaskConfig]] = AddOrCoTConfig
    default_levels = (1, 2, 3)
    allowed_levels = (1, 2, 3, 4, 5, 6)

    def __init__(self, config: AddOrCoTConfig | None = None) -> None:
        super().__init__(config)
        c = self.config
        self._direct = AddTask(AddConfig(levels=self.levels, reverse=c.reverse, reverse_operands=c.reverse_operands,
                                         width=c.width, level_weights=c.level_weights))   # the prompt, the direct form
        self._steps = AddCoTTask(TaskConfig(levels=self.levels))                         # the steps form

    def reference(self, a: int, b: int, form: str = "steps") -> str:
        """The reference response to ``a + b`` in ``form`` ("direct" or "steps"), without EOS."""
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {form!r}")
        return self._direct.reference(a, b) if form == "direct" else self._steps.reference(a, b)

    @staticmethod
    def response_form(body: str) -> str:
        """The form a response (its text before EOS) holds: "steps" if it writes at least one column step (an ``=``)
        before its ``:``, else "direct". By what the answer holds, not by how the verifier reads it: ``:1046`` is read
        as ``add_cot`` reads an answer (and can be right), but it is four digits with no steps, a direct answer."""
        steps, colon, _ = body.partition(":")
        return "steps" if colon and "=" in steps else "direct"

    def draw_level(self, rng: random.Random) -> int:
        return self._direct.draw_level(rng)

    def generate(self, rng: random.Random, level: int) -> Example:
        a, b = random_operand(rng, level), random_operand(rng, level)
        form = "steps" if rng.random() < self.config.steps_share else "direct"
        prompt = f"{self._direct.write_operand(a)}+{self._direct.write_operand(b)}="
        return Example(prompt=prompt, answer=self.reference(a, b, form), level=level)

    def prompt_space_size(self, level: int) -> int:
        return operand_count(level) ** 2

    def max_answer_length(self, level: int) -> int:
        return self._steps.max_answer_length(level)   # the steps form is the longer one

    def judge(self, prompt: str, body: str) -> Verdict:
        """A body with ``:`` is judged as ``add_cot`` judges it (on the same numbers); any other as ``add`` does."""
        if self.response_form(body) == "direct":
            return self._direct.judge(prompt, body)
        operands = read_operands(prompt, "+", reverse=self.config.reverse_operands)
        # add_cot reads its operands in the usual order: hand it the same numbers written that way
        usual = prompt if operands is None else f"{operands[0]}+{operands[1]}="
        return self._steps.judge(usual, body)
