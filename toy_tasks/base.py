"""What every toy task shares: examples, the EOS cut, the held-out set and the reward.

A task is three things:

1. a generator of ``(prompt, reference answer)`` pairs at a few difficulty *levels*;
2. a fixed held-out evaluation set whose prompts training never sees;
3. a verifier ``reward(prompt, completion) -> (score, info)`` that scores model text.

``Task`` implements the parts that are the same for every task (level bookkeeping, keeping
training away from the eval set, cutting a completion at EOS, turning a verdict into a score).
A concrete task fills in four small methods: ``generate``, ``prompt_space_size``,
``max_answer_length`` and ``judge``.

The reward is ``score = float(correct) + format_bonus * float(format_ok)``. Correctness and format
are kept apart on purpose: RL papers often add a small bonus for well-formed output, and a learner
should be able to switch it on and see what it does, while evaluation reads ``info["correct"]``
alone.

A completion is read only up to its first EOS text (``"<|eos|>"``). A completion with no EOS was
cut off by the length limit; it is never correct and never well formed, whatever it contains,
because stopping is part of the answer: a policy that does not learn to stop wastes every token
it is given, and a trainer that rewarded truncated text would teach it exactly that.

The end of this module holds the plain functions that the two-operand digit tasks (``add``,
``mul``, ``add_cot``) share: drawing operands, reading a ``"123+456="`` prompt, writing a number
reversed (``write_number`` says why) and judging a digits-only answer.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from .alphabet import ALPHABET, EOS

MAX_NEW_TOKENS_SLACK = 2
"""Extra response tokens beyond the longest reference answer (+ EOS). A policy that writes one or
two characters too many is then scored as wrong instead of being cut off, which is a clearer
learning signal than truncation."""

EVAL_SHARE_DENOMINATOR = 5
"""At most one prompt in this many of a level's prompt space goes to the held-out set, so small
levels (1-digit addition has only 100 prompts) keep most of their prompts for training."""

MAX_PROMPT_CHARS = 1000
"""Prompts longer than this are refused by every verifier before any parsing (no task makes
prompts anywhere near this long); it keeps the verifier's work bounded on arbitrary input."""

_EVAL_SEED = "minitepo-eval"
"""Seed prefix of the held-out set. It is a constant, not an option: the eval set of a task at a
level must be the same in every run so that numbers from different runs can be compared."""

_MAX_DRAWS = 100_000
"""Upper bound on generator calls before a task gives up drawing fresh prompts (it never comes
close in practice; the bound turns a would-be infinite loop into an error that explains itself)."""


@dataclass(frozen=True)
class Example:
    """One problem: what the model is shown and what a correct response looks like.

    ``answer`` is the reference completion *without* the EOS marker; supervised warm-up trains on
    ``answer`` followed by the EOS token. Both strings use only ``ALPHABET``, one token per
    character, which is checked here so that a task bug fails at the source.
    """

    prompt: str
    """The text the model is conditioned on, e.g. ``"123+456="``."""
    answer: str
    """One correct response (there may be others, e.g. in ``countdown``), without EOS."""
    level: int
    """The difficulty level this example was drawn at."""

    def __post_init__(self) -> None:
        check_alphabet(self.prompt, "prompt")
        check_alphabet(self.answer, "answer")


@dataclass(frozen=True)
class Verdict:
    """What a task's ``judge`` decides about one response body (the text before EOS)."""

    format_ok: bool
    """The body has the shape the task asks for (e.g. only digits), right or wrong."""
    correct: bool
    """The body is a right answer to the prompt."""
    answer: Any = None
    """The answer the task read from the body (an int for every built-in task), or None."""
    error: str | None = None
    """Why the response is not correct, in words, for logs and debugging; None when correct."""


@dataclass
class TaskConfig:
    """Options every task accepts; tasks with more options subclass this.

    ``make_task(name, levels, **options)`` builds the task's config from these fields, so every
    field is a command-line option of the task.
    """

    levels: tuple[int, ...] | None = None
    """Difficulty levels to draw from, e.g. ``(1, 2, 3)``; None means the task's default levels.
    What a level means is task specific (number of digits, numbers in the puzzle ...)."""
    format_bonus: float = 0.0
    """Reward added when the response is well formed, right or wrong. 0 gives the plain
    outcome reward ``float(correct)``."""
    eval_per_level: int = 200
    """Held-out prompts per level (fewer when a level has few prompts; see
    ``EVAL_SHARE_DENOMINATOR``)."""

    def __post_init__(self) -> None:
        bonus = self.format_bonus
        if isinstance(bonus, bool) or not isinstance(bonus, (int, float)) or not math.isfinite(bonus):
            raise ValueError(f"format_bonus must be a finite number (0.0 disables it), got {bonus!r}")
        if isinstance(self.eval_per_level, bool) or not isinstance(self.eval_per_level, int) \
                or self.eval_per_level < 1:
            raise ValueError(f"eval_per_level must be an int >= 1, got {self.eval_per_level!r}")


def check_alphabet(text: str, what: str = "text") -> None:
    """Raise a ValueError naming the first character of ``text`` that is not in ``ALPHABET``."""
    for ch in text:
        if ch not in ALPHABET:
            raise ValueError(f"{what} {text!r} contains {ch!r}, which is not in the task alphabet "
                             f"{ALPHABET!r}")


def split_at_eos(completion: str) -> tuple[str, bool]:
    """Return ``(text before the first EOS, whether an EOS was present)``.

    Everything after the first EOS is ignored: the sampler stops a response at its first EOS
    token, so anything later is padding or garbage the model never "said".
    """
    body, eos, _ = completion.partition(EOS)
    return body, bool(eos)


def shorten(text: str, limit: int = 40) -> str:
    """``repr`` of ``text``, cut to ``limit`` characters, for error messages about model output."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} chars)"


class Task:
    """Base class of the toy tasks. Subclasses set the class attributes and four methods.

    Subclass contract:

    * ``generate(rng, level) -> Example``: a random problem at ``level``, using only ``rng``.
    * ``prompt_space_size(level) -> int``: how many distinct prompts ``level`` has (a fair
      estimate is enough); it caps the eval set at a fifth of the level.
    * ``max_answer_length(level) -> int``: the longest reference answer at ``level``, in
      characters (= tokens).
    * ``judge(prompt, body) -> Verdict``: score the text before EOS. It must never raise, on any
      strings; ``reward`` handles EOS and the score.
    """

    name: ClassVar[str]
    """Registry name, e.g. ``"add"``."""
    config_class: ClassVar[type[TaskConfig]] = TaskConfig
    """The dataclass holding this task's options."""
    default_levels: ClassVar[tuple[int, ...]]
    """Levels used when the config says ``levels=None``."""
    allowed_levels: ClassVar[tuple[int, ...]]
    """Every level this task can generate."""
    exact_reference: ClassVar[bool] = False
    """True when the only correct response to a prompt is its reference answer (``Example.answer``), text for
    text, as for ``add`` and ``mul``; False where other responses can be right too (``countdown``)."""

    def __init__(self, config: TaskConfig | None = None) -> None:
        config = self.config_class() if config is None else config
        if not isinstance(config, self.config_class):
            raise TypeError(f"task {self.name!r} takes a {self.config_class.__name__}, "
                            f"got {type(config).__name__}")
        self.config = config
        self.levels: tuple[int, ...] = self._check_levels(config.levels)
        self.format_bonus = float(config.format_bonus)
        self._eval: tuple[Example, ...] | None = None
        self._eval_prompts: frozenset[str] = frozenset()

    # ---- the four methods a task implements ------------------------------------------------

    def generate(self, rng: random.Random, level: int) -> Example:
        raise NotImplementedError

    def prompt_space_size(self, level: int) -> int:
        raise NotImplementedError

    def max_answer_length(self, level: int) -> int:
        raise NotImplementedError

    def judge(self, prompt: str, body: str) -> Verdict:
        raise NotImplementedError

    # ---- shared machinery ------------------------------------------------------------------

    def draw_level(self, rng: random.Random) -> int:
        """The level of a training draw: uniform over ``self.levels`` (``add`` weighs its widest level more)."""
        return rng.choice(self.levels)

    @property
    def max_new_tokens(self) -> int:
        """Response-length limit in tokens, EOS included: the longest reference answer at the
        task's levels, plus one for EOS, plus ``MAX_NEW_TOKENS_SLACK``."""
        return max(self.max_answer_length(level) for level in self.levels) + 1 + MAX_NEW_TOKENS_SLACK

    def sample(self, rng: random.Random, level: int | None = None) -> Example:
        """A training example: a fresh problem whose prompt is not in the eval set.

        ``level=None`` draws the level with ``draw_level`` (uniform unless a task says otherwise). Only ``rng`` is used, so
        the same seed gives the same examples. Prompts that belong to the held-out set are
        rejected and redrawn; since at most a fifth of a level's prompts are held out, this costs
        a few extra draws at worst.
        """
        held_out = self._held_out_prompts()
        if level is None:
            level = self.draw_level(rng)
        elif level not in self.levels:
            raise ValueError(f"level {level!r} is not one of this {self.name!r} task's levels "
                             f"{self.levels}; build the task with levels=... to use it")
        for _ in range(_MAX_DRAWS):
            example = self.generate(rng, level)
            if example.prompt not in held_out:
                return example
        raise RuntimeError(f"task {self.name!r} drew {_MAX_DRAWS} prompts at level {level} that "
                           f"were all in the eval set; the level's prompt space is too small")

    def eval_set(self) -> list[Example]:
        """The fixed held-out set: for each level in ``self.levels``, up to ``eval_per_level``
        distinct prompts (at most a fifth of the level's prompts), drawn with a constant seed.

        The set for a level depends only on the task, its options and the level, never on the
        other levels chosen or on any training seed. It is built once and cached.
        """
        if self._eval is None:
            examples: list[Example] = []
            for level in self.levels:
                examples.extend(self._draw_eval_level(level))
            self._eval = tuple(examples)
            self._eval_prompts = frozenset(e.prompt for e in examples)
        return list(self._eval)

    def reward(self, prompt: str, completion: str) -> tuple[float, dict]:
        """Score ``completion`` (decoded model text) as a response to ``prompt``.

        Returns ``(score, info)`` with ``score = float(correct) + format_bonus * float(format_ok)``
        and ``info`` holding ``correct``, ``format_ok``, ``answer`` (what was read, or None),
        ``has_eos`` and ``error`` (why it is not correct, or None). Never raises: any strings,
        however odd, get a score (0 for anything that is not a valid response).
        """
        if not isinstance(prompt, str) or not isinstance(completion, str):
            verdict, has_eos = Verdict(False, False, None, "prompt and completion must be str"), False
        else:
            body, has_eos = split_at_eos(completion)
            if len(prompt) > MAX_PROMPT_CHARS:
                verdict = Verdict(False, False, None, f"prompt longer than {MAX_PROMPT_CHARS} chars")
            else:
                verdict = self.judge(prompt, body)
            if not has_eos:
                # Truncated text: see the module docstring for why it can never count.
                verdict = Verdict(False, False, verdict.answer,
                                  "no EOS: the response was cut off before it ended")
        info = {"correct": verdict.correct, "format_ok": verdict.format_ok,
                "answer": verdict.answer, "has_eos": has_eos, "error": verdict.error}
        score = float(verdict.correct) + self.format_bonus * float(verdict.format_ok)
        return score, info

    def __repr__(self) -> str:
        options = ", ".join(f"{f.name}={getattr(self.config, f.name)!r}"
                            for f in fields(self.config) if f.name != "levels")
        return f"{type(self).__name__}(levels={self.levels}, {options})"

    # ---- helpers ---------------------------------------------------------------------------

    def _check_levels(self, levels: Any) -> tuple[int, ...]:
        allowed = f"allowed levels of {self.name!r}: {self.allowed_levels}"
        if levels is None:
            return tuple(self.default_levels)
        if isinstance(levels, int) and not isinstance(levels, bool):
            levels = (levels,)
        try:
            levels = tuple(levels)
        except TypeError:
            raise ValueError(f"levels must be a tuple of ints or None, got {levels!r}; {allowed}") from None
        if not levels:
            raise ValueError(f"levels must not be empty; {allowed}")
        for level in levels:
            if isinstance(level, bool) or not isinstance(level, int) or level not in self.allowed_levels:
                raise ValueError(f"level {level!r} is not allowed; {allowed}")
        return tuple(sorted(set(levels)))

    def _held_out_prompts(self) -> frozenset[str]:
        if self._eval is None:
            self.eval_set()
        return self._eval_prompts

    def _draw_eval_level(self, level: int) -> list[Example]:
        want = min(self.config.eval_per_level,
                   max(1, self.prompt_space_size(level) // EVAL_SHARE_DENOMINATOR))
        rng = random.Random(f"{_EVAL_SEED}/{self.name}/{level}")
        chosen: dict[str, Example] = {}
        for _ in range(_MAX_DRAWS):
            example = self.generate(rng, level)
            chosen.setdefault(example.prompt, example)
            if len(chosen) == want:
                return list(chosen.values())
        raise RuntimeError(f"task {self.name!r} found only {len(chosen)} distinct prompts at level "
                           f"{level}, wanted {want}; lower eval_per_level")


# ---- two-operand digit problems: add, mul and add_cot ----------------------------------------
#
# Their prompt is "<a><op><b>=" with both operands written normally, e.g. "123+456=". A level
# fixes how many digits each operand has; an n-digit operand has a nonzero leading digit, except
# that a 1-digit operand is any of 0-9. Their verifiers accept any prompt of this shape (operands
# of up to MAX_OPERAND_DIGITS digits), not only the ones the generator makes.

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


def read_operands(prompt: str, symbol: str, reverse: bool = False) -> tuple[int, int] | None:
    """``(a, b)`` from a prompt ``<a><symbol><b>=`` whose operands have 1 to
    ``MAX_OPERAND_DIGITS`` digits (read least-significant digit first when ``reverse``), or None
    for any other text."""
    number = rf"([0-9]{{1,{MAX_OPERAND_DIGITS}}})"
    match = re.fullmatch(rf"{number}{re.escape(symbol)}{number}=", prompt)  # re caches it
    if match is None:
        return None
    a, b = match.group(1), match.group(2)
    return (int(a[::-1]), int(b[::-1])) if reverse else (int(a), int(b))


def prompt_error(prompt: str, symbol: str) -> str:
    """The verdict's error for a prompt that ``read_operands`` cannot read."""
    return (f"prompt {shorten(prompt)} is not of the form '<a>{symbol}<b>=' with "
            f"1 to {MAX_OPERAND_DIGITS}-digit operands")


def judge_digits(body: str, expected: str | None, reverse: bool) -> Verdict:
    """Judge a digits-only response against the reference text ``expected`` (None when the
    prompt could not be read: the response is then read but never correct).

    Well formed: 1 to ``MAX_ANSWER_DIGITS`` digits and nothing else. Correct: exactly the
    reference digits, so a padded ``"0975"`` or a space anywhere is wrong even though it names
    the same number; the task is to produce the canonical text. The answer read is the number
    the digits name, un-reversed when ``reverse``.
    """
    if not _DIGITS.fullmatch(body):
        return Verdict(False, False, None, f"response {shorten(body)} is not a run of 1 to "
                                           f"{MAX_ANSWER_DIGITS} digits")
    answer = int(body[::-1] if reverse else body)
    if expected is None:
        return Verdict(True, False, answer, "prompt not understood")
    if body != expected:
        return Verdict(True, False, answer, f"expected {expected!r}, got {shorten(body)}")
    return Verdict(True, True, answer, None)
