"""minitepo.lab.flat_holes (a warm start's tens or hundreds digit that ignores the operands) and the quickstart's
``--redraw-flat``, which draws another warm start when it finds one."""
from __future__ import annotations

import pytest
import torch

import minitepo.lab.quickstart as quickstart
from minitepo.lab.flat_holes import FLAT_P, FLAT_SPREAD, MIN_CLASS, DigitClass, digit_classes, probe_examples
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


# -- the quickstart's redraw loop, with its long stages replaced by stubs -------------------------------------

@pytest.fixture
def stubbed_quickstart(monkeypatch, tmp_path):
    """run_quickstart with a warm start that records its seed, an RL stage that returns at once, and a check whose
    answers the test scripts; returns (the seeds drawn, the script of check answers)."""
    drawn, answers = [], []

    def fake_warm_start(config, **_):
        drawn.append(config.seed)
        return {"steps": 10 * len(drawn), "seconds": 0.0, "accuracy": {"level/3": 0.3}, "settled": True,
                "checkpoint": f"draw{len(drawn)}"}

    def fake_rl(rl_config):
        assert rl_config.seed == drawn[0] and rl_config.init == f"draw{len(drawn)}"   # RL keeps the seed, last draw
        return {"interrupted": False, "start_accuracy": 0.3, "final": {"eval/greedy_acc/all": 0.9}, "iterations": 1}

    monkeypatch.setattr(quickstart, "warm_start", fake_warm_start)
    monkeypatch.setattr(quickstart, "train_rl", fake_rl)
    monkeypatch.setattr(quickstart, "plot_runs", lambda *a, **k: tmp_path / "plot.png")
    monkeypatch.setattr(quickstart, "load_model", lambda path, device: (path, TOK, {}))
    monkeypatch.setattr(quickstart, "find_flat_holes", lambda model, tok, temperature: answers.pop(0))
    return drawn, answers


HOLE = DigitClass("tens", 10, 279, 0.1, 0.08)


def config(tmp_path, redraws: int):
    return quickstart.QuickstartConfig(seed=7, device="cpu", out=str(tmp_path / "qs"), redraw_flat=redraws)


def test_without_redraw_the_check_never_runs(stubbed_quickstart, tmp_path):
    drawn, answers = stubbed_quickstart
    result = quickstart.run_quickstart(config(tmp_path, 0))
    assert drawn == [7] and result["warm_draws"] == 1


def test_a_flat_hole_draws_another_warm_start_with_a_distant_seed_and_rl_keeps_the_seed(stubbed_quickstart, tmp_path,
                                                                                       capsys):
    drawn, answers = stubbed_quickstart
    answers += [[HOLE], []]
    result = quickstart.run_quickstart(config(tmp_path, 2))
    assert drawn == [7, 7 + quickstart.REDRAW_STRIDE] and result["warm_draws"] == 2 and result["warm_steps"] == 20
    out = capsys.readouterr().out
    assert "flat hole in the warm start: the tens digit after a column summing to 10" in out
    assert "(warm start drawn 2 times)" in out and "still has a flat hole" not in out


def test_redraws_stop_at_the_limit_and_say_the_last_one_still_has_a_hole(stubbed_quickstart, tmp_path, capsys):
    drawn, answers = stubbed_quickstart
    answers += [[HOLE], [HOLE], [HOLE]]
    result = quickstart.run_quickstart(config(tmp_path, 2))
    assert drawn == [7, 7 + quickstart.REDRAW_STRIDE, 7 + 2 * quickstart.REDRAW_STRIDE]
    assert result["warm_draws"] == 3 and not answers
    assert "still has a flat hole" in capsys.readouterr().out


def test_redraw_flat_must_be_a_count():
    with pytest.raises(ValueError, match="--redraw-flat must be an integer >= 0"):
        quickstart.QuickstartConfig(redraw_flat=-1)
