"""Every objective equals a naive per-token loop of its formula (spec section 8, invariant 14).

The oracles in ``loss_oracles.py`` are written from ``spec/ALGORITHMS.md`` one token at a time,
in Python floats, with hand-derived gradients. Matching them in value *and* gradient on random
ragged, off-policy batches (every aggregation mode, every switch) is the strongest evidence
that the vectorised library computes the formula it documents.
"""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import loss_oracles as oracle
from loss_strategies import (
    DTYPE,
    OBJECTIVE_NAMES,
    SEQUENCE_ADVANTAGE_ONLY,
    agg_modes_of,
    batches,
    examples,
    fill_masked,
    hyperparams,
    library,
    run,
    run_oracle,
)

TIGHT = dict(rtol=1e-10, atol=1e-12)


def _cases():
    return [(name, agg) for name in OBJECTIVE_NAMES for agg in agg_modes_of(name)]


@pytest.mark.parametrize("name, agg", _cases())
@settings(max_examples=examples(10))
@given(data=st.data())
def test_every_objective_equals_its_naive_per_token_loop_in_value_and_gradient(name, agg, data):
    batch = data.draw(batches(), label="batch")
    hp = data.draw(hyperparams(name), label="hyper-parameters")
    if agg is not None:
        hp["agg"] = agg
    token_level = name not in SEQUENCE_ADVANTAGE_ONLY and data.draw(st.booleans(), label="token advantages")
    got = run(name, batch, token_level, **hp)
    want_loss, want_grad = run_oracle(name, batch, token_level, **hp)
    torch.testing.assert_close(got.loss, want_loss, **TIGHT)
    torch.testing.assert_close(got.grad, want_grad, **TIGHT)


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
@settings(max_examples=examples(10))
@given(batch=batches())
def test_each_objective_defaults_to_its_papers_settings(name, batch):
    """Called with tensors only, each objective uses the clip range, KL and aggregation of its paper."""
    got = run(name, batch)
    want_loss, want_grad = run_oracle(name, batch)
    torch.testing.assert_close(got.loss, want_loss, **TIGHT)
    torch.testing.assert_close(got.grad, want_grad, **TIGHT)


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
@settings(max_examples=examples(8))
@given(data=st.data())
def test_an_explicit_normalizer_replaces_the_batch_count(name, data):
    """With `normalizer=` given, the loss is the same sum divided by that constant instead."""
    batch = data.draw(batches(), label="batch")
    hp = data.draw(hyperparams(name), label="hyper-parameters")
    hp["normalizer"] = data.draw(st.sampled_from([1.0, 7.0, 123.0]), label="normalizer")
    got = run(name, batch, **hp)
    want_loss, want_grad = run_oracle(name, batch, **hp)
    torch.testing.assert_close(got.loss, want_loss, **TIGHT)
    torch.testing.assert_close(got.grad, want_grad, **TIGHT)


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
@settings(max_examples=examples(8))
@given(data=st.data())
def test_float32_inputs_give_the_float64_answer_to_single_precision(name, data):
    batch = data.draw(batches(perturb=0.3), label="batch")
    hp = data.draw(hyperparams(name), label="hyper-parameters")
    single = batch.map_tokens(lambda x: x.float() if x.is_floating_point() else x)
    single = single.replace(seq_adv=batch.seq_adv.float())
    got = run(name, single, **hp)
    want_loss, want_grad = run_oracle(name, batch, **hp)
    assert torch.isfinite(got.loss) and torch.isfinite(got.grad).all()
    torch.testing.assert_close(got.loss.double(), want_loss, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(got.grad.double(), want_grad, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- building blocks


@pytest.mark.parametrize("mode", oracle.AGG_MODES)
@settings(max_examples=examples(15))
@given(batch=batches(), data=st.data())
def test_aggregate_equals_the_naive_weighted_sum(mode, batch, data):
    normalizer = data.draw(st.sampled_from([None, 5.0]), label="normalizer")
    per_token = batch.tok_adv  # any (B, T) values, junk at masked positions included
    got = library().aggregate(per_token, batch.mask, mode, normalizer=normalizer, max_len=batch.max_len)
    want = oracle.aggregate(per_token.tolist(), batch.bool_mask.tolist(), mode, normalizer, batch.max_len)
    torch.testing.assert_close(got, torch.tensor(want, dtype=DTYPE), **TIGHT)


def test_seq_mean_token_sum_norm_defaults_to_batch_size_times_max_len():
    """Dr. GRPO's constant C = B * L_max (the response-length limit), not B * padded width."""
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.bool)
    per_token = torch.tensor([[1.0, 2.0, 99.0], [4.0, 99.0, 99.0]], dtype=DTYPE)
    got = library().aggregate(per_token, mask, "seq-mean-token-sum-norm", max_len=10)
    torch.testing.assert_close(got, torch.tensor(7.0 / (2 * 10), dtype=DTYPE), **TIGHT)


def test_the_four_aggregation_modes_on_a_worked_example():
    """Two responses of lengths 1 and 3 with token losses 4 and (1, 2, 3): the four weightings."""
    mask = torch.tensor([[1, 0, 0], [1, 1, 1]], dtype=torch.bool)
    per_token = torch.tensor([[4.0, -1e4, 1e4], [1.0, 2.0, 3.0]], dtype=DTYPE)
    agg = library().aggregate
    torch.testing.assert_close(agg(per_token, mask, "token-mean"), torch.tensor(10.0 / 4, dtype=DTYPE))
    torch.testing.assert_close(agg(per_token, mask, "seq-mean-token-mean"), torch.tensor((4.0 + 2.0) / 2, dtype=DTYPE))
    torch.testing.assert_close(agg(per_token, mask, "seq-mean-token-sum"), torch.tensor(10.0 / 2, dtype=DTYPE))
    torch.testing.assert_close(agg(per_token, mask, "seq-mean-token-sum-norm", max_len=5),
                               torch.tensor(10.0 / (2 * 5), dtype=DTYPE))


@pytest.mark.parametrize("kind", ["k1", "k2", "k3"])
@settings(max_examples=examples(15))
@given(batch=batches())
def test_kl_penalty_matches_the_spec_table_in_value_and_gradient(kind, batch):
    logp = fill_masked(batch.logp, batch.mask, -1.0).requires_grad_(True)  # |log-ratio| well inside the +-20 clamp
    ref = fill_masked(batch.ref_logp, batch.mask, -2.0)
    value = library().kl_penalty(logp, ref, kind)
    value.sum().backward()
    want = [[oracle.kl_estimate(a, b, kind) for a, b in zip(ra, rb)] for ra, rb in zip(logp.tolist(), ref.tolist())]
    want_value = torch.tensor([[v for v, _ in row] for row in want], dtype=DTYPE)
    torch.testing.assert_close(value.detach(), want_value, **TIGHT)
    torch.testing.assert_close(logp.grad, torch.tensor([[g for _, g in row] for row in want], dtype=DTYPE), **TIGHT)


def test_k3_of_a_huge_log_ratio_stays_finite():
    logp = torch.tensor([0.0, -1e4, -50.0], dtype=DTYPE, requires_grad=True)
    ref = torch.tensor([-1e4, 0.0, 0.0], dtype=DTYPE)
    value = library().kl_penalty(logp, ref, "k3")
    value.sum().backward()
    assert torch.isfinite(value).all() and torch.isfinite(logp.grad).all()
    assert (value >= 0).all()


def test_fill_masked_helper_only_touches_padding():
    """(A check of the test helper itself: junk goes to masked positions only.)"""
    mask = torch.tensor([[True, False]])
    out = fill_masked(torch.tensor([[1.0, 2.0]]), mask, 1e4)
    assert out.tolist() == [[1.0, 1e4]]
