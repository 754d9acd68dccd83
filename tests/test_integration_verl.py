"""minitepo's TEPO inside verl: verl's own loss entry point gives tepo_loss's value and gradient.

The entry point is ``verl.workers.utils.losses.ppo_loss`` (what verl's actor worker calls on every
micro-batch) reached through ``tepo_ppo_loss``; the oracle is ``minitepo.losses.tepo_loss`` on the
whole mini-batch at once. A mini-batch is split over emulated data-parallel ranks and micro-batches
exactly as verl's FSDP engine splits it: every micro-batch carries the mini-batch's all-reduced
token count, its sequence count and dp_size; a rank's gradient is the sum over its micro-batches and
data parallelism averages the ranks' gradients. Needs the ``verl`` extra (CI installs it).
"""

from __future__ import annotations

import pytest
import torch

verl = pytest.importorskip("verl", reason="the verl extra is not installed (pip install -e '.[verl]'; "
                                          "CI installs it from ci/integrations-lock.txt)")

from tensordict import TensorDict  # noqa: E402
from verl.utils import tensordict_utils as tu  # noqa: E402
from verl.workers.utils.losses import ppo_loss  # noqa: E402

from minitepo.integrations import verl as tv  # noqa: E402
from minitepo.losses import TEPO_DEFAULTS, tepo_loss  # noqa: E402

TOL = 1e-9          # float64 throughout; the issue asks for 1e-6 or better
AGG = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")
P, T = 3, 7         # prompt width, response width


def make_step(B, seed, empty_row=False):
    """A random mini-batch of B ragged responses: per-token log-probs as one flat leaf (verl's
    unpadded layout: each sequence's prompt then its response), and the padded (B, T) tensors."""
    g = torch.Generator().manual_seed(seed)
    p_len = torch.randint(1, P + 1, (B,), generator=g)
    r_len = torch.randint(1, T + 1, (B,), generator=g)
    if empty_row:
        r_len[1] = 0
    seq = p_len + r_len
    offsets = torch.cumsum(seq, 0) - seq                                     # start of each sequence
    flat = (-torch.rand(int(seq.sum()), generator=g, dtype=torch.float64) * 2).requires_grad_()
    t = torch.arange(T)
    mask = t[None, :] < r_len[:, None]                                       # (B, T) bool
    # the log-prob of response token t sits at flat[offset + p_len - 1 + t] (a causal LM's shift)
    idx = (offsets + p_len - 1)[:, None] + t[None, :]
    step = dict(
        flat=flat, p_len=p_len, r_len=r_len, mask=mask,
        idx=torch.where(mask, idx, torch.zeros_like(idx)),
        old=torch.where(mask, -torch.rand(B, T, generator=g, dtype=torch.float64) * 2, 0.0),
        ref=torch.where(mask, -torch.rand(B, T, generator=g, dtype=torch.float64) * 2, 0.0),
        adv=(torch.randn(B, generator=g, dtype=torch.float64)[:, None] * mask),   # verl: (B, T)
        flat_ent=torch.rand(int(seq.sum()), generator=g, dtype=torch.float64) * 3,
        old_ent=torch.where(mask, torch.rand(B, T, generator=g, dtype=torch.float64) * 3, 0.0),
    )
    return step


def padded(step, values):
    """(B, T) response view of a flat per-token tensor, 0 at padding (with the flat tensor's graph)."""
    return torch.where(step["mask"], values[step["idx"]], torch.zeros((), dtype=values.dtype))


def micro_batch(step, rows, *, dp_size, n_tokens, n_seqs, with_entropy):
    """verl's view of a micro-batch: a TensorDict of padded fields plus the engine's global info,
    and the model output (unpadded log-probs, and entropies when calculate_entropy is on)."""
    rows = list(rows)
    p_len, r_len = step["p_len"][rows], step["r_len"][rows]
    att = torch.zeros(len(rows), P + T, dtype=torch.int64)
    for j, (p, r) in enumerate(zip(p_len.tolist(), r_len.tolist())):
        att[j, P - p:P] = 1                                                  # left-padded prompt
        att[j, P:P + r] = 1
    fields = {
        "prompts": torch.zeros(len(rows), P, dtype=torch.int64),
        "responses": torch.zeros(len(rows), T, dtype=torch.int64),
        "attention_mask": att,
        "response_mask": step["mask"][rows].to(torch.int64),
        "old_log_probs": step["old"][rows],
        "advantages": step["adv"][rows],
        "ref_log_prob": step["ref"][rows],
        "entropy": step["old_ent"][rows],                                    # v1 trainer: the rollout's entropy
    }
    data = TensorDict(fields, batch_size=[len(rows)])
    tu.assign_non_tensor(data, dp_size=dp_size, batch_num_tokens=n_tokens, global_batch_size=n_seqs)
    seq_slices = []
    starts = torch.cumsum(step["p_len"] + step["r_len"], 0) - (step["p_len"] + step["r_len"])
    for i in rows:
        seq_slices.append(slice(int(starts[i]), int(starts[i] + step["p_len"][i] + step["r_len"][i])))
    out = {"log_probs": torch.cat([step["flat"][s] for s in seq_slices])}
    if with_entropy:
        out["entropy"] = torch.cat([step["flat_ent"][s] for s in seq_slices])
    return out, data


def run_verl(config, step, *, ranks, micro, with_entropy=False, global_info=True, loss_fn=None):
    """Emulate verl's engine: each rank takes B/ranks rows, splits them into `micro` micro-batches,
    and sums their losses; data parallelism averages over ranks. Returns (loss, d loss / d flat)."""
    loss_fn = loss_fn or tv.tepo_ppo_loss
    B = step["mask"].shape[0]
    n_tokens = int(step["mask"].sum()) if global_info else None
    n_seqs = B if global_info else None
    per_rank = B // ranks
    total = 0.0
    for r in range(ranks):
        rank_rows = list(range(r * per_rank, (r + 1) * per_rank))
        size = per_rank // micro
        for k in range(micro):
            out, data = micro_batch(step, rank_rows[k * size:(k + 1) * size], dp_size=ranks, n_tokens=n_tokens,
                                    n_seqs=n_seqs, with_entropy=with_entropy)
            loss, _ = loss_fn(config, out, data)
            total = total + loss / ranks
    step["flat"].grad = None
    total.backward()
    return total.detach(), step["flat"].grad.clone()


def run_oracle(step, *, agg, beta=0.0, entropy=False, max_len=None, **tepo):
    step["flat"].grad = None
    loss, _ = tepo_loss(logp=padded(step, step["flat"]), old_logp=step["old"], advantages=step["adv"],
                        mask=step["mask"], ref_logp=step["ref"] if beta > 0 else None,
                        entropy=padded(step, step["flat_ent"]) if entropy else None,
                        old_entropy=step["old_ent"] if entropy else None,
                        beta=beta, agg=agg, max_len=max_len, **tepo)
    loss.backward()
    return loss.detach(), step["flat"].grad.clone()


def assert_close(a, b):
    (la, ga), (lb, gb) = a, b
    assert abs(float(la) - float(lb)) <= TOL, (float(la), float(lb))
    assert torch.allclose(ga, gb, atol=TOL, rtol=0), float((ga - gb).abs().max())


@pytest.fixture(scope="module")
def configs():
    """verl's actor config per (aggregation, KL on/off), composed by hydra with TEPO selected ('positive' mask:
    the registered loss on its own, no entropy needed)."""
    out = {}
    for agg in AGG:
        for kl in (False, True):
            out[agg, kl] = tv.make_actor_config(loss_agg_mode=agg, mask_criterion="positive", beta_mask=0.5,
                                                use_kl_loss=kl, kl_loss_coef=0.1, kl_loss_type="low_var_kl",
                                                loss_scale_factor=T if agg == "seq-mean-token-sum-norm" else None)
    return out


@pytest.mark.parametrize("agg", AGG)
@pytest.mark.parametrize("kl", [False, True])
@pytest.mark.parametrize("ranks,micro", [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4)])
def test_ppo_loss_with_tepo_equals_tepo_loss_on_the_whole_mini_batch(configs, agg, kl, ranks, micro):
    """Splitting a mini-batch over ranks and micro-batches inside verl never changes TEPO's loss or gradient."""
    step = make_step(8, seed=sum(map(ord, f"{agg}{kl}{ranks}{micro}")))
    got = run_verl(configs[agg, kl], step, ranks=ranks, micro=micro)
    want = run_oracle(step, agg=agg, beta=0.1 if kl else 0.0, kl_kind="k3", max_len=T, mask_criterion="positive",
                      beta_mask=0.5)
    assert_close(got, want)


@pytest.mark.parametrize("switches", [dict(ratio_clip="token_log", delta_low=0.05, delta_high=0.05),
                                      dict(mask_action="gate"), dict(ratio_clip="token_log", mask_action="gate")])
@pytest.mark.parametrize("ranks,micro", [(1, 1), (2, 2)])
def test_tepo_switches_reach_the_loss_inside_verl(switches, ranks, micro):
    """TEPO's reading switches (ratio_clip, its deltas, mask_action) pass through the hydra lines and verl's config."""
    config = tv.make_actor_config(mask_criterion="positive", beta_mask=0.5, **switches)
    assert all(getattr(config.policy_loss, k) == v for k, v in switches.items())
    step = make_step(8, seed=5)
    got = run_verl(config, step, ranks=ranks, micro=micro)
    want = run_oracle(step, agg="token-mean", mask_criterion="positive", beta_mask=0.5, **switches)
    assert_close(got, want)
    plain = run_oracle(step, agg="token-mean", mask_criterion="positive", beta_mask=0.5)
    assert abs(float(plain[0]) - float(want[0])) > 0 or not torch.equal(plain[1], want[1]), \
        "the switches changed nothing on this step: the test would not notice them being dropped"


@pytest.mark.parametrize("agg", AGG)
def test_without_global_batch_info_the_loss_uses_local_counts(configs, agg):
    """One process, no accumulation, no global info: verl's local N / B' (empty rows not counted) / B' x T."""
    step = make_step(5, seed=3, empty_row=True)
    got = run_verl(configs[agg, False], step, ranks=1, micro=1, global_info=False)
    normalizer = None
    if agg == "seq-mean-token-sum-norm":
        normalizer = float(step["mask"].any(-1).sum()) * T
    want = run_oracle(step, agg=agg, normalizer=normalizer, mask_criterion="positive", beta_mask=0.5)
    assert_close(got, want)


@pytest.mark.parametrize("ranks,micro", [(1, 1), (2, 2), (1, 4)])
def test_measured_mask_through_the_entropy_wrapper(ranks, micro):
    """The wrapper lends the current entropy (model output) and the rollout's (batch field 'entropy') to the loss."""
    config = tv.make_actor_config(use_kl_loss=True, kl_loss_coef=0.05, kl_loss_type="k3", mask_tol=0.01)
    assert config.calculate_entropy and config.policy_loss.mask_criterion == "measured"
    step = make_step(8, seed=11)
    got = run_verl(config, step, ranks=ranks, micro=micro, with_entropy=True)
    want = run_oracle(step, agg="token-mean", beta=0.05, entropy=True, mask_tol=0.01)
    assert_close(got, want)
    _, stats = tepo_loss(logp=padded(step, step["flat"]), old_logp=step["old"], advantages=step["adv"],
                         mask=step["mask"], entropy=padded(step, step["flat_ent"]), old_entropy=step["old_ent"])
    assert 0 < float(stats["mask_frac"]) < 1                                 # the mask really acts here


def test_measured_mask_without_entropies_is_refused():
    config = tv.make_actor_config()
    step = make_step(4, seed=1)
    with pytest.raises(ValueError, match="calculate_entropy"):
        run_verl(config, step, ranks=1, micro=1, with_entropy=False)
    with pytest.raises(ValueError, match="calculate_entropy=True and train through"):
        run_verl(config, step, ranks=1, micro=1, loss_fn=ppo_loss)            # stock ppo_loss: no entropies


def test_unsupported_options_are_refused(configs):
    step = make_step(4, seed=2)
    logp = padded(step, step["flat"])
    call = dict(old_log_prob=step["old"], log_prob=logp, advantages=step["adv"], response_mask=step["mask"])
    with pytest.raises(ValueError, match="token-sum"):
        tv.tepo_policy_loss(**call, loss_agg_mode="token-sum", config=configs["token-mean", False])
    with pytest.raises(ValueError, match="importance-sampling"):
        tv.tepo_policy_loss(**call, loss_agg_mode="token-mean", config=configs["token-mean", False],
                            rollout_is_weights=torch.ones_like(logp))
    with pytest.raises(ValueError, match="predicted"):
        tv.TEPOPolicyLossConfig(mask_criterion="predicted")
    stock = tv.make_actor_config(mask_criterion="none")
    plain = type(stock)(**{**{f: getattr(stock, f) for f in ("strategy", "rollout_n", "ppo_micro_batch_size_per_gpu")},
                           "policy_loss": verl.workers.config.PolicyLossConfig(loss_mode=tv.LOSS_MODE)})
    with pytest.raises(ValueError, match="_target_"):
        tv.tepo_policy_loss(**call, loss_agg_mode="token-mean", config=plain)


def test_hydra_composition_selects_the_adapter_config():
    """verl's own ppo_trainer.yaml plus tepo_overrides() gives TEPOPolicyLossConfig and registers the loss."""
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    config = tv.make_actor_config(loss_agg_mode="seq-mean-token-mean", mask_criterion="positive", beta_mask=0.3,
                                  mask_kl="k2", dual_clip=3.0, clip_ratio_high=0.3)
    assert type(config).__name__ == "FSDPActorConfig"
    assert config.policy_loss == tv.TEPOPolicyLossConfig(loss_mode=tv.LOSS_MODE, beta_mask=0.3,
                                                         mask_criterion="positive", mask_kl="k2",
                                                         mask_tol=TEPO_DEFAULTS["mask_tol"], dual_clip=3.0)
    low = TEPO_DEFAULTS["eps_low"]                                           # left out: tepo_loss's default
    assert (config.loss_agg_mode, config.clip_ratio_low, config.clip_ratio_high) == ("seq-mean-token-mean", low, 0.3)
    assert not config.calculate_entropy                                      # 'positive' needs no entropy
    assert get_policy_loss_fn(tv.LOSS_MODE) is tv.tepo_policy_loss
    assert tv.tepo_kwargs(config.policy_loss, config) == dict(
        eps_low=low, eps_high=0.3, dual_clip=3.0, beta_mask=0.3, mask_criterion="positive", mask_kl="k2",
        mask_tol=TEPO_DEFAULTS["mask_tol"], ratio_clip=TEPO_DEFAULTS["ratio_clip"],
        delta_low=TEPO_DEFAULTS["delta_low"], delta_high=TEPO_DEFAULTS["delta_high"],
        mask_action=TEPO_DEFAULTS["mask_action"])


def test_the_worker_builds_its_loss_from_the_wrapper():
    """Instantiating the TEPO config ('measured') replaces the global verl's actor worker binds its loss from."""
    engine_workers = pytest.importorskip("verl.workers.engine_workers",
                                         reason="verl's worker module needs the rollout servers' packages")
    tv.make_actor_config()
    assert engine_workers.ppo_loss is tv.tepo_ppo_loss


@pytest.mark.parametrize("mode", ["vanilla", "gspo"])
@pytest.mark.parametrize("kl", [False, True])
def test_other_loss_modes_pass_through_the_wrapper_unchanged(mode, kl):
    """With another loss mode the wrapper is verl's ppo_loss: identical value and gradient."""
    import os

    from hydra import compose, initialize_config_dir
    from verl.utils.config import omega_conf_to_dataclass
    actor = "actor_rollout_ref.actor"
    overrides = [f"{actor}.policy_loss.loss_mode={mode}", "actor_rollout_ref.rollout.n=4",
                 f"{actor}.ppo_micro_batch_size_per_gpu=1", f"{actor}.use_kl_loss={str(kl).lower()}",
                 f"{actor}.calculate_entropy=true"]
    with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer", "config"),
                               version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=overrides)
    config = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    step = make_step(8, seed=5)
    stock = run_verl(config, step, ranks=2, micro=2, with_entropy=True, loss_fn=ppo_loss)
    wrapped = run_verl(config, step, ranks=2, micro=2, with_entropy=True, loss_fn=tv.tepo_ppo_loss)
    assert float(stock[0]) == float(wrapped[0]) and torch.equal(stock[1], wrapped[1])
