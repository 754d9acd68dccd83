"""Mixed precision (bf16 autocast), tested on the CPU so that every machine checks the path a GPU takes,
and the trainer's statistics, which must not depend on how an optimizer step is split."""

import math

import pytest
import torch

from minitepo.device import autocast, resolve_precision
from minitepo.lab.rl_config import RLConfig
from minitepo.lab.rl_run import make_trainer
from minitepo.lab.rl_run import train_rl
from minitepo.lab.runs import read_metrics
from minitepo.rollout import score_rollout


def config(warm_start, tmp_path, **overrides) -> RLConfig:
    settings = dict(init=warm_start, task="add", levels="1", iterations=2, prompts=8, group_size=4, minibatches=2,
                    eval_every=2, pass_k=0, lr=1e-3, device="cpu", out=str(tmp_path / "run"), progress=False)
    settings.update(overrides)
    return RLConfig(**settings)


def test_auto_precision_is_bf16_on_cuda_and_fp32_elsewhere():
    assert resolve_precision(torch.device("cpu")) == "fp32"
    assert resolve_precision(torch.device("cuda"), "auto") == "bf16"
    assert resolve_precision(torch.device("cpu"), "bf16") == "bf16"
    with pytest.raises(ValueError, match="precision"):
        resolve_precision(torch.device("cpu"), "fp16")
    with autocast(torch.device("cpu"), "bf16"):
        assert torch.is_autocast_enabled("cpu")
    with autocast(torch.device("cpu"), "fp32"):
        assert not torch.is_autocast_enabled("cpu")


def test_bf16_recomputes_the_old_policy_so_the_first_step_sees_ratio_one_exactly(warm_start, tmp_path):
    trainer = make_trainer(config(warm_start, tmp_path, algo="tepo", precision="bf16", minibatches=2, micro_batches=2))
    assert trainer.recompute_old                                   # the default in bf16
    rollout, _ = trainer.sample_rollout()
    first_epoch = list(torch.randperm(rollout.mask.size(0)).tensor_split(2))
    recomputed = trainer.recompute_old_policy(rollout, first_epoch)
    for micro_rows in first_epoch[0].tensor_split(2):              # exactly what the first optimizer step computes
        micro = recomputed.select(micro_rows)
        with torch.no_grad(), autocast(trainer.device, "bf16"):
            logp, entropy = score_rollout(trainer.model, micro)
        assert torch.equal(logp * micro.mask, micro.old_logp) and torch.equal(entropy * micro.mask, micro.old_entropy)
        log_s = (logp - micro.old_logp).mul(micro.mask).sum(-1) / micro.mask.sum(-1)
        assert torch.equal(torch.exp(log_s), torch.ones_like(log_s))   # every sequence ratio is exactly 1


def test_bf16_first_step_tepo_mask_is_empty_even_without_a_round_off_guard(warm_start, tmp_path):
    train_rl(config(warm_start, tmp_path, algo="tepo", precision="bf16", mask_tol=0.0, iterations=3, minibatches=4))
    records = read_metrics(tmp_path / "run")[1:]
    assert [r["tepo/mask_frac_first_step"] for r in records] == [0.0, 0.0, 0.0]
    assert all(math.isfinite(v) for r in records for v in r.values() if isinstance(v, float))


def test_old_logp_from_the_sampler_can_be_chosen_in_bf16(warm_start, tmp_path):
    trainer = make_trainer(config(warm_start, tmp_path, algo="tepo", precision="bf16", old_logp="sampler"))
    assert not trainer.recompute_old
    assert not make_trainer(config(warm_start, tmp_path, algo="tepo")).recompute_old      # fp32 default: the sampler's


@pytest.mark.parametrize("algo, extra", [("tepo", {}), ("grpo", {}), ("gspo", {}), ("gtpo", {"dynamic_sampling": False})])
def test_every_logged_statistic_is_the_same_with_one_or_several_micro_batches(warm_start, tmp_path, algo, extra):
    """Summed statistics (loss, pg_loss, mask_kl) add up over micro-batches; averages are weighted by what they
    average over. So an optimizer step logs the same numbers however it is split."""
    records = []
    for k in (1, 3):
        trainer = make_trainer(config(warm_start, tmp_path, algo=algo, micro_batches=k, minibatches=2,
                                 out=str(tmp_path / f"{algo}{k}"), **extra))
        records.append(trainer.iterate())
    one, many = records
    keys = [key for key in one if key.startswith(("losses/", "tepo/", "charts/")) and key != "charts/lr"]
    assert "losses/pg_loss" in keys and "losses/clip_frac" in keys
    for key in keys:
        assert many[key] == pytest.approx(one[key], rel=1e-4, abs=1e-6), key


def test_a_mini_batch_left_empty_by_dynamic_sampling_is_skipped(warm_start, tmp_path):
    # G = 2 and K = 4: when dynamic sampling keeps fewer than 4 rows, some mini-batches would be empty
    trainer = make_trainer(config(warm_start, tmp_path, algo="dapo", prompts=2, group_size=2, minibatches=4,
                             max_resample_rounds=0, iterations=8, seed=1))
    short = 0
    for _ in range(8):
        record = trainer.iterate()
        trained_rows = record["charts/groups_trained"] * 2
        short += 0 < trained_rows < 4
        assert record.get("charts/opt_steps", 0) >= 0
    assert short > 0, "the seed should produce at least one iteration with fewer rows than mini-batches"


@pytest.mark.slow
def test_a_short_bf16_run_learns_as_its_fp32_twin_does(tmp_path):
    """~40 s: a warm start that gets ~40% of sampled 1-digit sums right, then 50 TEPO iterations in fp32 and in bf16.
    Both raise the mean sampled reward (last 10 iterations against the first 10) by a similar amount."""
    from minitepo.lab.sft_run import SFTConfig, train_sft

    train_sft(SFTConfig(task="add", levels="1", steps=300, batch_size=32, lr=3e-3, eval_every=300, n_layer=2, n_head=2,
                        n_embd=64, device="cpu", out=str(tmp_path / "ws"), progress=False))
    gains = {}
    for precision in ("fp32", "bf16"):
        train_rl(RLConfig(init=str(tmp_path / "ws" / "checkpoint.pt"), task="add", levels="1", iterations=50, prompts=16,
                          group_size=8, minibatches=2, eval_every=50, pass_k=0, lr=3e-4, temperature=0.7, device="cpu",
                          precision=precision, out=str(tmp_path / precision), progress=False))
        rewards = [r["charts/reward_mean"] for r in read_metrics(tmp_path / precision)[1:]]
        gains[precision] = sum(rewards[-10:]) / 10 - sum(rewards[:10]) / 10
    assert gains["fp32"] > 0.03 and gains["bf16"] > 0.03, gains
    assert abs(gains["bf16"] - gains["fp32"]) < 0.05, gains
