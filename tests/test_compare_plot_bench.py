"""The side-by-side comparison, the plots and the benchmark run end to end on a tiny budget."""

from __future__ import annotations

import json

import pytest

from minitepo.bench import BenchConfig, forward_flops
from minitepo.compare import CompareConfig, mean_std, run_compare, time_to_target
from minitepo.model import ModelConfig
from minitepo.plotting import plot_runs


def test_compare_trains_every_objective_and_seed_from_one_warm_start_and_writes_table_and_curves(warm_start, tmp_path):
    out = tmp_path / "cmp"
    summary = run_compare(CompareConfig(algos="grpo,tepo", seeds=2, init=warm_start, task="add", levels="1",
                                        iterations=2, prompts=4, group_size=4, minibatches=2, eval_every=1,
                                        target_accuracy=0.01, device="cpu", out=str(out)))
    assert set(summary) == {"grpo", "tepo"} and all(len(rows) == 2 for rows in summary.values())
    for algo in ("grpo", "tepo"):
        starts = {row["start"] for row in summary[algo]}
        assert len(starts) == 1  # every run starts from the same checkpoint, so the same held-out accuracy
    table = (out / "summary.md").read_text()
    assert "| grpo |" in table and "| tepo |" in table
    assert json.loads((out / "summary.json").read_text())["runs"]["tepo"][0]["seed"] == 0
    assert (out / "curves_step.png").stat().st_size > 0 and (out / "curves_seconds.png").stat().st_size > 0


def test_time_to_target_is_the_first_evaluation_at_or_above_it():
    records = [{"step": 0, "eval/greedy_acc/all": 0.1, "time/train_s": 0.0}, {"step": 5, "charts/reward_mean": 1.0},
               {"step": 10, "eval/greedy_acc/all": 0.8, "time/train_s": 4.0},
               {"step": 20, "eval/greedy_acc/all": 0.9, "time/train_s": 8.0}]
    assert time_to_target(records, 0.75) == (10, 4.0)
    assert time_to_target(records, 0.95) == (None, None)
    assert mean_std([]) == "—" and mean_std([2.0]) == "2" and mean_std([1.0, 3.0]) == "2 ± 1.4"


def test_compare_refuses_unknown_objectives():
    with pytest.raises(ValueError, match="unknown objective"):
        CompareConfig(algos="grpo,ppo")


def test_plot_draws_any_runs_metrics_and_explains_when_there_is_nothing_to_draw(warm_start, tmp_path):
    from minitepo.rl import RLConfig, train_rl

    train_rl(RLConfig(init=warm_start, task="add", levels="1", iterations=2, prompts=4, group_size=4, minibatches=2,
                      eval_every=1, pass_k=0, device="cpu", out=str(tmp_path / "run"), progress=False))
    for x in ("step", "seconds"):
        path = plot_runs([tmp_path / "run"], tmp_path / f"p_{x}.png", x=x)
        assert path.stat().st_size > 0
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "metrics.jsonl").write_text('{"step": 1}\n')
    with pytest.raises(ValueError, match="were logged"):
        plot_runs([tmp_path / "empty"], tmp_path / "none.png")
    with pytest.raises(ValueError, match="does not exist"):
        plot_runs([tmp_path / "missing"], tmp_path / "none.png")


def test_forward_flops_counts_every_matmul_of_the_model():
    c = ModelConfig(vocab_size=10, n_layer=1, n_head=1, n_embd=4)
    # per token: qkv 3*16 + proj 16 + mlp 2*64 = 192 weights, attention 2*4*seq, logits 4*10
    assert forward_flops(c, seq_len=3) == 2.0 * 3 * (192 + 2 * 4 * 3 + 40)


def test_bench_runs_and_reports_every_row(capsys):
    from minitepo.bench import run

    result = run(BenchConfig(batch=8, new_tokens=3, repeats=1, sft_steps=2, rl_steps=1, device="cpu"))
    out = capsys.readouterr().out
    for row in ("KV cache speed-up", "supervised training", "matmul", "RL step tepo", "RL step grpo"):
        assert row in out
    assert result["sampler"]["cached"] > 0 and result["rl"]["grpo"]["extra_forward_s"] > 0
