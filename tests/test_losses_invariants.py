"""The invariants of spec section 8, one property test per sentence.

The invariants every loss must satisfy (permutation, junk at padding, padding columns, empty responses,
micro-batches, token order, constants) run through the property-testing kit, ``minitepo.testing``, on each
library objective with its hyper-parameters drawn by hypothesis: the same checks a researcher points at their own
loss (``minitepo check-loss``). The statements specific to TEPO's reading (5-10, 17, 18) are written out here.

Each test name is the sentence it proves. All computations are in float64 with tight tolerances
unless the invariant itself is approximate. Numbering follows ``spec/ALGORITHMS.md`` section 8;
invariants 12-13 (advantages) live in ``test_advantages.py``, 14 in ``test_losses_oracle.py``,
15-16 in ``test_losses_kl_entropy.py``.
"""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import loss_oracles as oracle
import minitepo.testing as kit
from loss_strategies import (
    DTYPE,
    OBJECTIVE_NAMES,
    agg_modes_of,
    batches,
    config,
    default_agg,
    examples,
    fill_masked,
    hyperparams,
    objective,
    run,
)

TIGHT = dict(rtol=1e-10, atol=1e-12)
EXACT = dict(rtol=0.0, atol=0.0)
# Invariants 6, 7, 9 and 10 are statements about TEPO's `sequence` clip (clip s_i with eps_low / eps_high); their
# tests pass ratio_clip="sequence" explicitly, whatever the default reading is. 17 is the `token_log` clip's.


def configs(name):
    """The kit's config strategy for a library objective: its hyper-parameters, and (B,) or (B, T) advantages."""
    return st.tuples(hyperparams(name), st.booleans()).map(lambda drawn: config(name, drawn[1], **drawn[0]))


def _cases():
    return [(name, agg) for name in OBJECTIVE_NAMES for agg in agg_modes_of(name)]


# --------------------------------------------------------------------------- 1. permutations


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
def test_permuting_responses_or_groups_jointly_changes_neither_loss_nor_gradient(name):
    kit.check_permutation(objective(name), configs=configs(name), max_examples=examples(10))


# --------------------------------------------------------------------------- 2. padding


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
def test_junk_at_masked_positions_changes_neither_loss_nor_any_gradient(name):
    kit.check_masked_junk(objective(name), configs=configs(name), max_examples=examples(10))


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
def test_adding_padding_columns_changes_neither_loss_nor_any_gradient(name):
    """(seq-mean-token-sum-norm is included: its constant is B * L_max, which padding does not change.)"""
    kit.check_padding_columns(objective(name), configs=configs(name), max_examples=examples(10))


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
def test_a_fully_padded_response_is_ignored(name):
    """An empty row counts in neither N nor B'. (Dr. GRPO's C = B * L_max does count rows, so with
    seq-mean-token-sum-norm the step's C is passed explicitly.)"""
    def with_fixed_c(batch):
        def fix(hp):
            if hp.get("agg", default_agg(name)) == "seq-mean-token-sum-norm":
                return {**hp, "normalizer": float(batch.B * batch.max_len)}
            return hp
        return configs(name).map(fix)

    kit.check_empty_response(objective(name), configs=with_fixed_c, max_examples=examples(10))


# --------------------------------------------------------------------------- 3. gradient accumulation


@pytest.mark.parametrize("name, agg", _cases())
def test_micro_batches_with_the_step_normalizer_reproduce_the_full_batch_gradient(name, agg):
    """Split the step at random rows; each micro-batch divides by the *step's* N, B' or C."""
    strategy = configs(name) if agg is None else configs(name).map(lambda hp: {**hp, "agg": agg})
    kit.check_micro_batches(objective(name), configs=strategy, max_examples=examples(6))


# --------------------------------------------------------------------------- 4. all-equal groups


GROUP_OBJECTIVES = ("grpo", "dapo", "dr_grpo", "gspo", "gspo_token", "tepo")


@pytest.mark.parametrize("name", GROUP_OBJECTIVES)
@pytest.mark.parametrize("scale", ["std", "none"])
@settings(max_examples=examples(8))
@given(data=st.data())
def test_a_group_whose_rewards_are_all_equal_contributes_no_policy_gradient(name, scale, data):
    """Its advantages are exactly 0, so its tokens get exactly 0 gradient -- TEPO's KL mask included."""
    from minitepo.advantages import group_advantages

    batch = data.draw(batches(perturb=1.0), label="batch")
    value = data.draw(st.floats(-5, 5, allow_nan=False), label="shared reward")
    flat = batch.group_ids == 0
    rewards = torch.where(flat, torch.tensor(value, dtype=DTYPE), batch.rewards)
    adv = group_advantages(rewards, batch.group_ids, scale=scale)
    assert (adv[flat] == 0).all(), f"all-equal group got advantages {adv[flat]}"
    # entropy fell everywhere: if TEPO's mask wrongly included this group, its KL would push gradient
    batch = batch.replace(seq_adv=adv.to(DTYPE), old_entropy=batch.entropy + 1.0)
    hp = {"beta": 0.0} if name == "grpo" else {"beta_mask": 1.0} if name == "tepo" else {}
    result = run(name, batch, **hp)
    assert (result.grad[flat] == 0).all()


@pytest.mark.parametrize("name", ["gtpo", "grpo_s"])
@settings(max_examples=examples(8))
@given(data=st.data())
def test_an_all_right_or_all_wrong_group_gets_no_gtpo_or_grpo_s_gradient(name, data):
    """Invariant 4 for the entropy-shaped objectives too: by default their shaping gives such a group exactly
    zero advantages (the z-score would otherwise blow entropy noise up into unit-size advantages)."""
    from minitepo.advantages import grpo_s_advantages, gtpo_advantages

    batch = data.draw(batches(perturb=1.0, empty_rows=False), label="batch")
    outcome = data.draw(st.sampled_from([0.0, 1.0]), label="shared outcome")
    flat = batch.group_ids == 0
    rewards = torch.where(flat, torch.tensor(outcome, dtype=DTYPE), (batch.rewards > 0).to(DTYPE))
    entropy = batch.entropy.abs() + 0.05
    if name == "gtpo":
        adv = gtpo_advantages(rewards, entropy, batch.mask, batch.group_ids)
        assert (adv[flat] == 0).all()
        batch = batch.replace(tok_adv=adv.to(DTYPE))
    else:
        adv = grpo_s_advantages(rewards, entropy, batch.mask, batch.group_ids)
        assert (adv[flat] == 0).all()
        batch = batch.replace(seq_adv=adv.to(DTYPE))
    assert (run(name, batch).grad[flat] == 0).all()


# --------------------------------------------------------------------------- 5. on-policy


@settings(max_examples=examples(20))
@given(batch=batches(perturb=0.0))
def test_on_policy_tepo_and_dapo_share_the_plain_policy_gradient(batch):
    """At theta = theta_old (mask off) both are -(1/N) sum_i A_i sum_t grad logp_{i,t}."""
    batch = batch.replace(old_logp=fill_masked(batch.logp, batch.mask, 5.0), old_entropy=batch.entropy)
    tepo = run("tepo", batch)  # default measured mask: empty, since entropy == old entropy
    tepo_off = run("tepo", batch, beta_mask=0.0)
    dapo = run("dapo", batch)
    n_tokens = batch.bool_mask.sum()
    expected = -(batch.seq_adv[:, None] * batch.bool_mask) / n_tokens
    torch.testing.assert_close(tepo.grad, expected, **TIGHT)
    torch.testing.assert_close(tepo_off.grad, expected, **TIGHT)
    torch.testing.assert_close(dapo.grad, expected, **TIGHT)
    torch.testing.assert_close(tepo.loss, dapo.loss, **TIGHT)
    assert float(tepo.stats["mask_frac"]) == 0.0


# --------------------------------------------------------------------------- 6. equal lengths


@settings(max_examples=examples(20))
@given(batch=batches(equal_lengths=True, empty_rows=False), eps=st.sampled_from([(0.2, 0.28), (3e-4, 4e-4)]),
       dual=st.sampled_from([None, 3.0]))
def test_with_equal_lengths_tepo_and_gspo_are_the_same_objective(batch, eps, dual):
    hp = dict(eps_low=eps[0], eps_high=eps[1], dual_clip=dual)
    tepo = run("tepo", batch, ratio_clip="sequence", beta_mask=0.0, **hp)   # a statement about the sequence clip
    gspo = run("gspo", batch, **hp)
    torch.testing.assert_close(tepo.loss, gspo.loss, **TIGHT)
    torch.testing.assert_close(tepo.grad, gspo.grad, **TIGHT)


@settings(max_examples=examples(20))
@given(batch=batches(equal_lengths=True, empty_rows=False), eps=st.sampled_from([(0.2, 0.28), (0.2, 0.2)]),
       token_level=st.booleans())
def test_with_equal_lengths_dapo_and_grpo_without_kl_are_the_same_objective(batch, eps, token_level):
    hp = dict(eps_low=eps[0], eps_high=eps[1], beta=0.0)
    dapo = run("dapo", batch, token_level, **hp)
    grpo = run("grpo", batch, token_level, **hp)
    torch.testing.assert_close(dapo.loss, grpo.loss, **TIGHT)
    torch.testing.assert_close(dapo.grad, grpo.grad, **TIGHT)


@settings(max_examples=examples(15))
@given(batch=batches())
def test_gspo_token_with_sequence_advantages_has_the_gradient_of_gspo(batch):
    token = run("gspo_token", batch)
    seq = run("gspo", batch)
    torch.testing.assert_close(token.loss, seq.loss, **TIGHT)
    torch.testing.assert_close(token.grad, seq.grad, **TIGHT)


# --------------------------------------------------------------------------- 7. TEPO clips whole sequences


@settings(max_examples=examples(20))
@given(batch=batches(empty_rows=False), data=st.data())
def test_tepo_clips_whole_sequences(batch, data):
    """A_i > 0 with s_i > 1 + eps_high (or A_i < 0 with s_i < 1 - eps_low): every token of o_i gets 0 gradient;
    an unclipped response gets -A_i s_i / N on every token, whatever its individual token ratios."""
    eps_low, eps_high = 0.2, 0.28
    clip = torch.tensor(data.draw(st.lists(st.booleans(), min_size=batch.B, max_size=batch.B), label="clip"))
    adv = batch.seq_adv
    noise = torch.randn(batch.B, batch.T, dtype=DTYPE, generator=torch.Generator().manual_seed(0))
    m = batch.bool_mask
    centred = (noise - (noise * m).sum(1, keepdim=True) / m.sum(1, keepdim=True)) * m  # token noise, mean 0 per row
    push = torch.where(adv > 0, math.log(1 + eps_high) + 0.1, math.log(1 - eps_low) - 0.1)  # log s_i beyond the edge
    inside = torch.full_like(push, 0.05 * (1 if data.draw(st.booleans(), label="sign") else -1))
    log_s = torch.where(clip, push, inside)  # (B,)
    old = batch.logp - log_s[:, None] - centred  # so that mean_t(logp - old) = log_s exactly
    batch = batch.replace(old_logp=fill_masked(old, m, -1e4))
    result = run("tepo", batch, ratio_clip="sequence", eps_low=eps_low, eps_high=eps_high, beta_mask=0.0)
    s = torch.tensor([v if v is not None else 1.0 for v in oracle.sequence_ratios(
        batch.logp.tolist(), batch.old_logp.tolist(), m.tolist())], dtype=DTYPE)
    clipped = clip & (adv != 0)
    assert (result.grad[clipped] == 0).all()
    expected = -(adv * s)[:, None] * m / m.sum()
    torch.testing.assert_close(result.grad[~clipped], expected[~clipped], **TIGHT)


# --------------------------------------------------------------------------- 8. the TEPO mask


@pytest.mark.parametrize("criterion", ["measured", "predicted"])
@pytest.mark.parametrize("mask_kl", ["k3", "k1_abs", "k2"])
@settings(max_examples=examples(10))
@given(batch=batches(perturb=0.3), beta_mask=st.sampled_from([1.0, 0.25]))
def test_the_tepo_mask_only_adds_kl_gradient_on_positive_advantage_tokens_whose_entropy_fell(
        criterion, mask_kl, batch, beta_mask):
    exact = dict(mask_criterion=criterion, mask_kl=mask_kl, mask_tol=0.0)   # the spec's criterion, as the oracle's
    with_mask = run("tepo", batch, beta_mask=beta_mask, **exact)
    without = run("tepo", batch, beta_mask=0.0, **exact)
    L = batch.lists()
    M = torch.tensor(oracle.tepo_mask(L["seq_adv"], L["mask"], mask_criterion=criterion, entropy=L["entropy"],
                                      old_entropy=L["old_entropy"], entropy_drop_score=L["entropy_drop_score"]))
    assert not (M & ~batch.bool_mask).any() and not (M & (batch.seq_adv <= 0)[:, None]).any()
    n_tokens = batch.bool_mask.sum()
    slope = torch.tensor([[oracle.kl_estimate(a, b, mask_kl)[1] for a, b in zip(ra, rb)]
                          for ra, rb in zip(L["logp"], L["old_logp"])], dtype=DTYPE)
    diff = with_mask.grad - without.grad
    assert (diff[~M] == 0).all(), "the mask changed the gradient of an unmasked token"
    torch.testing.assert_close(diff[M], (beta_mask * slope / n_tokens)[M], **TIGHT)
    assert float(with_mask.stats["mask_frac"]) == pytest.approx(float(M.sum() / n_tokens), abs=1e-6)


@settings(max_examples=examples(20))
@given(batch=batches(perturb=0.3), criterion=st.sampled_from(["measured", "predicted"]))
def test_tepo_with_beta_mask_zero_is_exactly_the_mask_free_loss(batch, criterion):
    off = run("tepo", batch, beta_mask=0.0, mask_criterion=criterion)
    no_decrease = batch.replace(old_entropy=batch.entropy, entropy_drop_score=-batch.entropy_drop_score.abs() - 1)
    empty = run("tepo", no_decrease, mask_criterion=criterion)
    torch.testing.assert_close(off.loss, empty.loss, **EXACT)
    torch.testing.assert_close(off.grad, empty.grad, **EXACT)
    assert float(empty.stats["mask_frac"]) == 0.0


@pytest.mark.parametrize("criterion", ["measured", "predicted"])
@settings(max_examples=examples(10))
@given(batch=batches(perturb=0.3))
def test_the_tepo_mask_never_carries_gradient(criterion, batch):
    result = run("tepo", batch, mask_criterion=criterion)
    for key in ("entropy", "old_entropy", "entropy_drop_score"):
        if key in result.grads:
            assert (result.grads[key] == 0).all(), f"gradient flowed into {key}"


# --------------------------------------------------------------------------- 9. AM-GM


@settings(max_examples=examples(20))
@given(batch=batches(empty_rows=False), equal=st.booleans())
def test_the_sequence_ratio_never_exceeds_the_mean_token_ratio(batch, equal):
    """AM-GM, s_i <= (1/|o_i|) sum_t r_{i,t}, read off the losses of one response with A = 1 and no clipping:
    TEPO's loss is -s_i and DAPO's is -mean_t r_{i,t}; equality iff all token ratios of o_i are equal."""
    if equal:
        batch = batch.replace(old_logp=batch.logp - 0.3)
    for i in range(min(batch.B, 3)):
        one = batch.rows([i]).replace(seq_adv=torch.ones(1, dtype=DTYPE))
        hp = dict(eps_low=0.2, eps_high=1e12)
        s = -run("tepo", one, ratio_clip="sequence", beta_mask=0.0, **hp).loss
        mean_r = -run("dapo", one, **hp).loss
        r = [math.exp(a - b) for a, b, m in zip(one.logp[0].tolist(), one.old_logp[0].tolist(), one.bool_mask[0]) if m]
        if max(r) - min(r) <= 1e-12 * max(r):
            torch.testing.assert_close(s, mean_r, **TIGHT)
        else:
            assert s <= mean_r * (1 + 1e-12)
            if max(r) - min(r) > 1e-3 * max(r):
                assert s < mean_r


# --------------------------------------------------------------------------- 10. length-1 responses


@settings(max_examples=examples(20))
@given(batch=batches(length=1), eps=st.sampled_from([(0.2, 0.28), (3e-4, 4e-4)]), dual=st.sampled_from([None, 3.0]))
def test_on_length_one_responses_tepo_is_dapo(batch, eps, dual):
    hp = dict(eps_low=eps[0], eps_high=eps[1], dual_clip=dual)
    tepo = run("tepo", batch, ratio_clip="sequence", beta_mask=0.0, **hp)   # the sequence clip with DAPO's eps
    dapo = run("dapo", batch, **hp)
    torch.testing.assert_close(tepo.loss, dapo.loss, **TIGHT)
    torch.testing.assert_close(tepo.grad, dapo.grad, **TIGHT)


# --------------------------------------------------------------------------- 11. token order


@pytest.mark.parametrize("name", ["grpo", "dapo", "dr_grpo", "gspo", "gspo_token", "tepo"])
def test_the_order_of_tokens_inside_a_response_does_not_matter(name):
    """Shuffle each response's positions (padding included) in every (B, T) tensor: loss unchanged,
    gradients shuffled along. GTPO is the exception: its shaping is position-aligned (test_advantages.py)."""
    kit.check_token_order(objective(name), configs=configs(name), max_examples=examples(10))


# --------------------------------------------------------------------------- what is a constant


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
def test_only_the_current_log_probs_receive_gradient(name):
    """old_logp, ref_logp, advantages, entropies and S(a) are constants of the update (sg[.] in the spec)."""
    kit.check_constants(objective(name), inputs=kit.FLOAT_TENSORS, configs=configs(name), max_examples=examples(8))


# --------------------------------------------------------------------------- stats


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
@settings(max_examples=examples(8))
@given(batch=batches(perturb=0.0))
def test_on_policy_stats_read_ratio_one_no_clipping_and_zero_kl(name, batch):
    batch = batch.replace(old_logp=batch.logp, old_entropy=batch.entropy)
    stats = run(name, batch).stats
    assert float(stats["clip_frac"]) == 0.0
    assert float(stats["ratio_mean"]) == pytest.approx(1.0, abs=1e-12)
    assert float(stats["approx_kl_old"]) == pytest.approx(0.0, abs=1e-12)
    if name in ("gspo", "gspo_token", "tepo"):
        assert float(stats["seq_ratio_mean"]) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("name", ["grpo", "dapo", "dr_grpo", "gtpo", "grpo_s", "gspo", "gspo_token", "tepo"])
@settings(max_examples=examples(8))
@given(batch=batches(empty_rows=False))
def test_clip_frac_is_one_when_every_ratio_is_pushed_past_the_clip_edge_in_its_advantages_direction(name, batch):
    adv = torch.where(batch.seq_adv == 0, torch.ones_like(batch.seq_adv), batch.seq_adv)
    push = torch.where(adv > 0, 1.0, -1.0)[:, None]  # log-ratio +-1: far outside 0.2 / 0.28
    batch = batch.replace(seq_adv=adv, tok_adv=adv[:, None].expand_as(batch.logp).clone(),
                          old_logp=batch.logp - push)
    stats = run(name, batch).stats
    assert float(stats["clip_frac"]) == pytest.approx(1.0)
    assert 0.0 <= float(stats["approx_kl_old"])


# --------------------------------------------------------------------------- 17. TEPO ratio_clip="token_log"

TOKEN_LOG = dict(ratio_clip="token_log", beta_mask=0.0)


@settings(max_examples=examples(20))
@given(batch=batches(perturb=0.05, empty_rows=False), token_level=st.booleans())
def test_token_log_inside_its_range_is_the_unclipped_policy_term(batch, token_level):
    """Every real log-ratio inside (-delta_low, delta_high): loss = -(1/N) sum_i sum_t A_it s_i, the unclipped term,
    with gradient -A_it s_i / N at token t (for sequence advantages, the gradient of -(1/N) sum_i |o_i| A_i s_i)."""
    m = batch.bool_mask
    x = (batch.logp - batch.old_logp)[m]
    delta = float(x.abs().max()) + 0.01                                     # wide enough that nothing is clipped
    result = run("tepo", batch, token_level, delta_low=delta, delta_high=delta, **TOKEN_LOG)
    s = torch.tensor([v if v is not None else 1.0 for v in oracle.sequence_ratios(
        batch.logp.tolist(), batch.old_logp.tolist(), m.tolist())], dtype=DTYPE)
    adv = batch.tok_adv if token_level else batch.seq_adv[:, None].expand_as(batch.logp)
    n_tokens = m.sum()
    torch.testing.assert_close(result.loss, -(adv * s[:, None])[m].sum() / n_tokens, **TIGHT)
    torch.testing.assert_close(result.grad, torch.where(m, -adv * s[:, None], 0.0) / n_tokens, **TIGHT)
    assert float(result.stats["clip_frac"]) == 0.0


@settings(max_examples=examples(20))
@given(batch=batches(perturb=1.0, empty_rows=False), data=st.data())
def test_token_log_takes_the_gradient_of_a_pessimistically_clipped_token_only(batch, data):
    """A token whose log-ratio left the range on the pessimistic side (A > 0 and above delta_high, A < 0 and below
    -delta_low) gets exactly 0 gradient; every other real token of its response keeps a non-zero one (A != 0)."""
    dl, dh = data.draw(st.sampled_from([(0.4, 0.4), (0.1, 0.3)]), label="deltas")
    result = run("tepo", batch, delta_low=dl, delta_high=dh, **TOKEN_LOG)
    m, adv = batch.bool_mask, batch.seq_adv[:, None].expand_as(batch.logp)
    x = batch.logp - batch.old_logp
    clipped = m & (((adv > 0) & (x > dh)) | ((adv < 0) & (x < -dl)))
    assert (result.grad[clipped] == 0).all()
    kept = m & ~clipped & (adv != 0)
    assert (result.grad[kept] != 0).all(), "an unclipped token lost its gradient"
    assert float(result.stats["clip_frac"]) == pytest.approx(int(clipped.sum()) / int(m.sum()), abs=1e-12)


@settings(max_examples=examples(20))
@given(batch=batches(perturb=0.0))
def test_on_policy_token_log_tepo_has_dapos_gradient(batch):
    """At theta = theta_old nothing is clipped and ~s_i = 1: the gradient is -(1/N) A_i on every real token."""
    batch = batch.replace(old_logp=fill_masked(batch.logp, batch.mask, 5.0), old_entropy=batch.entropy)
    tepo = run("tepo", batch, ratio_clip="token_log")
    dapo = run("dapo", batch)
    torch.testing.assert_close(tepo.grad, dapo.grad, **TIGHT)
    torch.testing.assert_close(tepo.loss, dapo.loss, **TIGHT)


# --------------------------------------------------------------------------- 18. TEPO mask_action="gate"


@pytest.mark.parametrize("ratio_clip", ["sequence", "token_log"])
@settings(max_examples=examples(10))
@given(batch=batches(perturb=0.3), criterion=st.sampled_from(["measured", "predicted"]))
def test_the_gate_zeroes_masked_tokens_and_leaves_the_rest_alone(ratio_clip, batch, criterion):
    """mask_action="gate": unmasked tokens' gradients equal the mask-free loss's, masked tokens get exactly 0,
    the loss value is the mask-free loss's (nothing is added), and an empty mask gives exactly the mask-free loss."""
    hp = dict(ratio_clip=ratio_clip, mask_criterion=criterion, mask_tol=0.0)   # the oracle's exact criterion
    gated = run("tepo", batch, mask_action="gate", **hp)
    free = run("tepo", batch, beta_mask=0.0, **hp)
    L = batch.lists()
    M = torch.tensor(oracle.tepo_mask(L["seq_adv"], L["mask"], mask_criterion=criterion, entropy=L["entropy"],
                                      old_entropy=L["old_entropy"], entropy_drop_score=L["entropy_drop_score"]))
    assert (gated.grad[M] == 0).all()
    torch.testing.assert_close(gated.grad[~M], free.grad[~M], **EXACT)
    torch.testing.assert_close(gated.loss, free.loss, **EXACT)
    assert float(gated.stats["mask_kl"]) == 0.0
    no_decrease = batch.replace(old_entropy=batch.entropy, entropy_drop_score=-batch.entropy_drop_score.abs() - 1)
    empty = run("tepo", no_decrease, mask_action="gate", **hp)
    torch.testing.assert_close(empty.grad, free.grad, **EXACT)
    torch.testing.assert_close(empty.loss, free.loss, **EXACT)
