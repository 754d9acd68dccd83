"""Advantages and reward shaping (spec sections 2, 4, 7; section 8 invariants 1, 4, 11, 12, 13).

Group-relative advantages, DAPO's overlong penalty and dynamic-sampling filter, and the
entropy-weighted rewards of GTPO / GRPO-S, each checked against a naive loop in
``loss_oracles.py`` and against the properties the spec states for it.
"""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import loss_oracles as oracle
from loss_strategies import DTYPE, batches, examples, run
from minitepo.advantages import (
    group_advantages,
    grpo_s_advantages,
    grpo_s_rewards,
    gtpo_advantages,
    gtpo_token_rewards,
    informative_groups,
    overlong_penalty,
)

TIGHT = dict(rtol=1e-10, atol=1e-12)
TINY_EPS = 1e-12  # GTPO / GRPO-S denominators: the oracle has none, entropies here are >= 0.05
alphas = st.sampled_from([(1.0, 0.1), (1.0, 0.0), (0.5, 1.0), (2.0, 0.3)])


@st.composite
def shuffled_batches(draw, **kwargs):
    """A batch whose groups are interleaved (rows in random order): group_ids, not position, define groups."""
    batch = draw(batches(**kwargs))
    perm = draw(st.permutations(range(batch.B)))
    return batch.rows(perm)


def _ids(batch):
    return batch.group_ids.tolist()


# --------------------------------------------------------------------------- group-relative advantages


@pytest.mark.parametrize("scale", ["std", "none"])
@settings(max_examples=examples(20))
@given(batch=shuffled_batches(), distinct=st.booleans())
def test_group_advantages_equal_the_naive_formula(scale, batch, distinct):
    rewards = batch.rewards if not distinct else torch.randn(batch.B, dtype=DTYPE,
                                                             generator=torch.Generator().manual_seed(batch.B))
    got = group_advantages(rewards, batch.group_ids, scale=scale)
    want = oracle.group_advantages(rewards.tolist(), _ids(batch), scale=scale, eps=1e-6)
    torch.testing.assert_close(got, torch.tensor(want, dtype=DTYPE), **TIGHT)


@settings(max_examples=examples(20))
@given(n_groups=st.integers(1, 4), size=st.integers(1, 5), seed=st.integers(0, 1000),
       scale=st.sampled_from(["std", "none"]))
def test_group_size_is_shorthand_for_contiguous_groups(n_groups, size, seed, scale):
    rewards = torch.randint(0, 3, (n_groups * size,), generator=torch.Generator().manual_seed(seed)).to(DTYPE)
    ids = torch.arange(n_groups).repeat_interleave(size)
    torch.testing.assert_close(group_advantages(rewards, group_size=size, scale=scale),
                               group_advantages(rewards, ids, scale=scale), **TIGHT)


@settings(max_examples=examples(20))
@given(value=st.floats(-1e3, 1e3, allow_nan=False), size=st.integers(1, 9), scale=st.sampled_from(["std", "none"]),
       other=st.lists(st.floats(-5, 5, allow_nan=False), min_size=0, max_size=4))
def test_a_group_whose_rewards_are_all_equal_gets_exactly_zero_advantage(value, size, scale, other):
    """Never round-off divided by a tiny std: exactly 0 -- a group of one included."""
    rewards = torch.tensor([value] * size + other, dtype=DTYPE)
    ids = torch.tensor([0] * size + [1] * len(other))
    adv = group_advantages(rewards, ids, scale=scale)
    assert (adv[:size] == 0).all(), adv
    assert torch.isfinite(adv).all()


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(distinct_rewards=True), shift=st.floats(-100, 100, allow_nan=False),
       scale=st.sampled_from(["std", "none"]))
def test_advantages_do_not_change_when_every_reward_is_shifted(batch, shift, scale):
    a = group_advantages(batch.rewards, batch.group_ids, scale=scale)
    b = group_advantages(batch.rewards + shift, batch.group_ids, scale=scale)
    torch.testing.assert_close(b, a, rtol=1e-9, atol=1e-9)


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(), kappa=st.floats(0.1, 100))
def test_std_normalised_advantages_do_not_change_when_rewards_are_scaled_up_to_eps(batch, kappa):
    a = group_advantages(batch.rewards, batch.group_ids)
    b = group_advantages(kappa * batch.rewards, batch.group_ids)
    torch.testing.assert_close(b, a, rtol=0, atol=1e-4)


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(), kappa=st.floats(0.1, 100))
def test_mean_only_advantages_scale_with_the_rewards(batch, kappa):
    """Dr. GRPO: A = R - mean_g(R), so scaling R by kappa scales A by kappa."""
    a = group_advantages(batch.rewards, batch.group_ids, scale="none")
    b = group_advantages(kappa * batch.rewards, batch.group_ids, scale="none")
    torch.testing.assert_close(b, kappa * a, rtol=1e-9, atol=1e-12)


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(distinct_rewards=True))
def test_std_normalised_advantages_of_a_group_have_mean_zero_and_unit_bessel_std(batch):
    adv = group_advantages(batch.rewards, batch.group_ids)
    for g in batch.group_ids.unique():
        a = adv[batch.group_ids == g]
        assert abs(float(a.mean())) < 1e-12
        if len(a) > 1:
            assert float(a.std(unbiased=True)) == pytest.approx(1.0, abs=1e-4)


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(), data=st.data(), scale=st.sampled_from(["std", "none"]))
def test_permuting_responses_permutes_their_advantages(batch, data, scale):
    perm = torch.tensor(data.draw(st.permutations(range(batch.B))))
    a = group_advantages(batch.rewards, batch.group_ids, scale=scale)
    b = group_advantages(batch.rewards[perm], batch.group_ids[perm], scale=scale)
    torch.testing.assert_close(b, a[perm], **TIGHT)


# --------------------------------------------------------------------------- DAPO data-side helpers


@settings(max_examples=examples(20))
@given(batch=shuffled_batches())
def test_informative_groups_are_exactly_those_whose_rewards_differ(batch):
    got = informative_groups(batch.rewards, batch.group_ids)
    assert got.dtype == torch.bool
    assert got.tolist() == oracle.informative_groups(batch.rewards.tolist(), _ids(batch))


@settings(max_examples=examples(20))
@given(max_len=st.integers(2, 40), data=st.data())
def test_overlong_penalty_matches_dapos_piecewise_formula(max_len, data):
    cache_len = data.draw(st.integers(1, max_len))
    lengths = torch.arange(0, max_len + 6)
    want = torch.tensor([oracle.overlong_penalty(n, max_len, cache_len) for n in lengths.tolist()], dtype=DTYPE)
    torch.testing.assert_close(overlong_penalty(lengths.to(DTYPE), max_len, cache_len), want, **TIGHT)
    torch.testing.assert_close(overlong_penalty(lengths, max_len, cache_len).to(DTYPE), want, rtol=1e-6, atol=1e-6)


def test_overlong_penalty_is_zero_then_falls_linearly_to_minus_one_at_the_limit():
    pen = overlong_penalty(torch.tensor([10, 12, 14, 16, 20, 21, 100]), 20, 8).tolist()
    assert pen == pytest.approx([0.0, 0.0, -0.25, -0.5, -1.0, -1.0, -1.0])


# --------------------------------------------------------------------------- GTPO


def _gtpo_inputs(batch, binary=False):
    rewards = (batch.rewards > 0).to(DTYPE) if binary else batch.rewards
    return rewards, batch.correct, batch.entropy, batch.mask, batch.group_ids


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(), ab=alphas)
def test_gtpo_token_rewards_equal_the_naive_position_aligned_formula(batch, ab):
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch)
    got = gtpo_token_rewards(rewards, ent, mask, ids, correct=correct, alpha1=ab[0], alpha2=ab[1], eps=TINY_EPS)
    L = batch.lists()
    want = torch.tensor(oracle.gtpo_token_rewards(rewards.tolist(), correct.tolist(), L["entropy"], L["mask"],
                                                  _ids(batch), alpha1=ab[0], alpha2=ab[1]), dtype=DTYPE)
    m = batch.bool_mask
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got[m], want[m], rtol=1e-9, atol=1e-9)


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(), ab=alphas)
def test_gtpo_token_rewards_conserve_the_group_total_at_every_position(batch, ab):
    """At each position t of a group: sum over running correct responses of (r - alpha1 R_i) = alpha2 d_t,
    and sum over running wrong ones of r = -(alpha1 + alpha2) h_t."""
    a1, a2 = ab
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch)
    shaped = gtpo_token_rewards(rewards, ent, mask, ids, correct=correct, alpha1=a1, alpha2=a2, eps=TINY_EPS)
    m = batch.bool_mask
    for g in ids.unique():
        pos = m & ((ids == g) & correct)[:, None]  # (B, T) running correct responses of group g
        neg = m & ((ids == g) & ~correct)[:, None]
        bonus = torch.where(pos, shaped - a1 * rewards[:, None], torch.zeros_like(shaped)).sum(0)  # (T,)
        torch.testing.assert_close(bonus, a2 * pos.sum(0).to(DTYPE), rtol=1e-9, atol=1e-9)
        total_neg = torch.where(neg, shaped, torch.zeros_like(shaped)).sum(0)
        torch.testing.assert_close(total_neg, -(a1 + a2) * neg.sum(0).to(DTYPE), rtol=1e-9, atol=1e-9)


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(), ab=alphas)
def test_equal_entropies_at_a_position_give_flat_rewards_of_plus_or_minus_alpha1_plus_alpha2(batch, ab):
    a1, a2 = ab
    column = batch.entropy[0:1].abs() + 0.1  # one entropy per position, shared by every response
    batch = batch.replace(entropy=column.expand_as(batch.entropy).clone())
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch, binary=True)
    shaped = gtpo_token_rewards(rewards, ent, mask, ids, correct=correct, alpha1=a1, alpha2=a2, eps=TINY_EPS)
    want = ((a1 + a2) * torch.where(correct, 1.0, -1.0).to(DTYPE))[:, None].expand_as(shaped)
    m = batch.bool_mask
    torch.testing.assert_close(shaped[m], want[m], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("equal_entropies", [False, True], ids=["alpha2=0", "equal entropies"])
@settings(max_examples=examples(20))
@given(batch=shuffled_batches(prefix=True), a1=st.sampled_from([1.0, 0.5]))
def test_gtpo_without_entropy_signal_is_dapo_up_to_advantage_normalisation(equal_entropies, batch, a1):
    """alpha2 = 0, or equal entropies at each position: every token of a response gets the same advantage,
    positive iff the response is correct (in a mixed group), and GTPO's loss is DAPO's with that advantage."""
    a2 = 0.1 if equal_entropies else 0.0
    if equal_entropies:
        batch = batch.replace(entropy=torch.ones_like(batch.entropy))
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch, binary=True)
    adv = gtpo_advantages(rewards, ent, mask, ids, correct=correct, alpha1=a1, alpha2=a2)
    m = batch.bool_mask
    per_seq = torch.zeros(batch.B, dtype=DTYPE)
    for i in range(batch.B):
        row = adv[i][m[i]]
        if len(row):  # constant up to the epsilons in the denominators
            torch.testing.assert_close(row, row[:1].expand_as(row), rtol=0, atol=1e-6)
            per_seq[i] = row.mean()
    nonempty = m.any(1)
    mixed = torch.tensor([bool((correct & nonempty)[ids == g].any() and (~correct & nonempty)[ids == g].any())
                          for g in ids.tolist()])
    assert ((per_seq > 0) == correct)[mixed & nonempty].all(), (per_seq, correct, mixed)
    tok = batch.replace(tok_adv=adv.to(DTYPE))
    seq = batch.replace(seq_adv=per_seq)
    gtpo, dapo = run("gtpo", tok), run("dapo", seq)
    torch.testing.assert_close(gtpo.loss, dapo.loss, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(gtpo.grad, dapo.grad, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("adv_norm", ["union", "split"])
@settings(max_examples=examples(20))
@given(batch=shuffled_batches(), ab=alphas)
def test_gtpo_advantages_equal_the_naive_z_score_of_shaped_rewards(adv_norm, batch, ab):
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch)
    got = gtpo_advantages(rewards, ent, mask, ids, correct=correct, alpha1=ab[0], alpha2=ab[1], adv_norm=adv_norm,
                          equal_groups="shape")  # the formula alone; equal groups are tested below
    L = batch.lists()
    want = torch.tensor(oracle.gtpo_advantages(rewards.tolist(), correct.tolist(), L["entropy"], L["mask"], _ids(batch),
                                               alpha1=ab[0], alpha2=ab[1], adv_norm=adv_norm), dtype=DTYPE)
    m = batch.bool_mask
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got[m], want[m], rtol=1e-7, atol=1e-8)


def test_gtpo_shaping_depends_on_token_position():
    """Invariant 11, other direction: reversing one correct response changes the *other* response's rewards,
    because entropies are compared position by position (index t) across the group."""
    rewards = torch.tensor([1.0, 1.0], dtype=DTYPE)
    correct = torch.tensor([True, True])
    mask = torch.ones(2, 2, dtype=torch.bool)
    ids = torch.tensor([0, 0])
    ent = torch.tensor([[1.0, 2.0], [1.0, 1.0]], dtype=DTYPE)
    reversed_first = torch.tensor([[2.0, 1.0], [1.0, 1.0]], dtype=DTYPE)
    a = gtpo_token_rewards(rewards, ent, mask, ids, correct=correct, alpha1=1.0, alpha2=0.3, eps=TINY_EPS)
    b = gtpo_token_rewards(rewards, reversed_first, mask, ids, correct=correct, alpha1=1.0, alpha2=0.3, eps=TINY_EPS)
    torch.testing.assert_close(a[1], torch.tensor([1.3, 1.0 + 0.3 * 2 / 3], dtype=DTYPE))
    torch.testing.assert_close(b[1], torch.tensor([1.0 + 0.3 * 2 / 3, 1.3], dtype=DTYPE))
    assert not torch.allclose(a[1], b[1])


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(), data=st.data(), adv_norm=st.sampled_from(["union", "split"]))
def test_gtpo_advantages_follow_their_responses_under_permutation(batch, data, adv_norm):
    perm = torch.tensor(data.draw(st.permutations(range(batch.B))))
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch)
    a = gtpo_advantages(rewards, ent, mask, ids, correct=correct, adv_norm=adv_norm)
    b = gtpo_advantages(rewards[perm], ent[perm], mask[perm], ids[perm], correct=correct[perm], adv_norm=adv_norm)
    m = batch.bool_mask[perm]
    torch.testing.assert_close(b[m], a[perm][m], rtol=1e-9, atol=1e-9)


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(empty_rows=False), junk=st.sampled_from([float("nan"), float("inf"), -1e4, 0.0]))
def test_gtpo_and_grpo_s_ignore_whatever_entropy_padding_holds(batch, junk):
    """Invariant 2 for the shaping: entropies at masked positions (NaN, inf, negative, 0) change nothing."""
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch)
    dirty = torch.where(batch.bool_mask, ent, torch.tensor(junk, dtype=DTYPE))
    clean = torch.where(batch.bool_mask, ent, torch.tensor(1.0, dtype=DTYPE))
    for fn in (gtpo_token_rewards, gtpo_advantages, grpo_s_rewards, grpo_s_advantages):
        a = fn(rewards, clean, mask, ids, correct=correct)
        b = fn(rewards, dirty, mask, ids, correct=correct)
        assert torch.isfinite(b).all(), fn.__name__
        torch.testing.assert_close(b, a, rtol=0, atol=0)


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(empty_rows=False))
def test_gtpo_and_grpo_s_treat_entropies_as_constants(batch):
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch)
    ent = ent.clone().requires_grad_(True)
    for fn in (gtpo_token_rewards, gtpo_advantages, grpo_s_rewards, grpo_s_advantages):
        out = fn(rewards, ent, mask, ids, correct=correct)
        assert not out.requires_grad


# --------------------------------------------------------------------------- GRPO-S


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(empty_rows=False), ab=alphas)
def test_grpo_s_rewards_and_advantages_equal_the_naive_formula(batch, ab):
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch)
    L = batch.lists()
    args = (rewards.tolist(), correct.tolist(), L["entropy"], L["mask"], _ids(batch))
    got_r = grpo_s_rewards(rewards, ent, mask, ids, correct=correct, alpha1=ab[0], alpha2=ab[1], eps=TINY_EPS)
    want_r = oracle.grpo_s_rewards(*args, alpha1=ab[0], alpha2=ab[1])
    torch.testing.assert_close(got_r, torch.tensor(want_r, dtype=DTYPE), rtol=1e-9, atol=1e-9)
    got_a = grpo_s_advantages(rewards, ent, mask, ids, correct=correct, alpha1=ab[0], alpha2=ab[1], equal_groups="shape")
    want_a = oracle.grpo_s_advantages(*args, alpha1=ab[0], alpha2=ab[1])
    torch.testing.assert_close(got_a, torch.tensor(want_a, dtype=DTYPE), rtol=1e-7, atol=1e-8)


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(empty_rows=False), ab=alphas)
def test_grpo_s_rewards_conserve_the_group_total(batch, ab):
    a1, a2 = ab
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch)
    shaped = grpo_s_rewards(rewards, ent, mask, ids, correct=correct, alpha1=a1, alpha2=a2, eps=TINY_EPS)
    for g in ids.unique():
        pos, neg = (ids == g) & correct, (ids == g) & ~correct
        assert float((shaped - a1 * rewards)[pos].sum()) == pytest.approx(a2 * int(pos.sum()), abs=1e-9)
        assert float(shaped[neg].sum()) == pytest.approx(-(a1 + a2) * int(neg.sum()), abs=1e-9)


@settings(max_examples=examples(20))
@given(batch=shuffled_batches(empty_rows=False))
def test_grpo_s_with_alpha2_zero_is_grpo_up_to_eps(batch):
    """Binary rewards: shaped = alpha1 * (2R - 1), an affine map of R, which the z-score removes."""
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch, binary=True)
    got = grpo_s_advantages(rewards, ent, mask, ids, correct=correct, alpha1=1.0, alpha2=0.0)
    torch.testing.assert_close(got, group_advantages(rewards, ids), rtol=0, atol=1e-5)


# --------------------------------------------------------------------------- bad input


def test_advantage_helpers_reject_bad_input_with_a_clear_error():
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0], dtype=DTYPE)
    with pytest.raises(ValueError):
        group_advantages(rewards, torch.tensor([0, 0, 1]))  # one group id short
    with pytest.raises(ValueError):
        group_advantages(rewards, group_size=3)  # 4 responses are not groups of 3
    with pytest.raises(ValueError, match="std"):
        group_advantages(rewards, group_size=2, scale="mad")
    ent = torch.ones(4, 3, dtype=DTYPE)
    mask = torch.ones(4, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="union"):
        gtpo_advantages(rewards, ent, mask, torch.tensor([0, 0, 1, 1]), adv_norm="both")


# --------------------------------------------------------------------------- GTPO / GRPO-S: readings and equal groups

@settings(max_examples=examples(20))
@given(batch=shuffled_batches(empty_rows=False), ab=alphas, wrong_weight=st.sampled_from(["inverse_entropy", "entropy"]),
       equal_groups=st.sampled_from(["zero", "shape"]))
def test_every_gtpo_and_grpo_s_switch_equals_the_naive_formula(batch, ab, wrong_weight, equal_groups):
    rewards, correct, ent, mask, ids = _gtpo_inputs(batch, binary=True)
    L = batch.lists()
    args = (rewards.tolist(), correct.tolist(), L["entropy"], L["mask"], _ids(batch))
    kw = dict(alpha1=ab[0], alpha2=ab[1], wrong_weight=wrong_weight, equal_groups=equal_groups)
    got = gtpo_advantages(rewards, ent, mask, ids, correct=correct, **kw)
    want = torch.tensor(oracle.gtpo_advantages(*args, **kw), dtype=DTYPE)
    m = batch.bool_mask
    torch.testing.assert_close(got[m], want[m], rtol=1e-7, atol=1e-8)
    got_s = grpo_s_advantages(rewards, ent, mask, ids, correct=correct, **kw)
    torch.testing.assert_close(got_s, torch.tensor(oracle.grpo_s_advantages(*args, **kw), dtype=DTYPE),
                               rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("outcome", [1.0, 0.0])
def test_a_group_that_is_all_right_or_all_wrong_gets_exactly_zero_gtpo_and_grpo_s_advantages(outcome):
    """The audit's case: G = 8, entropies within +-5%. Z-scoring the shaped rewards would turn the alpha2-sized
    entropy differences into unit-size advantages (std 1); by default such a group carries no signal, as in GRPO."""
    g = torch.Generator().manual_seed(0)
    G, T = 8, 6
    entropy = 1.0 + 0.05 * (2 * torch.rand(G, T, generator=g, dtype=DTYPE) - 1)
    mask = torch.ones(G, T, dtype=torch.bool)
    rewards = torch.full((G,), outcome, dtype=DTYPE)
    shaped = gtpo_advantages(rewards, entropy, mask, group_size=G, equal_groups="shape")
    assert shaped.std().item() == pytest.approx(1.0, rel=0.05)          # what the alternative does
    assert torch.equal(gtpo_advantages(rewards, entropy, mask, group_size=G), torch.zeros(G, T, dtype=DTYPE))
    assert torch.equal(grpo_s_advantages(rewards, entropy, mask, group_size=G), torch.zeros(G, dtype=DTYPE))


def test_the_entropy_reading_spreads_a_wrong_answers_penalty_towards_its_uncertain_tokens():
    entropy = torch.tensor([[0.2, 2.0], [1.0, 1.0]], dtype=DTYPE)          # row 0: wrong, row 1: right
    mask = torch.ones(2, 2, dtype=torch.bool)
    rewards = torch.tensor([0.0, 1.0], dtype=DTYPE)
    inverse = gtpo_token_rewards(rewards, entropy, mask, group_size=2)
    direct = gtpo_token_rewards(rewards, entropy, mask, group_size=2, wrong_weight="entropy")
    # one wrong response per position: it takes the whole -alpha1 - alpha2 either way ...
    torch.testing.assert_close(inverse[0], torch.full((2,), -1.1, dtype=DTYPE))
    torch.testing.assert_close(direct[0], torch.full((2,), -1.1, dtype=DTYPE))
    # ... and with two wrong responses the weights decide who takes more of the penalty
    two_wrong = torch.tensor([0.0, 0.0, 1.0], dtype=DTYPE)
    ent = torch.tensor([[0.5], [2.0], [1.0]], dtype=DTYPE)
    m = torch.ones(3, 1, dtype=torch.bool)
    inv = gtpo_token_rewards(two_wrong, ent, m, group_size=3)[:2, 0]
    ent_w = gtpo_token_rewards(two_wrong, ent, m, group_size=3, wrong_weight="entropy")[:2, 0]
    assert inv[0] < inv[1]          # 1/H: the confident (H = 0.5) wrong token loses more
    assert ent_w[1] < ent_w[0]      # H: the uncertain (H = 2) wrong token loses more
    torch.testing.assert_close(inv.sum(), torch.tensor(-2.2, dtype=DTYPE))   # conservation either way
    torch.testing.assert_close(ent_w.sum(), torch.tensor(-2.2, dtype=DTYPE))
