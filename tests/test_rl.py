"""The RL trainer: every objective runs, diagnostics are sane, runs resume exactly, and bad
configurations are refused before any work starts."""

from __future__ import annotations

import math

import pytest
import torch

from minitepo.lab.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from minitepo.lab.rl_config import RLConfig
from minitepo.lab.rl_run import RLRun, make_trainer
from minitepo.lab.rl_run import train_rl
from minitepo.lab.runs import read_metrics
from minitepo.losses import OBJECTIVES
from minitepo.rl import TrainingError


def small(warm_start, tmp_path, **overrides) -> RLConfig:
    settings = dict(init=warm_start, task="add", levels="1", iterations=3, prompts=8, group_size=4, minibatches=2,
                    eval_every=3, pass_k=0, lr=1e-3, device="cpu", out=str(tmp_path / "run"), progress=False)
    settings.update(overrides)
    return RLConfig(**settings)


def finite_numbers(record: dict) -> bool:
    return all(math.isfinite(v) for v in record.values() if isinstance(v, (int, float)))


@pytest.mark.parametrize("algo", sorted(OBJECTIVES))
def test_every_objective_trains_a_few_steps_with_finite_in_range_diagnostics(algo, warm_start, tmp_path):
    result = train_rl(small(warm_start, tmp_path, algo=algo))
    records = read_metrics(tmp_path / "run")
    assert result["iterations"] == 3 and [r["step"] for r in records] == [0, 1, 2, 3]
    for r in records[1:]:
        assert finite_numbers(r), r
        assert 0.0 <= r["losses/clip_frac"] <= 1.0
        assert r["losses/ratio_mean"] > 0
        assert 0.0 <= r["charts/reward_mean"] <= 1.0
        assert 0.0 <= r["charts/zero_spread_groups"] <= 1.0
        assert r["charts/grad_norm"] >= 0
        if algo == "tepo":
            assert 0.0 <= r["tepo/mask_frac"] <= 1.0
        if algo in ("gspo", "gspo_token", "tepo"):
            assert r["losses/seq_ratio_mean"] > 0
    assert 0.0 <= records[-1]["eval/greedy_acc/all"] <= 1.0


def test_tepo_mask_is_empty_on_the_first_minibatch_of_a_rollout_and_acts_later(warm_start, tmp_path):
    train_rl(small(warm_start, tmp_path, algo="tepo", iterations=4, minibatches=4))
    records = read_metrics(tmp_path / "run")[1:]
    assert all(r["tepo/mask_frac_first_step"] == 0.0 for r in records)
    assert any(r["tepo/mask_frac_later_steps"] > 0.0 for r in records)


def test_tepo_trains_with_the_predicted_entropy_criterion_too(warm_start, tmp_path):
    train_rl(small(warm_start, tmp_path, algo="tepo", mask_criterion="predicted", minibatches=4))
    records = read_metrics(tmp_path / "run")[1:]
    assert all(finite_numbers(r) and 0.0 <= r["tepo/mask_frac"] <= 1.0 for r in records)
    # the first-order prediction does not need the policy to have moved: it can act on the first step
    assert any(r["tepo/mask_frac_first_step"] > 0.0 for r in records)


def test_old_logps_are_the_samplers_under_the_loss_temperature(warm_start, tmp_path):
    # One optimizer step per rollout: the policy that is scored *is* the behaviour policy, so every
    # ratio is 1 up to float round-off — only if the loss uses the sampling temperature.
    for temperature in (1.0, 0.7):
        trainer = make_trainer(small(warm_start, tmp_path, algo="dapo", minibatches=1, temperature=temperature))
        record = trainer.iterate()
        assert abs(record["losses/ratio_mean"] - 1.0) < 1e-5
        assert record["losses/approx_kl_old"] < 1e-8


def test_reference_model_exists_only_when_beta_is_positive_and_its_kl_starts_at_zero(warm_start, tmp_path):
    assert make_trainer(small(warm_start, tmp_path, algo="tepo")).ref_model is None
    assert make_trainer(small(warm_start, tmp_path, algo="grpo", beta=0.0)).ref_model is None
    trainer = make_trainer(small(warm_start, tmp_path, algo="grpo", minibatches=1))
    assert trainer.ref_model is not None
    record = trainer.iterate()
    assert abs(record["losses/kl_ref"]) < 1e-6
    assert all(not p.requires_grad for p in trainer.ref_model.parameters())


def test_dynamic_sampling_keeps_only_groups_with_answer_spread_and_fills_the_batch(warm_start, tmp_path):
    trainer = make_trainer(small(warm_start, tmp_path, algo="dapo", prompts=6, max_resample_rounds=8))
    assert trainer.config.uses_dynamic_sampling and trainer.config.max_resample_rounds == 8
    rollout, sampled = trainer.sample_rollout()
    groups = rollout.correct.float().view(-1, 4)  # DAPO filters on accuracy: some right and some wrong
    assert (groups.max(1).values > groups.min(1).values).all()
    assert groups.size(0) == 6 or len(sampled) == 9
    assert rollout.mask.size(0) == rollout.rewards.numel() == rollout.correct.numel()
    # switched off, every sampled group is kept
    trainer = make_trainer(small(warm_start, tmp_path, algo="dapo", dynamic_sampling=False))
    rollout, sampled = trainer.sample_rollout()
    assert rollout.rewards.numel() == 8 * 4 and len(sampled) == 1


def strip_time(records):
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in records]


def test_an_interrupted_and_resumed_run_logs_exactly_what_an_uninterrupted_one_does(warm_start, tmp_path):
    full = small(warm_start, tmp_path, algo="tepo", iterations=4, eval_every=2, save_every=2, pass_k=2,
                 out=str(tmp_path / "full"))
    train_rl(full)
    part = small(warm_start, tmp_path, algo="tepo", iterations=2, eval_every=2, save_every=2, pass_k=2,
                 out=str(tmp_path / "part"))
    train_rl(part)
    resumed = small(warm_start, tmp_path, algo="tepo", iterations=4, eval_every=2, save_every=2, pass_k=2,
                    out=str(tmp_path / "part"), resume=True)
    train_rl(resumed)
    assert strip_time(read_metrics(tmp_path / "part")) == strip_time(read_metrics(tmp_path / "full"))


def test_a_stop_request_finishes_the_iteration_and_writes_a_checkpoint(warm_start, tmp_path):
    trainer = RLRun(small(warm_start, tmp_path, algo="tepo", iterations=5, save_every=100))
    original = trainer.iterate

    def iterate_then_ctrl_c():
        record = original()
        trainer.stop_requested = True  # what the SIGINT handler does
        return record

    trainer.iterate = iterate_then_ctrl_c
    result = trainer.run()
    assert result["interrupted"] and result["iterations"] == 1
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["step"] == 1


def test_stop_at_reward_stops_once_the_windowed_mean_sampled_reward_reaches_it(warm_start, tmp_path):
    trainer = RLRun(small(warm_start, tmp_path, algo="tepo", iterations=20, eval_every=100,
                          stop_at_reward=0.5, reward_window=3))
    rewards = iter([0.0, 0.9, 0.4, 0.1, 0.6, 0.9, 0.0])  # window means: -, -, .43, .47, .37, .53 -> stop after 6
    original = trainer.iterate

    def iterate_with_known_reward():
        record = original()
        record["charts/reward_mean"] = next(rewards)
        return record

    trainer.iterate = iterate_with_known_reward
    result = trainer.run()
    records = read_metrics(tmp_path / "run")
    assert result["iterations"] == 6 and records[-1]["step"] == 6
    assert "eval/greedy_acc/all" in records[-1] and result["final"] == {k: v for k, v in records[-1].items()
                                                                         if k.startswith("eval/")}
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["step"] == 6


def test_stop_at_accuracy_stops_at_the_first_evaluation_that_reaches_it(warm_start, tmp_path):
    trainer = RLRun(small(warm_start, tmp_path, algo="tepo", iterations=9, eval_every=2, stop_at_accuracy=0.5))
    accuracies = iter([0.1, 0.3, 0.6, 0.9])  # evaluated at steps 0, 2, 4, (6)

    trainer.evaluate = lambda: {"eval/greedy_acc/all": next(accuracies)}
    result = trainer.run()
    assert result["iterations"] == 4 and [r["step"] for r in read_metrics(tmp_path / "run")] == [0, 1, 2, 3, 4]


def test_a_non_finite_loss_stops_with_the_step_named_and_keeps_the_last_good_checkpoint(warm_start, tmp_path, monkeypatch):
    trainer = RLRun(small(warm_start, tmp_path, algo="dapo", iterations=3, save_every=1))
    calls = {"n": 0}
    objective = trainer.trainer.objective

    def poisoned(**kwargs):
        calls["n"] += 1
        loss, stats = objective(**kwargs)
        return (loss * float("nan") if calls["n"] > 2 else loss), stats

    trainer.trainer.objective = poisoned
    with pytest.raises(TrainingError, match=r"iteration 2, optimizer step 3: the dapo loss is nan"):
        trainer.run()
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["step"] == 1


@pytest.mark.parametrize("overrides, message", [
    ({"algo": "ppo"}, "unknown objective 'ppo'"),
    ({"beta_mask": 0.5, "algo": "grpo"}, "--beta-mask does not apply to grpo"),
    ({"alpha2": 0.5, "algo": "tepo"}, "does not apply to tepo"),
    ({"minibatches": 64, "prompts": 4, "group_size": 4}, "--minibatches 64 is larger than the rollout"),
    ({"agg": "mean"}, "unknown aggregation 'mean'"),
    ({"temperature": 0.0}, "--temperature must be a finite number > 0"),
])
def test_invalid_rl_settings_are_refused_with_a_clear_message(overrides, message, warm_start, tmp_path):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        small(warm_start, tmp_path, **overrides)


def test_unknown_task_and_foreign_vocabulary_are_refused_before_training(warm_start, tmp_path):
    with pytest.raises(ValueError, match="unknown task"):
        make_trainer(small(warm_start, tmp_path, task="sorting"))
    data = load_checkpoint(warm_start)
    data["alphabet"] = "0123456789abc"
    foreign = save_checkpoint(tmp_path / "foreign.pt", {k: v for k, v in data.items() if k not in ("format", "version")})
    with pytest.raises(CheckpointError, match="alphabet"):
        make_trainer(small(warm_start, tmp_path, init=str(foreign)))


def test_micro_batching_an_optimizer_step_does_not_change_training(warm_start, tmp_path):
    # Gradient accumulation with the step's global normaliser: same gradient, so the same run
    # (up to float summation order).
    a = make_trainer(small(warm_start, tmp_path, algo="grpo", micro_batches=1, out=str(tmp_path / "a")))
    b = make_trainer(small(warm_start, tmp_path, algo="grpo", micro_batches=4, out=str(tmp_path / "b")))
    a.iterate()
    b.iterate()
    for pa, pb in zip(a.model.parameters(), b.model.parameters()):
        torch.testing.assert_close(pa, pb, rtol=1e-5, atol=1e-6)


def test_the_core_config_refuses_an_override_its_function_does_not_take():
    import dataclasses

    from toy_tasks import make_task

    config = RLConfig(algo="grpo_s").trainer_config(make_task("add"))
    with pytest.raises(ValueError, match="not parameters of grpo_s_advantages"):
        dataclasses.replace(config, shaping={"adv_norm": "split"})
    with pytest.raises(ValueError, match="not parameters of grpo_s_loss"):
        dataclasses.replace(config, objective={"beta_mask": 0.0})


def test_an_iteration_records_entropy_and_cost_over_every_sampled_response_beside_the_trained_rows(warm_start,
                                                                                                   tmp_path):
    """With dynamic sampling the trained rows are a subset of the sampled ones: the all-sample entropy and the
    sampling cost are computed over every response of every round, checked here by a plain loop."""
    from minitepo.rl import rl_record
    trainer = make_trainer(small(warm_start, tmp_path, algo="dapo", prompts=6, max_resample_rounds=8))
    rollout, sampled = trainer.sample_rollout()
    record = rl_record(sampled, rollout, {}, seconds=1.0, sample_s=1.0, update_s=0.0, ref_forward_s=0.0,
                       opt_steps=0)
    entropy_sum, tokens, responses, cvs = 0.0, 0, 0, []
    for part in sampled:
        for row in range(part.mask.size(0)):
            n = int(part.mask[row].sum())
            entropy_sum += sum(float(part.old_entropy[row, t]) for t in range(n))
            tokens += n
            responses += 1
        for g in range(part.mask.size(0) // 4):
            lengths = [float(part.mask[g * 4 + k].sum()) for k in range(4)]
            mean = sum(lengths) / 4
            cvs.append(math.sqrt(sum((x - mean) ** 2 for x in lengths) / 4) / mean)
    assert record["charts/responses_sampled"] == responses == 6 * 4 * len(sampled)
    assert record["charts/tokens_sampled"] == tokens
    assert record["charts/entropy_sampled"] == pytest.approx(entropy_sum / tokens, rel=1e-5)
    assert record["charts/len_cv_in_group"] == pytest.approx(sum(cvs) / len(cvs), rel=1e-5, abs=1e-7)
    trained = rollout.old_entropy.sum().item() / rollout.mask.sum().item()
    assert record["charts/entropy_trained"] == pytest.approx(trained, rel=1e-5) and "charts/entropy" not in record


def test_an_iteration_records_how_far_the_later_steps_stray_from_the_behaviour_policy(warm_start, tmp_path):
    config = small(warm_start, tmp_path, algo="tepo", minibatches=2, epochs=2, dynamic_sampling=False, lr=1e-2)
    train_rl(config)
    for r in read_metrics(config.out)[1:]:
        assert r["losses/approx_kl_old_later_steps"] >= 0 and 0 <= r["losses/clip_frac_later_steps"] <= 1
        assert r["losses/approx_kl_old_last_step"] >= 0 and "losses/clip_frac_last_step" in r


def test_a_runs_resolved_reading_names_what_ran_whatever_the_defaults():
    from minitepo.lab.rl_config import reading_label
    shipped = RLConfig(algo="tepo").resolved_reading()
    assert shipped == {"algo": "tepo", "ratio": "sequence", "clip": "token log-ratio [-0.4, +0.4] nats",
                       "agg": "token-mean", "mask": "k3 β_M 1, measured", "kl_ref": "0", "dynamic_sampling": True,
                       "overlong_shaping": False, "steps_per_rollout": 4}
    first = RLConfig(algo="tepo", ratio_clip="sequence", dynamic_sampling=False, beta_mask=0.0).resolved_reading()
    assert (first["clip"], first["mask"], first["dynamic_sampling"]) == ("[1-0.2, 1+0.28] on s_i", "off", False)
    assert reading_label(RLConfig(algo="dapo").resolved_reading()) == \
        "dapo: token ratio, [1-0.2, 1+0.28], token-mean, DS, overlong, KL 0"
    assert reading_label(RLConfig(algo="grpo").resolved_reading()) == \
        "grpo: token ratio, [1-0.2, 1+0.2], seq-mean-token-mean, no DS, KL 0.04 k3"
    assert RLConfig(algo="tepo", mask_criterion="positive", epochs=4).resolved_reading()["steps_per_rollout"] == 16


def test_a_task_with_two_answer_forms_gets_each_responses_form_recorded_and_evaluated():
    """add_or_cot: the rollout names each response's form as the verifier reads it; the iteration record and the
    held-out evaluation give each form's share and accuracy, checked against a plain loop over the texts."""
    import random
    from minitepo import GPT, ModelConfig, Tokenizer, collect_rollout
    from minitepo.evaluate import greedy_accuracy
    from minitepo.rl import rl_record
    from minitepo.rollout import completions
    from toy_tasks import make_task, split_at_eos
    torch.manual_seed(0)
    tokenizer, task = Tokenizer(), make_task("add_or_cot", levels=(1,), eval_per_level=12)
    model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=1, n_head=2, n_embd=32))
    examples = [task.sample(random.Random(k)) for k in range(6)]
    rollout = collect_rollout(model, tokenizer, task, examples, group_size=8, temperature=1.0,
                              generator=torch.Generator().manual_seed(0))
    texts = completions(tokenizer, rollout)
    want = [task.FORMS.index(task.response_form(split_at_eos(t)[0])) for t in texts]
    assert set(want) == {0, 1}                     # an untrained model writes a ':' now and then: both forms
    assert rollout.form.tolist() == want and rollout.select(torch.tensor([3, 1])).form.tolist() == [want[3], want[1]]
    record = rl_record([rollout], rollout, {}, seconds=1.0, sample_s=1.0, update_s=0.0, ref_forward_s=0.0,
                       opt_steps=0, forms=task.FORMS)
    for index, name in enumerate(task.FORMS):
        rows = [k for k, f in enumerate(want) if f == index]
        assert record[f"charts/form_share/{name}"] == pytest.approx(len(rows) / len(want))
        acc = sum(bool(rollout.correct[k]) for k in rows) / len(rows) if rows else 0.0
        assert record[f"charts/form_acc/{name}"] == pytest.approx(acc)
    evaluation = greedy_accuracy(model, tokenizer, task)
    assert evaluation["form_share/direct"] + evaluation["form_share/steps"] == pytest.approx(1.0)
    assert "form_share/direct" not in greedy_accuracy(model, tokenizer, make_task("add", levels=(1,)))


def test_an_iteration_records_every_round_it_sampled_and_trains_on_the_informative_groups_of_all_of_them(
        warm_start, tmp_path, monkeypatch):
    """Through ``Trainer.iterate`` itself (not ``rl_record`` alone): the record counts every response of every
    dynamic-sampling round, and the trained batch holds the informative groups of every round, in order, up to
    ``prompts`` groups. (A trainer that recorded only the trained rows, or kept only its last round, fails here.)"""
    import minitepo.rl as rl
    from minitepo.advantages import informative_groups
    drawn = []
    real_collect = rl.collect_rollout
    monkeypatch.setattr(rl, "collect_rollout", lambda *a, **k: drawn.append(real_collect(*a, **k)) or drawn[-1])
    trainer = make_trainer(small(warm_start, tmp_path, algo="dapo", prompts=6, max_resample_rounds=8))
    several_rounds = 0
    for _ in range(4):
        drawn.clear()
        record = trainer.iterate()
        rows = sum(r.mask.size(0) for r in drawn)
        tokens = sum(int(r.mask.sum()) for r in drawn)
        assert record["charts/sample_rounds"] == len(drawn) and record["charts/responses_sampled"] == rows
        assert record["charts/tokens_sampled"] == tokens
        entropy = sum(float(r.old_entropy.sum()) for r in drawn) / tokens
        assert record["charts/entropy_sampled"] == pytest.approx(entropy, rel=1e-5)
        informative = [int(informative_groups(r.correct.float(), group_size=4).sum()) // 4 for r in drawn]
        assert record["charts/groups_trained"] == min(6, sum(informative))
        several_rounds += len(drawn) > 1 and informative[0] > 0 and sum(informative[1:]) > 0
    assert several_rounds, "no iteration kept groups from more than one round; the test needs one"
