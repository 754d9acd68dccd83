"""The supervised warm start and the command line, each exercised end to end with a tiny budget.

One 30-step SFT run (a 1-layer, 32-wide model on 1-digit addition; a few seconds on a CPU) is
shared by every test that needs a run folder. Resuming works on a copy, so tests stay independent.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import shutil

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from minitepo.evaluate import pass_at_k_estimate
from minitepo.lab.checkpoint import load_checkpoint
from minitepo.lab.cli import main
from minitepo.lab.config import field_docs
from minitepo.lab.runs import read_metrics
from minitepo.lab.sft_run import SFTConfig, train_sft
from minitepo.sft import IGNORE, make_batch
from minitepo.tokenizer import Tokenizer
from toy_tasks import ALPHABET, TASK_NAMES, Example, make_task

TOK = Tokenizer()
TINY = dict(task="add", levels="1", batch_size=16, eval_every=15, n_layer=1, n_head=2, n_embd=32, device="cpu",
            progress=False)
TINY_FLAGS = ["--steps", "1", "--batch-size", "2", "--n-layer", "1", "--n-head", "2",
              "--n-embd", "16", "--no-progress"]


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("sft")
    result = train_sft(SFTConfig(steps=30, out=str(out), **TINY))
    return out, result


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def one_line_error(capsys, command: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"minitepo {command}: error: "), err
    assert "\n" not in err, f"expected one line, got:\n{err}"
    assert "Traceback" not in err
    return err


# ---- supervised training -------------------------------------------------------------------------------

def test_a_tiny_sft_run_writes_its_checkpoint_config_and_metrics(sft_run):
    out, result = sft_run
    assert {p.name for p in out.iterdir()} >= {"checkpoint.pt", "config.json", "metrics.jsonl"}
    config = json.loads((out / "config.json").read_text())
    assert config["kind"] == "sft" and config["steps"] == 30 and config["task"] == "add"
    records = read_jsonl(out / "metrics.jsonl")
    evals = [r for r in records if "eval/greedy_acc/all" in r]
    assert [r["step"] for r in evals] == [15, 30]
    for r in evals:
        assert 0.0 <= r["eval/greedy_acc/all"] <= 1.0 and "eval/greedy_acc/level/1" in r
    assert all(math.isfinite(r["losses/sft"]) for r in records)
    assert load_checkpoint(out)["step"] == 30


def test_train_sft_returns_held_out_accuracy_overall_and_per_level(sft_run):
    _, result = sft_run
    assert result["steps"] == 30
    assert set(result["accuracy"]) == {"all", "level/1"}
    assert all(0.0 <= v <= 1.0 for v in result["accuracy"].values())
    assert [h["step"] for h in result["history"]] == [15, 30]


def test_the_loss_goes_down_over_a_tiny_run(sft_run):
    out, _ = sft_run
    losses = [r["losses/sft"] for r in read_jsonl(out / "metrics.jsonl")]
    assert losses[-1] < losses[0]


def test_resuming_continues_from_the_checkpoint_to_the_new_step_count(sft_run, tmp_path):
    out, _ = sft_run
    copy = tmp_path / "resumed"
    shutil.copytree(out, copy)
    result = train_sft(SFTConfig(steps=40, out=str(copy), resume=True, **TINY))
    assert result["steps"] == 40
    assert load_checkpoint(copy)["step"] == 40
    steps = [r["step"] for r in read_jsonl(copy / "metrics.jsonl")]
    assert steps == sorted(set(steps)), "no step is logged twice"
    assert [r["step"] for r in read_jsonl(copy / "metrics.jsonl") if "eval/greedy_acc/all" in r] == [15, 30, 40]
    assert [h["step"] for h in result["history"]] == [40]


def test_sft_config_refuses_impossible_values_naming_the_flag():
    with pytest.raises(ValueError, match="--eval-every must be an integer >= 1, got 0"):
        SFTConfig(eval_every=0)
    with pytest.raises(ValueError, match="--lr must be a finite number > 0, got 0.0"):
        SFTConfig(lr=0.0)
    with pytest.raises(ValueError, match=r"--settle-at must be a finite number > 0 and <= 1 \(an accuracy\), got 1.5"):
        SFTConfig(settle_at=1.5)


# ---- make_batch ---------------------------------------------------------------------------------------------

examples = st.lists(st.builds(Example, st.text(ALPHABET, max_size=10), st.text(ALPHABET, max_size=6), st.just(1)),
                    min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(examples)
def test_sft_targets_ignore_the_prompt_and_teach_the_answer_then_eos(batch):
    x, y = make_batch(batch, TOK, "cpu")
    width = max(len(ex.prompt) + len(ex.answer) + 1 for ex in batch)  # BOS prompt answer (EOS is only a target)
    assert x.shape == y.shape == (len(batch), width)
    for i, ex in enumerate(batch):
        p, a = TOK.encode(ex.prompt), TOK.encode(ex.answer)
        row = [TOK.bos_id] + p + a
        pad = width - len(row)
        assert x[i].tolist() == row + [TOK.pad_id] * pad
        # Position j predicts token j + 1: the prompt's characters are context, never targets.
        assert y[i].tolist() == [IGNORE] * len(p) + a + [TOK.eos_id] + [IGNORE] * pad


def test_sft_targets_are_the_inputs_shifted_by_one_where_they_count():
    x, y = make_batch([Example("12+3=", "15", 1)], TOK, "cpu")
    counted = y[0] != IGNORE
    assert TOK.decode(y[0][counted]) == "15<|eos|>"
    assert TOK.decode(x[0]) == "<|bos|>12+3=15"


# ---- the command line ---------------------------------------------------------------------------------------------

def test_tasks_lists_every_task_by_name_with_its_whole_description_in_plain_text(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    headings = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert [h.split()[0] for h in headings] == list(TASK_NAMES)
    assert "``" not in out
    assert "The reward reads only the text after the last :" in out  # add_cot's description, whole


def test_sft_help_documents_every_config_field_with_its_dashed_flag_and_docstring(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # no wrapping, so docstrings appear whole
    with pytest.raises(SystemExit) as exit_info:
        main(["sft", "--help"])
    assert exit_info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--eval-every" in out
    docs = field_docs(SFTConfig)
    for field in dataclasses.fields(SFTConfig):
        flag = "--" + field.name.replace("_", "-")
        assert flag in out, flag
        assert docs[field.name] in out, f"{flag}: {docs[field.name]!r}"


def test_eval_prints_held_out_accuracy_per_level(sft_run, capsys):
    out, _ = sft_run
    assert main(["eval", str(out / "checkpoint.pt"), "--task", "add", "--device", "cpu", "--pass-k", "2"]) == 0
    printed = capsys.readouterr().out
    n_held_out = len(make_task("add", levels=(1,)).eval_set())
    assert f"task add, {n_held_out} held-out prompts, greedy exact match:" in printed
    rows = dict(line.split()[:2] for line in printed.splitlines()[1:] if line.startswith("  "))
    assert set(rows) == {"all", "level/1", "pass@2"}, "levels default to the checkpoint's"
    assert all(0.0 <= float(v) <= 1.0 for v in rows.values())


def test_eval_accepts_a_run_folder_and_finds_the_task_in_the_checkpoint(sft_run, capsys):
    out, _ = sft_run
    assert main(["eval", str(out), "--device", "cpu"]) == 0
    assert "task add," in capsys.readouterr().out


def test_an_unknown_task_is_exit_code_2_with_one_line_and_no_run_folder(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["sft", "--task", "nope", "--levels", "1", *TINY_FLAGS, "--device", "cpu", "--out", str(out)]) == 2
    err = one_line_error(capsys, "sft")
    assert "unknown task 'nope'" in err and "allowed tasks: add" in err
    assert not out.exists(), "nothing is written before the input is checked"


def test_bad_levels_are_exit_code_2_with_one_line(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["sft", "--levels", "x", *TINY_FLAGS, "--device", "cpu", "--out", str(out)]) == 2
    assert "levels must be comma-separated integers" in one_line_error(capsys, "sft")
    assert not out.exists()


def test_an_unknown_device_is_exit_code_2_with_one_line(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["sft", *TINY_FLAGS, "--device", "tpu", "--out", str(out)]) == 2
    assert "unknown device 'tpu'; choose one of auto, cpu, cuda, mps" in one_line_error(capsys, "sft")
    assert not out.exists()


def test_eval_of_a_missing_checkpoint_is_exit_code_2_saying_it_does_not_exist(tmp_path, capsys):
    assert main(["eval", str(tmp_path / "missing.pt"), "--device", "cpu"]) == 2
    assert "does not exist" in one_line_error(capsys, "eval")


def test_rl_with_an_unknown_objective_is_exit_code_2_naming_the_choices(sft_run, capsys):
    out, _ = sft_run
    assert main(["rl", "--algo", "nope", "--init", str(out / "checkpoint.pt")]) == 2
    err = one_line_error(capsys, "rl")
    assert "unknown objective 'nope'" in err and "tepo" in err


def test_an_unknown_subcommand_is_an_argparse_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'train'" in capsys.readouterr().err


# ---- pass@k -------------------------------------------------------------------------------------------------------

def pass_at_k_by_enumeration(n: int, c: int, k: int) -> float:
    """Fraction of all k-subsets of n samples (the first c correct) that hold at least one correct sample."""
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(i < c for i in s) for s in subsets) / len(subsets)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 9).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_the_pass_at_k_estimate_equals_the_chance_a_random_k_subset_holds_a_correct_sample(nck):
    n, c, k = nck
    assert pass_at_k_estimate(n, c, k) == pytest.approx(pass_at_k_by_enumeration(n, c, k), abs=1e-12)


def test_pass_at_1_is_the_fraction_correct_and_pass_at_n_is_any_correct():
    assert pass_at_k_estimate(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k_estimate(10, 1, 10) == 1.0 and pass_at_k_estimate(10, 0, 10) == 0.0


@pytest.mark.parametrize("n, k", [(5, 0), (5, 6), (0, 1)])
def test_pass_at_k_needs_0_less_than_k_at_most_n(n, k):
    with pytest.raises(ValueError, match="pass@k needs 0 < k <= n"):
        pass_at_k_estimate(n, 0, k)


@pytest.mark.parametrize("near, trigger_step", [(0.0, 20), (0.5, 12)])
def test_settling_checks_every_step_once_near_and_stops_at_the_trigger_with_no_decay(near, trigger_step, tmp_path,
                                                                                     monkeypatch):
    import minitepo.lab.sft_run as sft
    scripted = iter([0.0, 0.3, 0.4, 0.7, 0.7, 0.7])  # what each settle check sees, in order
    checked = []

    def fake_settle_check(model, tokenizer, task, examples, precision):
        checked.append(len(checked))
        return next(scripted)

    monkeypatch.setattr(sft, "settle_accuracy", fake_settle_check)
    monkeypatch.setattr(sft, "greedy_accuracy", lambda *args, **kwargs: {"all": 0.5, "level/1": 0.5})  # periodic
    result = train_sft(SFTConfig(steps=50, out=str(tmp_path / "run"), settle_at=0.6, settle_steps=0,
                                 settle_check_near=near, settle_metric="level/1", **TINY))
    # checks at 5, 10 (0.3 >= 0.5 * 0.6: near), then every step: 11, 12 (0.7: trigger); without near: 5, 10, 15, 20
    assert result["settled"] and result["steps"] == trigger_step and len(checked) == 4
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["step"] == trigger_step


@pytest.mark.parametrize("cap, restored", [(0.8, True), (0.95, False)])
def test_a_settle_check_that_jumps_past_settle_cap_restores_the_weights_of_the_last_check_below(cap, restored, tmp_path,
                                                                                                monkeypatch):
    import minitepo.lab.sft_run as sft
    scripted = iter([0.0, 0.3, 0.4, 0.9])  # steps 5, 10 (near), 11, 12: one step from 0.4 to 0.9
    seen = []  # the weights each settle check saw

    def fake_settle_check(model, tokenizer, task, examples, precision):
        seen.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        return next(scripted)

    monkeypatch.setattr(sft, "settle_accuracy", fake_settle_check)
    monkeypatch.setattr(sft, "greedy_accuracy", lambda *args, **kwargs: {"all": 0.5, "level/1": 0.5})  # periodic
    result = train_sft(SFTConfig(steps=50, out=str(tmp_path / "run"), settle_at=0.6, settle_steps=0, settle_cap=cap,
                                 settle_check_near=0.5, settle_metric="level/1", **TINY))
    assert result["settled"] and result["steps"] == 12 and len(seen) == 4
    saved = load_checkpoint(tmp_path / "run" / "checkpoint.pt")["model"]
    expected = seen[2] if restored else seen[3]  # step 11's weights (0.4 < 0.6), or the trigger's own
    assert all(torch.equal(saved[k], expected[k]) for k in expected)
    assert not all(torch.equal(seen[2][k], seen[3][k]) for k in expected)  # the two steps' weights do differ
    trigger = [r for r in read_metrics(tmp_path / "run") if "charts/settle_trigger_acc" in r]
    assert trigger[0]["charts/settle_trigger_acc"] == 0.9
    assert trigger[0].get("charts/settle_restored_step") == (11 if restored else None)


def test_settle_cap_below_settle_at_is_refused_naming_both():
    with pytest.raises(ValueError, match=r"--settle-cap must be None, or an accuracy at or above settle_at "
                                         r"\(here 0.6\)"):
        SFTConfig(settle_at=0.6, settle_cap=0.5, **TINY)
