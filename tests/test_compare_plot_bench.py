"""The side-by-side comparison, the plots and the benchmark run end to end on a tiny budget."""

from __future__ import annotations

import json

import pytest

from minitepo.lab.bench import BenchConfig, forward_flops
from minitepo.lab.compare import (CompareConfig, ablation_tables, difference_table, format_seeds, parse_entry,
                              parse_seed_list, run_compare)
from minitepo.lab.plotting import plot_runs
from minitepo.lab.stats import (bootstrap_difference_ci, bootstrap_mean_ci, format_ci, min_detectable_effect,
                                 run_summary)
from minitepo.model import ModelConfig


@pytest.mark.parametrize("text, seeds", [(3, [0, 1, 2]), ("3", [0, 1, 2]), ("20,21,22", [20, 21, 22]),
                                         ("20-24", [20, 21, 22, 23, 24]), ("20-20", [20]), ("10-12, 30", [10, 11, 12, 30])])
def test_seeds_are_a_count_or_an_explicit_list(text, seeds):
    assert parse_seed_list(text) == seeds
    assert parse_seed_list(format_seeds(seeds)) == seeds


@pytest.mark.parametrize("text, why", [(0, "count N >= 1"), ("0", "count N >= 1"), ("", "not a seed"), ("a-b", "not a seed"),
                                       ("-3", "not a seed"), ("5-2", "backwards"), ("1,1", "twice"), ("2.5", "not a seed"),
                                       (True, "count N >= 1"), (None, "count N >= 1")])
def test_a_bad_seed_list_is_refused_with_what_is_allowed(text, why):
    with pytest.raises(ValueError, match=why):
        CompareConfig(seeds=text, init="x/checkpoint.pt", task="add")


def test_compare_trains_every_entry_and_seed_from_one_warm_start_and_writes_tables_and_figures(warm_start, tmp_path):
    out = tmp_path / "cmp"
    config = CompareConfig(algos="grpo,tepo,tepo:beta_mask=0", seeds=2, init=warm_start, task="add", levels="1",
                           iterations=2, prompts=4, group_size=4, minibatches=2, eval_every=1,
                           target_accuracy=0.01, device="cpu", out=str(out))
    summary = run_compare(config)
    assert set(summary) == {"grpo", "tepo", "tepo:beta_mask=0"} and all(len(rows) == 2 for rows in summary.values())
    for label in summary:
        starts = {row["start"] for row in summary[label]}
        assert len(starts) == 1  # every run starts from the same checkpoint, so the same held-out accuracy
    saved = json.loads((out / "tepo-beta_mask=0-seed0" / "config.json").read_text())
    assert saved["algo"] == "tepo" and saved["beta_mask"] == 0
    table = (out / "summary.md").read_text()
    assert "| grpo |" in table and "| tepo:beta_mask=0 |" in table and "distinguishable?" in table
    assert json.loads((out / "summary.json").read_text())["runs"]["tepo"][0]["seed"] == 0
    assert "| tepo | " in table and "x seeds 0-1" in table
    assert "| entry − tepo |" in table   # the ablation is also set against its own objective's defaults
    for name in ("curves_step", "curves_seconds", "bands_step", "bands_prompts", "ablations",
                 "ablations_tepo_accuracy", "ablations_tepo_entropy"):
        assert (out / f"{name}.png").stat().st_size > 0
    # --resume keeps the finished runs (their metrics are not rewritten) and rebuilds the summary
    before = (out / "grpo-seed0" / "metrics.jsonl").read_text()
    config.resume = True
    again = run_compare(config)
    assert (out / "grpo-seed0" / "metrics.jsonl").read_text() == before
    assert again == summary


def test_a_compare_entry_is_an_objective_with_optional_overrides():
    entry = parse_entry("gspo:eps_low=0.2+eps_high=0.28+agg=token-mean")
    assert entry.algo == "gspo" and dict(entry.overrides) == {"eps_low": 0.2, "eps_high": 0.28, "agg": "token-mean"}
    assert parse_entry("tepo:mask_criterion=positive").folder == "tepo-mask_criterion=positive"
    assert parse_entry("dapo:dynamic_sampling=false").overrides == (("dynamic_sampling", False),)
    with pytest.raises(ValueError, match="FIELD=VALUE"):
        parse_entry("tepo:beta_mask")
    with pytest.raises(ValueError, match="FIELD=VALUE"):
        parse_entry("tepo:no_such_field=1")
    with pytest.raises(ValueError, match="not apply"):   # an override the objective does not take fails at once
        CompareConfig(algos="grpo:beta_mask=0")


def test_a_runs_summary_reads_targets_prompts_entropy_and_stability_from_its_records():
    records = [{"step": 0, "eval/greedy_acc/all": 0.1, "time/train_s": 0.0},
               {"step": 1, "charts/sample_rounds": 2, "charts/entropy": 1.0, "time/train_s": 1.0},
               {"step": 2, "charts/sample_rounds": 1, "charts/entropy": 0.6, "eval/greedy_acc/all": 0.5,
                "time/train_s": 2.0},
               {"step": 3, "charts/sample_rounds": 1, "charts/entropy": 0.4, "eval/greedy_acc/all": 0.8,
                "time/train_s": 3.0},
               {"step": 4, "charts/sample_rounds": 1, "charts/entropy": 0.5, "eval/greedy_acc/all": 0.65,
                "time/train_s": 4.0}]
    s = run_summary(records, target=0.75, prompts_per_round=10)
    assert (s["iters_to_target"], s["prompts_to_target"], s["seconds_to_target"]) == (3, 40, 3.0)
    assert (s["start"], s["final"], s["best"]) == (0.1, 0.65, 0.8)
    assert (s["entropy_min"], s["entropy_halved_at"], s["unstable_evals"]) == (0.4, 3, 1)   # 0.8 -> 0.65: one drop
    assert s["prompts_sampled"] == 50 and run_summary(records, target=0.9, prompts_per_round=10)["iters_to_target"] is None
    assert (s["iters_to_target_censored"], s["prompts_to_target_censored"]) == (3, 40)     # reached: the same numbers
    missed = run_summary(records, target=0.9, prompts_per_round=10)
    evals = [r["step"] for r in records if "eval/greedy_acc/all" in r]
    censor = evals[-1] + evals[-1] - evals[-2]                 # one evaluation interval past the last evaluation
    assert missed["iters_to_target_censored"] == censor and missed["prompts_to_target_censored"] == 50 * censor / 4
    assert s["acc_auc"] == pytest.approx(sum(r["eval/greedy_acc/all"] for r in records if "eval/greedy_acc/all" in r)
                                         / len(evals))
    assert s["tokens_to_target"] is None and s["tokens_sampled"] is None   # these records predate the cost metrics


def test_a_runs_summary_counts_sampled_responses_and_tokens_to_target_and_the_entropy_over_all_samples():
    records = [{"step": 0, "eval/greedy_acc/all": 0.1, "eval/pass@4": 0.3}]
    for step in range(1, 13):
        records.append({"step": step, "charts/sample_rounds": 2, "charts/responses_sampled": 16,
                        "charts/tokens_sampled": 100 + step, "charts/entropy_sampled": 1.0 - step / 20,
                        "charts/entropy_trained": 0.5, "time/train_s": float(step)})
    records[6].update({"eval/greedy_acc/all": 0.8, "eval/pass@4": 0.9})
    records[12].update({"eval/greedy_acc/all": 0.7, "eval/pass@4": 0.85})
    s = run_summary(records, target=0.75, prompts_per_round=4)
    assert (s["iters_to_target"], s["prompts_to_target"], s["responses_to_target"]) == (6, 48, 96)
    assert s["tokens_to_target"] == sum(100 + k for k in range(1, 7)) and s["tokens_sampled"] == sum(range(101, 113))
    assert s["entropy_sampled_start"] == 0.95 and s["entropy_sampled_min"] == pytest.approx(0.4)
    assert s["entropy_sampled_last"] == pytest.approx(sum(1.0 - k / 20 for k in range(3, 13)) / 10)
    assert (s["entropy_start"], s["entropy_last"], s["entropy_halved_at"]) == (0.5, 0.5, None)
    assert (s["pass_at_k_final"], s["pass_at_k_name"]) == (0.85, "pass@4")
    records[3]["charts/len_cv_in_group"], records[4]["charts/len_cv_in_group"] = 0.6, 0.2
    records[12].update({"eval/greedy_acc/form_share/steps": 0.75, "eval/greedy_acc/form_acc/steps": 0.5})
    s = run_summary(records, target=0.75, prompts_per_round=4)
    assert (s["len_cv_first"], s["len_cv_mean"]) == (0.6, pytest.approx(0.4)) and "mask_later_mean" not in s
    assert (s["final_form_share_steps"], s["final_form_acc_steps"]) == (0.75, 0.5)
    missed = run_summary(records, target=0.9, prompts_per_round=4)      # censored at 12 + 6 = 18 of 12 iterations
    assert missed["tokens_to_target_censored"] == pytest.approx(sum(range(101, 113)) * 18 / 12)


def test_bootstrap_intervals_are_seeded_hold_the_mean_and_call_a_clear_difference_distinguishable():
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    mean, low, high = bootstrap_mean_ci(values)
    assert mean == 4.0 and low <= mean <= high and bootstrap_mean_ci(values) == (mean, low, high)
    assert bootstrap_mean_ci([]) is None and bootstrap_mean_ci([2.0]) == (2.0, 2.0, 2.0)
    far = bootstrap_difference_ci([10.0, 11.0, 12.0], [1.0, 2.0, 3.0])
    assert far[0] == 9.0 and far[1] > 0                                       # distinguishable
    near = bootstrap_difference_ci([1.0, 5.0, 3.0], [2.0, 4.0, 3.5])
    assert near[1] < 0 < near[2]                                              # not distinguishable
    assert format_ci(None) == "—" and format_ci((1.0, 0.5, 1.5)) == "1 [0.5, 1.5]"


def test_difference_tables_set_each_entry_against_a_baseline_and_ablations_against_their_objective():
    def rows(iters, final, entropy):
        return [{"iters_to_target": i, "iters_to_target_censored": 110 if i is None else i, "final": f,
                 "acc_auc": f / 2, "entropy_min": e} for i, f, e in zip(iters, final, entropy)]
    summary = {"grpo": rows([40, 50, 60], [0.9, 0.91, 0.92], [0.03, 0.03, 0.03]),
               "tepo": rows([80, 90, 100], [0.8, 0.81, 0.82], [0.05, 0.04, 0.06]),
               "tepo:beta_mask=0": rows([None, 85, 95], [0.8, 0.82, 0.8], [0.05, 0.05, 0.05])}
    lines = difference_table(summary, 0.75).splitlines()
    assert lines[0].startswith("| entry − grpo | Δ iterations to 75% (censored) | p | distinguishable? | smallest "
                               "detectable | Δ tokens sampled to 75% (censored) |")
    tepo = lines[2].split(" | ")
    assert tepo[0] == "| tepo" and tepo[1].startswith("40 [") and tepo[3] == "yes"   # 90 - 50 iterations
    assert float(tepo[2]) < 0.05
    # the smallest detectable difference: both groups' sd is 10 over 3 seeds
    assert float(tepo[4]) == pytest.approx(float(f"{min_detectable_effect(10.0, 3, 10.0, 3):.3g}"))
    assert tepo[5:9] == ["—"] * 4                                   # these rows recorded no sampled tokens
    assert tepo[9].startswith("-0.1 [") and tepo[11] == "yes"
    against_tepo = difference_table(summary, 0.75, baseline="tepo", labels=["tepo:beta_mask=0"]).splitlines()
    cells = against_tepo[2].split(" | ")
    assert against_tepo[0].startswith("| entry − tepo |") and len(against_tepo) == 3
    assert cells[1].startswith("6.67 [") and cells[3] == "no"   # (110+85+95)/3 - 90: the censored run counts at 110
    entries = [parse_entry(e) for e in ("grpo", "tepo", "tepo:beta_mask=0")]
    assert ablation_tables(entries, summary, 0.75) == [difference_table(summary, 0.75, "tepo", ["tepo:beta_mask=0"])]
    only_tepo = [parse_entry(e) for e in ("tepo", "tepo:beta_mask=0")]   # the first table already says it
    assert ablation_tables(only_tepo, {k: summary[k] for k in ("tepo", "tepo:beta_mask=0")}, 0.75) == []


def test_compare_refuses_unknown_objectives():
    with pytest.raises(ValueError, match="unknown objective"):
        CompareConfig(algos="grpo,ppo")


def test_plot_draws_any_runs_metrics_and_explains_when_there_is_nothing_to_draw(warm_start, tmp_path):
    from minitepo.lab.rl_config import RLConfig
    from minitepo.lab.rl_run import train_rl

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
    from minitepo.lab.bench import run

    result = run(BenchConfig(batch=8, new_tokens=3, repeats=1, sft_steps=2, rl_steps=1, device="cpu"))
    out = capsys.readouterr().out
    for row in ("KV cache speed-up", "supervised training", "matmul", "RL step tepo ", "RL step tepo+shared_prompt",
                "RL step grpo", "shared-prompt scoring"):
        assert row in out
    assert result["sampler"]["cached"] > 0 and result["rl"]["grpo"]["extra_forward_s"] > 0
