"""The transformer: causal, blind to left padding, and exact with or without its KV cache.

Every comparison is against the model itself run the simplest possible way: one full forward
over the unpadded sequence, with no cache and no mask. The weights are re-drawn large (std 0.3
instead of the training init's 0.02) so attention is far from uniform and positions matter:
with the tiny training init a broken mask or a shifted position could hide inside round-off.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from minitepo.model import GPT, ModelConfig
from minitepo.rollout import positions_from_mask
from minitepo.tokenizer import Tokenizer

TOK = Tokenizer()
V = TOK.vocab_size
FAST = settings(max_examples=25, deadline=None)


def tiny_model(seed: int = 0, std: float = 0.3, **overrides) -> GPT:
    config = dict(vocab_size=V, n_layer=2, n_head=2, n_embd=32, max_seq_len=64)
    config.update(overrides)
    torch.manual_seed(seed)
    model = GPT(ModelConfig(**config))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, std)
    return model.eval()


MODEL = tiny_model()


def random_ids(seed: int, *shape: int) -> torch.Tensor:
    return torch.randint(0, V, shape, generator=torch.Generator().manual_seed(seed))


# ---- causality -----------------------------------------------------------------------------------

@FAST
@given(st.integers(2, 20), st.data())
def test_changing_a_future_token_never_changes_an_earlier_positions_logits(T, data):
    ids = random_ids(T, 2, T)
    t = data.draw(st.integers(1, T - 1), label="changed position")
    new_token = data.draw(st.integers(0, V - 1), label="new token")
    changed = ids.clone()
    changed[:, t] = new_token
    with torch.no_grad():
        before, after = MODEL(ids), MODEL(changed)
    torch.testing.assert_close(after[:, :t], before[:, :t], rtol=0, atol=1e-6)


def test_changing_a_past_token_does_change_later_logits():
    """The counterpart of causality, so the test above cannot pass on a model that ignores context."""
    ids = random_ids(1, 1, 10)
    changed = ids.clone()
    changed[0, 2] = (ids[0, 2] + 1) % V
    with torch.no_grad():
        assert (MODEL(ids)[:, 3:] - MODEL(changed)[:, 3:]).abs().amax() > 1e-3


# ---- the KV cache ------------------------------------------------------------------------------------

@pytest.mark.parametrize("prefill", [1, 5, 11])
def test_prefill_then_token_by_token_with_the_cache_equals_one_full_forward(prefill):
    ids = random_ids(prefill, 3, 12)
    with torch.no_grad():
        full = MODEL(ids)  # (B, T, V)
        cache = MODEL.new_cache(3, 12)
        steps = [MODEL(ids[:, :prefill], cache=cache)]
        for t in range(prefill, 12):
            steps.append(MODEL(ids[:, t:t + 1], cache=cache))
    cached = torch.cat(steps, 1)
    assert cache.length == 12
    torch.testing.assert_close(cached, full, rtol=0, atol=1e-5)


def test_the_cache_is_exact_for_left_padded_rows_with_a_key_mask_and_positions():
    lengths = [7, 3, 5]
    width, extra = max(lengths), 4
    rows = [random_ids(10 + i, n + extra) for i, n in enumerate(lengths)]  # prompt + continuation
    prompt = torch.full((3, width), TOK.pad_id)
    key_mask = torch.zeros(3, width, dtype=torch.bool)
    for i, n in enumerate(lengths):
        prompt[i, width - n:] = rows[i][:n]
        key_mask[i, width - n:] = True
    positions = positions_from_mask(key_mask)
    continuation = torch.stack([r[n:] for r, n in zip(rows, lengths)])  # (3, extra)
    with torch.no_grad():
        cache = MODEL.new_cache(3, width + extra)
        out = [MODEL(prompt, positions=positions, key_mask=key_mask, cache=cache)]
        for t in range(extra):
            out.append(MODEL(continuation[:, t:t + 1], positions=positions[:, -1:] + 1 + t, cache=cache))
        cached = torch.cat(out, 1)  # (3, width + extra, V)
        # Uncached, masked, padded: the same batch in one call.
        ids = torch.cat([prompt, continuation], 1)
        mask = torch.cat([key_mask, torch.ones(3, extra, dtype=torch.bool)], 1)
        uncached = MODEL(ids, positions=positions_from_mask(mask), key_mask=mask)
        for i, n in enumerate(lengths):
            alone = MODEL(rows[i][None])[0]  # (n + extra, V): the row on its own, no padding at all
            real = slice(width - n, width + extra)
            torch.testing.assert_close(cached[i, real], alone, rtol=0, atol=1e-5)
            torch.testing.assert_close(uncached[i, real], alone, rtol=0, atol=1e-5)


def test_last_only_returns_just_the_final_positions_logits():
    ids = random_ids(3, 2, 9)
    with torch.no_grad():
        torch.testing.assert_close(MODEL(ids, last_only=True), MODEL(ids)[:, -1:], rtol=0, atol=1e-6)


# ---- left padding ---------------------------------------------------------------------------------------

@FAST
@given(st.integers(1, 12), st.integers(1, 10), st.integers(0, 10**6))
def test_left_padding_with_masked_junk_never_changes_the_logits_of_real_tokens(n_real, n_pad, seed):
    real = random_ids(seed, n_real)
    junk = random_ids(seed + 1, n_pad)  # any tokens at all: the mask, not the token value, hides them
    ids = torch.cat([junk, real])[None]
    key_mask = torch.cat([torch.zeros(n_pad, dtype=torch.bool), torch.ones(n_real, dtype=torch.bool)])[None]
    with torch.no_grad():
        padded = MODEL(ids, positions=positions_from_mask(key_mask), key_mask=key_mask)
        alone = MODEL(real[None])
    torch.testing.assert_close(padded[:, n_pad:], alone, rtol=0, atol=1e-5)


def test_without_the_key_mask_the_junk_would_leak_in():
    """Why the mask exists: the same padded row, unmasked, reads the junk."""
    real, junk = random_ids(5, 6), random_ids(6, 4)
    ids = torch.cat([junk, real])[None]
    with torch.no_grad():
        unmasked = MODEL(ids)[:, 4:]
        alone = MODEL(real[None])
    assert (unmasked - alone).abs().amax() > 1e-3


def test_positions_count_from_each_rows_first_real_token():
    mask = torch.tensor([[False, False, True, True, True], [True, True, True, True, True]])
    assert positions_from_mask(mask).tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]]


# ---- tied embeddings ------------------------------------------------------------------------------------

def test_the_output_layer_is_the_token_embedding_transposed():
    captured = {}
    hook = MODEL.ln_f.register_forward_hook(lambda mod, inp, out: captured.update(h=out))
    try:
        with torch.no_grad():
            logits = MODEL(random_ids(7, 2, 6))
    finally:
        hook.remove()
    torch.testing.assert_close(logits, captured["h"] @ MODEL.wte.weight.T, rtol=0, atol=1e-6)
    vocab_shaped = [name for name, p in MODEL.named_parameters() if p.shape == (V, MODEL.config.n_embd)]
    assert vocab_shaped == ["wte.weight"], "no separate lm_head matrix"


def test_the_output_path_alone_sends_gradient_to_the_embedding():
    """With the input lookup frozen out (gradient only through ln_f(h) @ wte.T), wte still learns."""
    model = tiny_model(1)
    h = torch.randn(2, 3, model.config.n_embd)
    logits = model.ln_f(h) @ model.wte.weight.T
    logits[..., 4].sum().backward()
    grad = model.wte.weight.grad
    assert grad is not None and grad[4].abs().sum() > 0
    assert torch.count_nonzero(grad[torch.arange(V) != 4]) == 0


# ---- errors ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("overrides, message", [
    (dict(n_embd=30, n_head=4), "must be divisible by n_head"),
    (dict(n_embd=12, n_head=4), "head size 3 must be even"),
    (dict(n_layer=0), "n_layer must be a positive int"),
    (dict(n_head=-2), "n_head must be a positive int"),
    (dict(vocab_size=0), "vocab_size must be a positive int"),
    (dict(max_seq_len=0), "max_seq_len must be a positive int"),
    (dict(n_embd=32.0), "n_embd must be a positive int"),
])
def test_an_impossible_model_config_is_a_value_error_that_says_why(overrides, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**{"vocab_size": V, "n_layer": 1, "n_head": 2, "n_embd": 32, **overrides})


def test_a_sequence_longer_than_max_seq_len_is_a_value_error():
    model = tiny_model(max_seq_len=8)
    with torch.no_grad():
        model(random_ids(0, 1, 8))  # exactly at the limit is fine
        with pytest.raises(ValueError, match="sequence length 9 exceeds the model's max_seq_len=8"):
            model(random_ids(0, 1, 9))


def test_running_past_the_cache_capacity_or_max_seq_len_with_a_cache_is_a_value_error():
    model = tiny_model(max_seq_len=8)
    with torch.no_grad():
        cache = model.new_cache(1, 4)
        model(random_ids(0, 1, 4), cache=cache)
        with pytest.raises(ValueError, match="KV cache holds 4 positions; 5 were requested"):
            model(random_ids(0, 1, 1), cache=cache)
        cache = model.new_cache(1, 16)
        model(random_ids(0, 1, 8), cache=cache)
        with pytest.raises(ValueError, match="exceeds the model's max_seq_len=8"):
            model(random_ids(0, 1, 1), cache=cache)
