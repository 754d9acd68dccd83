"""``countdown``: reach a target with + - * / and parentheses, using each given number at most once.

    prompt  "3,5,7,8:24="     (the numbers in increasing order, ":", the target, "=")
    answer  "(8-5)*7+3"       (one of many correct answers; "3*8" is another)

Level n gives n numbers, each from 1 to ``max_number`` (repeats possible: "2,2,5:9="). Levels
2-5 are allowed, (3, 4) is the default. The numbers are printed sorted so that one puzzle has one
prompt string; otherwise "3,5,7,8:24=" could be trained on while "8,7,5,3:24=" is held out.

A response is correct when it is an expression in the grammar of ``toy_tasks.expression`` whose
literals are a sub-multiset of the given numbers (each number at most as often as it is given;
not all need be used), where every division is exact, and whose value is the target. It is well
formed (``format_ok``) when it parses, whatever its value. The verifier parses the response with
its own parser and never evaluates it as Python.

Training examples are built backwards so that their reference answer is right by construction:
draw the numbers, pick a random subset of at least two, combine them with a random expression
tree, and keep the tree if every division in it is exact and its value is a whole number from 1
to ``max_target`` that is not itself one of the numbers (so no puzzle is solved by copying a
number). That value becomes the target and the expression the reference answer.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from .base import Example, Task, TaskConfig, Verdict, shorten
from .expression import (OPERATORS, ExpressionError, ExpressionSyntaxError, Tree, evaluate, numbers_used,
                         parse, render)

_PROMPT = re.compile(r"([0-9]{1,4}(?:,[0-9]{1,4}){0,9}):([0-9]{1,6})=")
"""What the verifier accepts as a prompt: 1 to 10 numbers, a target, "=". Generous on purpose:
the verifier should score any well-posed puzzle, not only the generator's."""

_MAX_TRIES = 10_000


@dataclass
class CountdownConfig(TaskConfig):
    """Options of ``countdown``."""

    max_number: int = 9
    """Given numbers are drawn from 1..max_number. 9 keeps every number a single token."""
    max_target: int = 100
    """Targets are whole numbers from 1..max_target."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, low, high in (("max_number", 1, 99), ("max_target", 1, 9999)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{name} must be an int from {low} to {high}, got {value!r}")


def random_tree(rng: random.Random, leaves: list[int]) -> Tree:
    """A random binary expression tree over ``leaves`` in the given order: a uniform split point
    and a uniform operator at every node."""
    if len(leaves) == 1:
        return leaves[0]
    split = rng.randint(1, len(leaves) - 1)
    return (rng.choice(OPERATORS), random_tree(rng, leaves[:split]), random_tree(rng, leaves[split:]))


def write_prompt(numbers: list[int], target: int) -> str:
    """``"3,5,7,8:24="``: sorted numbers, ``:``, target, ``=``."""
    return ",".join(str(n) for n in sorted(numbers)) + f":{target}="


class CountdownTask(Task):
    """Countdown puzzles with n numbers at level n; options in CountdownConfig."""

    name = "countdown"
    config_class: ClassVar[type[TaskConfig]] = CountdownConfig
    default_levels = (3, 4)
    allowed_levels = (2, 3, 4, 5)

    def generate(self, rng: random.Random, level: int) -> Example:
        max_number, max_target = self.config.max_number, self.config.max_target
        for _ in range(_MAX_TRIES):
            numbers = [rng.randint(1, max_number) for _ in range(level)]
            chosen = rng.sample(numbers, rng.randint(2, level))
            tree = random_tree(rng, chosen)
            try:
                target = evaluate(tree)
            except ExpressionError:  # an inexact or zero division: draw again
                continue
            if 1 <= target <= max_target and target not in numbers:
                return Example(prompt=write_prompt(numbers, target), answer=render(tree), level=level)
        raise RuntimeError(f"countdown found no puzzle at level {level} with max_number={max_number}"
                           f" and max_target={max_target} in {_MAX_TRIES} tries (a target must be "
                           f"1..max_target and not one of the numbers); raise max_target or max_number")

    def prompt_space_size(self, level: int) -> int:
        # A rough count: multisets of numbers times a guess at how many targets each reaches
        # (4 per operation, capped by the target range). It only sizes the eval set.
        multisets = math.comb(self.config.max_number + level - 1, level)
        return multisets * min(self.config.max_target, 4 ** (level - 1))

    def max_answer_length(self, level: int) -> int:
        # n literals, n-1 operators, and at most one pair of parentheses around each operation but
        # the outermost: any such expression over the numbers fits, not only the reference.
        digits = len(str(self.config.max_number))
        return level * digits + (level - 1) + 2 * max(level - 2, 0)

    def judge(self, prompt: str, body: str) -> Verdict:
        try:
            tree = parse(body)
        except ExpressionSyntaxError as err:
            return Verdict(False, False, None, f"response {shorten(body)} is not an expression: {err}")
        try:
            value = evaluate(tree)
        except ExpressionError as err:
            return Verdict(True, False, None, str(err))
        match = _PROMPT.fullmatch(prompt)
        if match is None:
            return Verdict(True, False, value, f"prompt {shorten(prompt)} is not of the form "
                                               f"'3,5,7,8:24=' (numbers, ':', target, '=')")
        given = Counter(int(n) for n in match.group(1).split(","))
        extra = Counter(numbers_used(tree)) - given
        if extra:
            return Verdict(True, False, value, f"uses {sorted(extra.elements())} beyond the given "
                                               f"numbers {sorted(given.elements())} (each at most once)")
        target = int(match.group(2))
        if value != target:
            return Verdict(True, False, value, f"value {value}, target {target}")
        return Verdict(True, True, value, None)
