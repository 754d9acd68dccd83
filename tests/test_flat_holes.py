"""research/quickstart-lift/flat_holes.py: a warm start's tens or hundreds digit that ignores the operands (the tenth
round's check; its arm, the quickstart's ``--redraw-flat``, was rejected and left the package after f38078c)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "research" / "quickstart-lift"))
from flat_holes import (FLAT_P, FLAT_SPREAD, MIN_CLASS, DigitClass, digit_classes, probe_examples,  # noqa: E402
                        tv_spread)
from minitepo.model import GPT, ModelConfig
from minitepo.sft import IGNORE, make_batch
from minitepo.tokenizer import Tokenizer
from toy_tasks.base import read_operands

TOK = Tokenizer()
DIGITS = [TOK.encode(str(d))[0] for d in range(10)]


def naive_classes(model, prompts: int, temperature: float) -> dict[tuple[str, int], tuple[int, float, float]]:
    """The same reading, one prompt at a time and in plain Python: class -> (n, p, spread)."""
    task, examples = probe_examples(prompts)
    seen: dict[tuple[str, int], list[tuple[list[float], int]]] = {}
    model.eval()
    for ex in examples:
        ids = [TOK.bos_id] + TOK.encode(ex.prompt) + TOK.encode(ex.answer)
        with torch.no_grad():
            logits = model(torch.tensor([ids]))[0]
        start = 1 + len(ex.prompt)          # logits at start-1+k predict the answer's k-th token
        a, b = read_operands(ex.prompt, "+", reverse=True)
        carry = 0
        for k, name in ((1, "tens"), (2, "hundreds")):
            below = (a // 10 ** (k - 1)) % 10 + (b // 10 ** (k - 1)) % 10 + carry
            carry = below // 10
            weights = [float(torch.exp(logits[start - 1 + k, t] / temperature)) for t in range(TOK.vocab_size)]
            dist = [weights[t] / sum(weights) for t in DIGITS]
            seen.setdefault((name, below), []).append((dist, int(ex.answer[k])))
    out = {}
    for cls, members in seen.items():
        mean = [sum(d[j] for d, _ in members) / len(members) for j in range(10)]
        p = sum(d[right] for d, right in members) / len(members)
        spread = sum(0.5 * sum(abs(d[j] - mean[j]) for j in range(10)) for d, _ in members) / len(members)
        out[cls] = (len(members), p, spread)
    return out


def test_the_classes_equal_a_naive_one_prompt_at_a_time_reading():
    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=TOK.vocab_size, n_layer=1, n_head=2, n_embd=16))
    got = {(c.digit, c.below): (c.n, c.p, c.spread) for c in digit_classes(model, TOK, temperature=0.7, prompts=80)}
    want = naive_classes(model, 80, 0.7)
    assert set(got) == set(want)
    for cls, (n, p, spread) in want.items():
        assert got[cls][0] == n
        assert got[cls][1] == pytest.approx(p, abs=1e-5) and got[cls][2] == pytest.approx(spread, abs=1e-5)


class Oracle(torch.nn.Module):
    """A stand-in model that writes every answer digit with certainty, except the tens digit of prompts whose ones
    column sums to 10, where it writes the same uniform distribution whatever the operands: one flat hole."""

    def __init__(self, prompts: int):
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))    # a parameter, for the device
        _, examples = probe_examples(prompts)
        x, y = make_batch(examples, TOK, "cpu")
        self.targets = {tuple(row.tolist()): target for row, target in zip(x, y)}
        self.holes = {tuple(row.tolist()) for row, ex in zip(x, examples)
                      if sum(int(d) for d in (ex.prompt[0], ex.prompt.split("+")[1][0])) == 10}

    def forward(self, x):
        logits = torch.zeros(*x.shape, TOK.vocab_size)
        for i, row in enumerate(x):
            target = self.targets[tuple(row.tolist())]
            answer = (target != IGNORE).nonzero().flatten().tolist()
            for pos in answer:
                logits[i, pos, target[pos]] = 50.0
            if tuple(row.tolist()) in self.holes:
                logits[i, answer[1]] = 0.0
                logits[i, answer[1], DIGITS] = 5.0              # the ten digits alike: the operands are ignored
        return logits


def test_a_digit_that_ignores_the_operands_is_a_flat_hole_and_a_sure_one_is_not():
    classes = {(c.digit, c.below): c for c in digit_classes(Oracle(600), TOK, prompts=600)}
    hole = classes[("tens", 10)]
    assert hole.p == pytest.approx(0.1, abs=1e-3) and hole.spread == pytest.approx(0.0, abs=1e-6) and hole.flat
    others = [c for k, c in classes.items() if k != ("tens", 10) and c.n >= MIN_CLASS]
    assert others and all(c.p > 0.99 and not c.flat for c in others)


def test_the_flat_rule_needs_all_three_conditions():
    assert DigitClass("tens", 10, MIN_CLASS, FLAT_P - 0.01, FLAT_SPREAD - 0.01).flat
    assert not DigitClass("tens", 10, MIN_CLASS - 1, 0.1, 0.1).flat            # too few prompts to count
    assert not DigitClass("tens", 10, 100, FLAT_P, 0.1).flat                   # right often enough
    assert not DigitClass("tens", 10, 100, 0.1, FLAT_SPREAD).flat              # reads the operands: low, not flat


def test_the_spread_is_the_mean_total_variation_distance_from_the_classes_mean():
    same = torch.tensor([[0.1] * 10, [0.1] * 10])
    assert tv_spread(same) == 0.0                       # the same distribution whatever the prompt
    one_hot = torch.eye(10)[:2]                         # two prompts, each sure of another digit
    # naive: the mean is 0.5 on digits 0 and 1; each row is 0.5 away from it in total variation
    mean = [sum(row[d] for row in one_hot.tolist()) / 2 for d in range(10)]
    naive = sum(0.5 * sum(abs(row[d] - mean[d]) for d in range(10)) for row in one_hot.tolist()) / 2
    assert tv_spread(one_hot) == pytest.approx(naive) == pytest.approx(0.5)
