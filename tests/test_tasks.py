"""The toy tasks: registry, formats, held-out sets, and verifiers that never raise.

Answers are checked against independent oracles: Python's integer arithmetic for ``add`` and
``mul``, and for the countdown parser Python's own expression parser run on strings this test
generates (never on model text), over a number type that refuses inexact division.
"""

from __future__ import annotations

import functools
import os
import random
import re
import subprocess
import sys
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toy_tasks import ALPHABET, BOS, EOS, PAD, TASK_NAMES, Example, Task, make_task
from toy_tasks.expression import (MAX_DEPTH, ExpressionError, ExpressionSyntaxError, evaluate,
                                  numbers_used, parse, render)

FAST = settings(max_examples=100, deadline=None)


def samples(task: Task, n: int, seed: int = 0) -> list[Example]:
    rng = random.Random(seed)
    return [task.sample(rng) for _ in range(n)]


@pytest.fixture(scope="module", params=TASK_NAMES)
def task(request) -> Task:
    return make_task(request.param)


# ---- registry ----------------------------------------------------------------------------------

def test_registry_finds_every_task_by_name():
    assert {"add", "mul", "add_cot", "countdown"} <= set(TASK_NAMES)
    for name in TASK_NAMES:
        task = make_task(name)
        assert isinstance(task, Task) and task.name == name
        assert task.levels == tuple(task.default_levels)


def test_registry_errors_say_what_is_allowed():
    with pytest.raises(ValueError, match="allowed tasks: add"):
        make_task("subtract")
    with pytest.raises(ValueError, match=r"allowed levels of 'add': \(1, 2, 3, 4, 5, 6\)"):
        make_task("add", levels=(0,))
    with pytest.raises(ValueError, match="allowed levels"):
        make_task("countdown", levels=(1,))
    with pytest.raises(ValueError, match="must not be empty"):
        make_task("mul", levels=())
    with pytest.raises(ValueError, match="allowed levels"):
        make_task("add", levels=(True,))
    with pytest.raises(ValueError, match="allowed options: levels, format_bonus, eval_per_level, reverse"):
        make_task("add", revers=False)
    with pytest.raises(ValueError, match="no option 'reverse'"):
        make_task("add_cot", reverse=False)
    with pytest.raises(ValueError, match="format_bonus"):
        make_task("add", format_bonus="big")
    with pytest.raises(ValueError, match="reverse must be True or False"):
        make_task("mul", reverse="no")
    with pytest.raises(ValueError, match="max_number"):
        make_task("countdown", max_number=0)


def test_levels_are_normalised_and_checked_when_sampling():
    assert make_task("add", levels=2).levels == (2,)
    assert make_task("add", levels=[3, 1, 3]).levels == (1, 3)
    task = make_task("add", levels=(1, 2))
    assert task.sample(random.Random(0), level=2).level == 2
    with pytest.raises(ValueError, match="not one of this 'add' task's levels"):
        task.sample(random.Random(0), level=3)


# ---- formats -----------------------------------------------------------------------------------

def test_prompts_and_answers_use_only_the_alphabet(task):
    for ex in task.eval_set() + samples(task, 300):
        assert set(ex.prompt) <= set(ALPHABET), ex
        assert set(ex.answer) <= set(ALPHABET), ex
        assert ex.level in task.levels


def test_an_example_outside_the_alphabet_is_refused_at_the_source():
    with pytest.raises(ValueError, match="not in the task alphabet"):
        Example(prompt="1+1=", answer="two", level=1)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_max_new_tokens_fits_every_reference_answer_plus_eos(name):
    cls = type(make_task(name))
    for levels in (None, cls.allowed_levels):
        task = make_task(name, levels=levels)
        longest = max(len(ex.answer) for ex in samples(task, 400) + task.eval_set())
        assert longest + 1 <= task.max_new_tokens <= longest + 1 + 6


def test_add_answers_are_sums_in_every_writing():
    for reverse in (True, False):
        for reverse_operands, width in ((True, 3), (False, 0), (True, 0), (False, 4)):
            task = make_task("add", levels=(1, 2, 3, 4, 5, 6), reverse=reverse,
                             reverse_operands=reverse_operands, width=width)
            for ex in samples(task, 300) + task.eval_set():
                a, b = ex.prompt.removesuffix("=").split("+")
                for operand in (a, b):  # n digits (nonzero lead unless n == 1), zero-padded to width
                    normal = operand[::-1] if reverse_operands else operand
                    assert len(normal) == max(ex.level, width)
                    digits = normal.lstrip("0") or "0"
                    assert len(digits) == ex.level or (ex.level == 1 and digits == "0")
                total = int(a[::-1] if reverse_operands else a) + int(b[::-1] if reverse_operands else b)
                assert (ex.answer[::-1] if reverse else ex.answer) == str(total)


def test_add_default_writing_is_columns_first_and_padded():
    task = make_task("add")
    assert task.write_operand(123) == "321" and task.write_operand(58) == "850" and task.write_operand(5) == "500"
    assert task.reward("321+654=", "975" + EOS)[0] == 1.0      # 123 + 456 = 579
    assert task.reward("500+300=", "8" + EOS)[0] == 1.0        # 5 + 3
    assert task.reward("5+3=", "8" + EOS)[0] == 1.0            # unpadded prompts are read too
    assert task.reward("123+456=", "975" + EOS)[0] == 0.0      # read as 321 + 654 = 975 -> "579"
    assert task.reward("123+456=", "579" + EOS)[0] == 1.0
    school = make_task("add", reverse_operands=False, width=0, reverse=False)
    assert school.write_operand(58) == "58" and school.reward("123+456=", "579" + EOS)[0] == 1.0


def test_add_draws_the_widest_level_four_times_as_often_by_default():
    rng = random.Random(0)
    task = make_task("add")
    counts = Counter(task.sample(rng).level for _ in range(6000))
    assert abs(counts[3] / 6000 - 4 / 6) < 0.03 and abs(counts[1] / 6000 - 1 / 6) < 0.03
    even = make_task("add", level_weights=(1, 1, 1))
    counts = Counter(even.sample(rng).level for _ in range(6000))
    assert all(abs(counts[level] / 6000 - 1 / 3) < 0.03 for level in (1, 2, 3))
    assert {make_task("add", levels=(2,)).sample(rng).level for _ in range(20)} == {2}


def test_add_with_equal_level_weights_draws_levels_exactly_as_other_tasks_do():
    even = make_task("add", level_weights=(2, 2, 2))
    mine, base = random.Random(5), random.Random(5)
    assert [even.draw_level(mine) for _ in range(500)] == [Task.draw_level(even, base) for _ in range(500)]


@pytest.mark.parametrize("options, words", [
    ({"width": -1}, "width must be an int"), ({"width": 19}, "width must be an int"),
    ({"width": True}, "width must be an int"), ({"reverse_operands": "yes"}, "reverse_operands must be"),
    ({"level_weights": (1, -1, 1)}, "level_weights must be"), ({"level_weights": (0, 0, 0)}, "level_weights must be"),
    ({"level_weights": (1, float("nan"), 1)}, "level_weights must be"), ({"level_weights": 3}, "level_weights must be"),
    ({"level_weights": (1, 2)}, "one weight per level"),
])
def test_add_rejects_bad_writing_options(options, words):
    with pytest.raises(ValueError, match=words):
        make_task("add", **options)


def test_mul_answers_are_products_with_the_documented_shapes():
    shapes = {1: (1, 1), 2: (2, 1), 3: (3, 2), 4: (4, 3)}
    for reverse in (True, False):
        task = make_task("mul", levels=(1, 2, 3, 4), reverse=reverse)
        for ex in samples(task, 400):
            a, b = ex.prompt.removesuffix("=").split("*")
            assert (len(a), len(b)) == shapes[ex.level]
            assert (ex.answer[::-1] if reverse else ex.answer) == str(int(a) * int(b))


def test_add_examples_from_the_docstrings():
    assert make_task("add").reward("321+654=", "975" + EOS)[0] == 1.0
    assert make_task("add").reward("850+760=", "521" + EOS)[0] == 1.0
    assert make_task("add").reward("500+300=", "8" + EOS)[0] == 1.0
    assert make_task("add", reverse=False).reward("321+654=", "579" + EOS)[0] == 1.0
    assert make_task("mul").reward("123*45=", "5355" + EOS)[0] == 1.0
    assert make_task("add_cot").reward("58+67=", "8+7+0=15;5+6+1=12:125" + EOS)[0] == 1.0
    assert make_task("countdown").reward("3,5,7,8:24=", "(8-5)*7+3" + EOS)[0] == 1.0


def test_add_cot_steps_follow_the_columns():
    task = make_task("add_cot", levels=(1, 2, 3, 4))
    for ex in samples(task, 300):
        a, b = ex.prompt.removesuffix("=").split("+")
        steps, final = ex.answer.split(":")
        assert final == str(int(a) + int(b))
        carry = 0
        for i, step in enumerate(steps.split(";")):
            da, db, c, s = re.fullmatch(r"(\d)\+(\d)\+(\d)=(\d+)", step).groups()
            assert (da, db) == (a[::-1][i], b[::-1][i]) and int(c) == carry
            assert int(s) == int(da) + int(db) + carry
            carry = int(s) // 10


# ---- reward basics -----------------------------------------------------------------------------

def test_reference_answers_score_one_with_eos_and_zero_without(task):
    for ex in task.eval_set()[::7] + samples(task, 100):
        score, info = task.reward(ex.prompt, ex.answer + EOS)
        assert score == 1.0 and info["correct"] and info["format_ok"], (ex, info)
        assert info["answer"] is not None
        score, info = task.reward(ex.prompt, ex.answer)  # cut off before it ended
        assert score == 0.0 and not info["correct"] and not info["format_ok"]


def test_only_text_before_the_first_eos_is_read(task):
    for ex in samples(task, 50):
        assert task.reward(ex.prompt, ex.answer + EOS + "junk" + EOS + PAD * 3)[0] == 1.0
        assert task.reward(ex.prompt, "(" + EOS + ex.answer + EOS)[0] == 0.0
        assert task.reward(ex.prompt, EOS + ex.answer + EOS)[0] == 0.0


def test_junk_around_the_answer_is_not_correct(task):
    for ex in samples(task, 50):
        for bad in (ex.answer + " ", ex.answer + "\n", ex.answer + "=", ex.answer + "<|eos"):
            assert not task.reward(ex.prompt, bad + EOS)[1]["correct"], (ex, bad)
        for bad in (" " + ex.answer, BOS + ex.answer):
            _, info = task.reward(ex.prompt, bad + EOS)
            assert not info["format_ok"]
            # add_cot (and add_or_cot's steps form) read only what follows the last ':', so junk in front of the
            # steps is badly formed but not wrong; every other answer must be the answer and nothing else.
            reads_steps = task.name == "add_cot" or (task.name == "add_or_cot" and ":" in ex.answer)
            assert info["correct"] is reads_steps, (ex, bad)


def test_wrong_digits_are_wrong_even_when_they_name_the_same_number():
    task = make_task("add", reverse_operands=False)
    assert task.reward("50+50=", "001" + EOS)[0] == 1.0   # 100 reversed
    assert task.reward("50+50=", "0010" + EOS)[0] == 0.0  # padded
    assert task.reward("50+50=", "100" + EOS)[0] == 0.0   # usual order in a reversed task
    assert task.reward("12+34=", "64" + EOS)[0] == 1.0    # 46 reversed
    score, info = task.reward("12+34=", "74" + EOS)       # off by one
    assert score == 0.0 and info["format_ok"] and info["answer"] == 47


def test_format_bonus_is_added_for_well_formed_responses_right_or_wrong():
    task = make_task("add", format_bonus=0.5)
    assert task.reward("1+2=", "3" + EOS)[0] == 1.5
    assert task.reward("1+2=", "4" + EOS)[0] == 0.5
    assert task.reward("1+2=", "four" + EOS)[0] == 0.0
    assert task.reward("1+2=", "3")[0] == 0.0  # no EOS: neither correct nor well formed
    assert task.reward("not a prompt", "3" + EOS)[0] == 0.5  # well formed, but answers nothing


def test_add_cot_is_rewarded_only_on_its_final_answer():
    task = make_task("add_cot")
    good = "8+7+0=15;5+6+1=12:125"
    assert task.reward("58+67=", good + EOS)[0] == 1.0
    wrong_steps = "8+7+0=99;1+1+1=3:125"      # arithmetic in the steps is wrong
    score, info = task.reward("58+67=", wrong_steps + EOS)
    assert score == 1.0 and info["format_ok"]
    score, info = task.reward("58+67=", ":125" + EOS)  # no steps at all
    assert score == 1.0 and info["correct"] and not info["format_ok"]
    score, info = task.reward("58+67=", "8+7+0=15;5+6+1=12:126" + EOS)  # perfect steps, wrong sum
    assert score == 0.0 and info["format_ok"] and info["answer"] == 126
    assert task.reward("58+67=", "125" + EOS)[0] == 0.0            # the final answer needs its ':'
    assert task.reward("58+67=", good + ":" + EOS)[0] == 0.0        # trailing junk
    assert make_task("add_cot", format_bonus=1.0).reward("58+67=", ":125" + EOS)[0] == 1.0


# ---- the verifier never raises -----------------------------------------------------------------

PIECES = [EOS, BOS, PAD, "<|eos", "|>", "<|", *ALPHABET, "٣", "²", "é", "\x00", "\ud7ff", "🙂", "1_0",
          "eval(", "__import__('os')", "9" * 50, "(" * 30, ")" * 30]
odd_text = st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=40).map("".join)
any_text = st.text() | odd_text


@functools.lru_cache(maxsize=None)
def valid_prompts(name: str) -> list[str]:
    return [ex.prompt for ex in samples(make_task(name), 20)]


@pytest.mark.parametrize("name", TASK_NAMES)
@FAST
@given(data=st.data())
def test_reward_never_raises_on_any_strings(name, data):
    task = make_task(name, format_bonus=0.25)  # cheap: the eval set is built only when needed
    prompt = data.draw(any_text | st.sampled_from(valid_prompts(name)))
    completion = data.draw(any_text)
    score, info = task.reward(prompt, completion)
    assert isinstance(score, float) and score in (0.0, 0.25, 1.0, 1.25)
    assert {"correct", "format_ok", "answer"} <= set(info)
    assert isinstance(info["correct"], bool) and isinstance(info["format_ok"], bool)
    assert score == float(info["correct"]) + 0.25 * float(info["format_ok"])
    if EOS not in completion:
        assert score == 0.0


LONG = ["9" * 10_000, "(" * 5000 + "1" + ")" * 5000, "1+" * 5000 + "1", "1*" * 5000 + "1",
        "٣" * 10_000, "🙂" * 10_000, EOS * 10_000, "x" * 10_000 + EOS, "9" * 10_000 + EOS,
        ("8+7+0=15;" * 1200) + ":99999" + EOS, "1" + "0" * 9999 + EOS, ""]


@pytest.mark.parametrize("name", TASK_NAMES)
def test_reward_never_raises_on_very_long_or_empty_strings(name):
    task = make_task(name)
    for prompt in valid_prompts(name)[:2] + LONG:
        for completion in LONG:
            score, info = task.reward(prompt, completion)
            assert score == 0.0 and not info["correct"]
    assert task.reward(None, "1" + EOS)[0] == 0.0  # not even a str


# ---- held-out set ------------------------------------------------------------------------------

def test_eval_set_is_deterministic_and_covers_every_level(task):
    again = make_task(task.name).eval_set()
    assert again == task.eval_set()
    assert {ex.level for ex in again} == set(task.levels)
    prompts = [ex.prompt for ex in again]
    assert len(prompts) == len(set(prompts))


def test_eval_set_of_a_level_does_not_depend_on_the_other_levels():
    both = make_task("add", levels=(2, 3)).eval_set()
    assert [e for e in both if e.level == 2] == make_task("add", levels=(2,)).eval_set()


def test_eval_set_sizes_keep_most_of_a_small_level_for_training():
    counts = {}
    for ex in make_task("add").eval_set():
        counts[ex.level] = counts.get(ex.level, 0) + 1
    assert counts == {1: 20, 2: 200, 3: 200}  # 1-digit addition has only 100 prompts


def test_training_samples_never_use_an_eval_prompt(task):
    held_out = {ex.prompt for ex in task.eval_set()}
    train = samples(task, 3000, seed=1)
    assert not held_out & {ex.prompt for ex in train}


def test_small_levels_still_offer_most_prompts_for_training():
    train = {ex.prompt for ex in samples(make_task("add", levels=(1,)), 2000)}
    assert len(train) == 80  # all 100 prompts but the 20 held out


def test_the_same_seed_gives_the_same_samples(task):
    assert samples(task, 50, seed=7) == samples(task, 50, seed=7)
    assert samples(task, 50, seed=7) != samples(task, 50, seed=8)


def test_eval_set_is_the_same_in_a_fresh_process_with_another_hash_seed():
    code = ("from toy_tasks import make_task, TASK_NAMES\n"
            "print([e.prompt for n in TASK_NAMES for e in make_task(n).eval_set()])")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout.strip() == str([e.prompt for n in TASK_NAMES for e in make_task(n).eval_set()])


# ---- the countdown expression parser -----------------------------------------------------------

class ExactInt:
    """Oracle number: an integer whose division must come out whole (checked with Fraction)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __add__(self, other):
        return ExactInt(self.value + other.value)

    def __sub__(self, other):
        return ExactInt(self.value - other.value)

    def __mul__(self, other):
        return ExactInt(self.value * other.value)

    def __truediv__(self, other):
        if other.value == 0:
            raise ZeroDivisionError
        quotient = Fraction(self.value, other.value)
        if quotient.denominator != 1:
            raise ArithmeticError("inexact")
        return ExactInt(quotient.numerator)


def oracle(text: str) -> int:
    """Python's parser on a string this test built from digits, + - * / and parentheses."""
    assert re.fullmatch(r"[0-9+\-*/()]+", text)
    return eval(re.sub(r"[0-9]+", lambda m: f"ExactInt({m.group()})", text), {"ExactInt": ExactInt}).value


expressions = st.recursive(
    st.integers(0, 40).map(str),
    lambda inner: st.tuples(inner, st.sampled_from("+-*/"), inner).map("".join) | inner.map(lambda s: f"({s})"),
    max_leaves=8)


def nesting(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        deepest = max(deepest, depth)
    return deepest


@FAST
@given(expressions)
def test_parser_agrees_with_an_exact_integer_oracle(text):
    if nesting(text) > MAX_DEPTH:
        with pytest.raises(ExpressionSyntaxError):
            parse(text)
        return
    try:
        expected = oracle(text)
    except ArithmeticError:  # ZeroDivisionError included
        with pytest.raises(ExpressionError):
            evaluate(parse(text))
        return
    assert evaluate(parse(text)) == expected


@pytest.mark.parametrize("text, value", [
    ("2+3*4", 14), ("(2+3)*4", 20), ("8-3-2", 3), ("8-(3-2)", 7), ("8/4/2", 1), ("8/(4/2)", 4),
    ("3-8+9", 4), ("6/3*2", 4), ("2*6/4", 3), ("((7))", 7), ("0", 0), ("10*10", 100)])
def test_parser_precedence_and_grouping(text, value):
    assert evaluate(parse(text)) == value


@pytest.mark.parametrize("text", ["7/2", "1/0", "4/(2-2)", "6/4*2", "3/6"])
def test_only_exact_division_is_allowed(text):
    parse(text)  # well formed
    with pytest.raises(ExpressionError):
        evaluate(parse(text))


@pytest.mark.parametrize("text", [
    "", "3+", "+3", "-3", "3 + 4", "(3+4", "3+4)", "()", "3**2", "3//2", "03", "1_0", "3.5", "x",
    "٣", "²", "2(3)", "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1), "1234567",
    "1+" * 150 + "1", "3\n", "24=24"])
def test_parser_rejects_anything_outside_the_grammar(text):
    with pytest.raises(ExpressionSyntaxError):
        parse(text)


@FAST
@given(any_text)
def test_parser_raises_only_expression_errors(text):
    try:
        evaluate(parse(text))
    except ExpressionError:
        pass


@FAST
@given(expressions)
def test_render_keeps_the_value_and_the_numbers(text):
    if nesting(text) > MAX_DEPTH:
        return
    tree = parse(text)
    try:
        value = evaluate(tree)
    except ExpressionError:
        return
    assert evaluate(parse(render(tree))) == value
    assert sorted(numbers_used(parse(render(tree)))) == sorted(numbers_used(tree))
    assert len(render(tree)) <= len(text)


@pytest.mark.parametrize("prompt, response, correct", [
    ("3,5,7,8:24=", "(8-5)*7+3", True),
    ("3,5,7,8:24=", "3*8", True),
    ("3,5,7,8:24=", "8*3", True),
    ("3,5,7,8:24=", "24", False),          # 24 is not a given number
    ("3,5,7,8:24=", "8*3*1", False),       # neither is 1
    ("3,5,7,8:15=", "5+5+5", False),       # 5 is given once
    ("3,5,7,8:15=", "7+8", True),          # not every number has to be used
    ("2,2,5:9=", "2+2+5", True),           # a repeated number may be used as often as given
    ("2,2,5:9=", "5+2+2", True),
    ("3,5,7,8:4=", "8/(5-3)", True),
    ("3,5,7,8:2=", "7/3", False),          # inexact division
    ("3,5,7,8:1=", "8/(5-5)", False),      # division by zero, and 5 twice
    ("3,5,7,8:24=", "3 * 8", False),       # spaces are not in the grammar
    ("3,5,7,8:24=", "(3*8", False),
    ("3,5,7,8:24=", "3*8=24", False),
    ("3,5,7,8:24=", "__import__('os')", False),
])
def test_countdown_verifier(prompt, response, correct):
    task = make_task("countdown")
    score, info = task.reward(prompt, response + EOS)
    assert info["correct"] is correct and score == float(correct), info


def test_countdown_separates_format_from_correctness():
    task = make_task("countdown")
    assert task.reward("3,5,7,8:24=", "7/3" + EOS)[1]["format_ok"] is True
    assert task.reward("3,5,7,8:24=", "3+5" + EOS)[1] == {
        "correct": False, "format_ok": True, "answer": 8, "has_eos": True, "error": "value 8, target 24"}
    assert task.reward("3,5,7,8:24=", "3 +5" + EOS)[1]["format_ok"] is False


def test_countdown_references_are_self_consistent():
    task = make_task("countdown", levels=(2, 3, 4, 5))
    for ex in samples(task, 400) + task.eval_set():
        numbers_text, target_text = ex.prompt.removesuffix("=").split(":")
        numbers = [int(n) for n in numbers_text.split(",")]
        assert numbers == sorted(numbers) and len(numbers) == ex.level
        assert all(1 <= n <= 9 for n in numbers)
        target = int(target_text)
        assert 1 <= target <= 100 and target not in numbers
        assert oracle(ex.answer) == target
        used = numbers_used(parse(ex.answer))
        assert len(used) >= 2 and all(used.count(n) <= numbers.count(n) for n in used)


def test_add_or_cot_accepts_either_form_and_rewards_only_the_final_answer():
    task = make_task("add_or_cot")
    prompt, direct, steps = "850+760=", "521", "8+7+0=15;5+6+1=12:125"   # 58 + 67, written as add writes it
    for body in (direct, steps):
        score, info = task.reward(prompt, body + EOS)
        assert (score, info["correct"], info["format_ok"], info["answer"]) == (1.0, True, True, 125)
    assert (task.response_form(direct), task.response_form(steps)) == ("direct", "steps")
    # by what the answer holds: a colon with no column step before it is a direct answer, right or not
    assert [task.response_form(b) for b in (":1046", "1046:", "8+7+0=15:1046", "8+7+0=15;5+6")] == \
        ["direct", "direct", "steps", "direct"]
    assert task.reward(prompt, "125" + EOS)[0] == 0.0                  # the direct form ones digit first, as add
    assert make_task("add_or_cot", reverse=False).reward(prompt, "125" + EOS)[0] == 1.0
    assert make_task("add_or_cot", reverse_operands=False, width=0).reward("58+67=", steps + EOS)[0] == 1.0
    assert task.reward(prompt, "8+7+0=15;5+6+1=12:126" + EOS)[0] == 0.0
    _, info = task.reward(prompt, "1+1+1=1:125" + EOS)                  # steps are never checked, as in add_cot
    assert info["correct"] and info["format_ok"]
    assert not task.reward(prompt, "1+1=1:125" + EOS)[1]["format_ok"]  # ... but their shape is
    assert task.reward(prompt, "521")[0] == 0.0                         # no EOS: cut off, never right
    assert task.reward("x", "521" + EOS)[0] == 0.0 and task.reward("x", steps + EOS)[0] == 0.0
    assert task.reference(58, 67, "direct") == direct and task.reference(58, 67) == steps
    assert task.max_new_tokens == make_task("add_cot").max_new_tokens   # room for the longer form


def test_add_or_cot_draws_both_forms_in_the_share_asked_for_reproducibly():
    for share in (0.0, 0.3, 1.0):
        task = make_task("add_or_cot", levels=(3,), steps_share=share)
        rng = random.Random(5)
        forms = [task.response_form(task.sample(rng).answer) for _ in range(2000)]
        assert abs(forms.count("steps") / 2000 - share) < 0.04, (share, forms.count("steps"))
    again = make_task("add_or_cot")
    assert [again.sample(random.Random(1)) for _ in range(3)] == [make_task("add_or_cot").sample(random.Random(1))
                                                                  for _ in range(3)]
    for bad in (-0.1, 1.5, True, "half", float("nan")):
        with pytest.raises(ValueError, match="steps_share must be a number from 0"):
            make_task("add_or_cot", steps_share=bad)


def test_add_or_cot_lengths_differ_by_a_factor_of_about_seven_within_a_prompt():
    """The task's reason to exist: a group can hold a 4-token and a ~28-token answer to the same prompt."""
    task = make_task("add_or_cot", levels=(3,))
    rng = random.Random(0)
    assert task.sample(rng).prompt.count("+") == 1 and len(task.sample(rng).prompt) == 8   # "850+760="
    for _ in range(200):
        a, b = rng.randrange(100, 1000), rng.randrange(100, 1000)
        short, long = len(task.reference(a, b, "direct")) + 1, len(task.reference(a, b, "steps")) + 1   # + EOS
        assert 4 <= short <= 5 and 28 <= long <= 33 and long / short >= 5.6
