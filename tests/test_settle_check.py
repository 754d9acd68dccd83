"""The warm start's settle check (``minitepo.lab.sft_run.settle_accuracy``) reads greedy accuracy from one
teacher-forced pass when that is sure; it must give greedy decoding's number exactly, or decode."""
from __future__ import annotations

import random

import pytest
import torch

import minitepo.lab.sft_run as sft_run
from minitepo.evaluate import greedy_accuracy
from minitepo.lab.checkpoint import load_model
from minitepo.optim import make_optimizer
from minitepo.sft import SupervisedConfig, steps
from toy_tasks import TASK_NAMES, make_task


@pytest.fixture
def decodes(monkeypatch):
    """Counts the calls that fell back to decoding."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return greedy_accuracy(*args, **kwargs)
    monkeypatch.setattr(sft_run, "greedy_accuracy", counted)
    return calls


def test_it_is_greedy_accuracy_along_a_training_run_and_mostly_without_decoding(warm_start, decodes):
    model, tokenizer, _ = load_model(warm_start)
    task = make_task("add", levels=(1, 2))
    levels = {level: [e for e in task.eval_set() if e.level == level] for level in task.levels}
    config = SupervisedConfig(steps=60, batch_size=16, lr=3e-3)
    checked = 0
    for record, _ in steps(model, tokenizer, task, config, optimizer=make_optimizer(model, config.lr, 0.0),
                           rng=random.Random(0), precision="fp32"):
        if record["step"] % 15 == 0:
            for examples in levels.values():
                fast = sft_run.settle_accuracy(model, tokenizer, task, examples, "fp32")
                assert fast == greedy_accuracy(model, tokenizer, task, examples=examples, precision="fp32")["all"]
                checked += 1
    assert checked == 8 and len(decodes) < checked // 2   # the teacher-forced reading did most of the work


def test_a_near_tie_decodes(warm_start, decodes):
    model, tokenizer, _ = load_model(warm_start)
    with torch.no_grad():
        model.ln_f.weight.zero_()   # the last LayerNorm gives 0, so every logit is 0: every position is a tie
        model.ln_f.bias.zero_()
    task = make_task("add", levels=(1,))
    examples = task.eval_set()
    assert sft_run.settle_accuracy(model, tokenizer, task, examples, "fp32") == \
        greedy_accuracy(model, tokenizer, task, examples=examples, precision="fp32")["all"]
    assert decodes == [1]


@pytest.mark.parametrize("case", ["other answers count", "bf16"])
def test_it_decodes_where_the_reading_does_not_hold(warm_start, decodes, case):
    model, tokenizer, _ = load_model(warm_start)
    task = make_task("countdown") if case == "other answers count" else make_task("add", levels=(1,))
    precision = "bf16" if case == "bf16" else "fp32"
    examples = task.eval_set()[:20]
    assert sft_run.settle_accuracy(model, tokenizer, task, examples, precision) == \
        greedy_accuracy(model, tokenizer, task, examples=examples, precision=precision)["all"]
    assert decodes == [1]


@pytest.mark.parametrize("name", TASK_NAMES)
def test_a_task_that_says_exact_reference_accepts_its_reference_and_nothing_else(name):
    task = make_task(name)
    for example in task.eval_set()[:50]:
        assert task.judge(example.prompt, example.answer).correct, (name, example)
        if task.exact_reference:   # one changed character is wrong, whatever number it names
            for other in {example.answer + "0", example.answer[:-1], "0" + example.answer} - {example.answer}:
                assert not task.judge(example.prompt, other).correct, (name, example, other)


def test_greedy_verdicts_are_decided_up_to_the_first_departure_and_only_when_sure():
    answer = torch.tensor([[False, True, True, True, False]] * 2)     # one prompt token, three answer tokens, padding
    sure = 10 * sft_run.SURE_MARGIN

    def verdicts(*rows):
        return sft_run.greedy_verdicts(torch.tensor(rows, dtype=torch.float32), answer)

    right, wrong = [0.0, sure, sure, sure, 0.0], [0.0, sure, -sure, sure, 0.0]
    assert verdicts(right, wrong).tolist() == [True, False]
    # after the first departure greedy never sees the reference again, so a near-tie there changes nothing
    assert verdicts(right, [0.0, sure, -sure, 0.0, 0.0]).tolist() == [True, False]
    # a near-tie at or before the departure could go either way when decoding rounds differently: not sure
    assert verdicts(right, [0.0, sure, -sft_run.SURE_MARGIN / 2, sure, 0.0]) is None
    assert verdicts(right, [0.0, sft_run.SURE_MARGIN / 2, -sure, sure, 0.0]) is None
    assert verdicts([0.0, sure, sure, sft_run.SURE_MARGIN, 0.0], wrong) is None
    # prompt and padding positions are not answer positions, whatever their margin
    assert verdicts([-sure, sure, sure, sure, 0.0], wrong).tolist() == [True, False]
