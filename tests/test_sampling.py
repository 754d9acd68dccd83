"""The sampler: it records exactly the distribution it sampled from, and masks responses by position.

Oracles, all independent of ``minitepo.rollout``:

* a naive per-row pass: each row's real tokens alone (no padding, no cache, no mask), the model
  in float64, softmax written out by hand, top-k by sorting, entropy as ``-sum p log p``;
* the first EOS found by scanning the sampled ids in Python.

The model's weights are drawn large (std 0.3) so its distributions are far from uniform, and the
final LayerNorm's bias is pushed along EOS's embedding so about a third of the responses end
early: every test sees finished and truncated rows side by side.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from minitepo.model import GPT, ModelConfig
from minitepo.rollout import (Rollout, SamplerConfig, concat_rollouts, left_pad, positions_from_mask,
                               sample, score_rollout)
from minitepo.shared_prompt import response_logits, score_rollout_shared_prompt
from minitepo.tokenizer import Tokenizer

TOK = Tokenizer()
V, EOS, PAD, BOS = TOK.vocab_size, TOK.eos_id, TOK.pad_id, TOK.bos_id
PROMPTS = [[BOS] + TOK.encode(text) for text in ("12+34=", "7+8=", "123+456=")]  # three different lengths


def eos_prone_model(seed: int = 0, eos_boost: float = 2.0) -> GPT:
    torch.manual_seed(seed)
    model = GPT(ModelConfig(vocab_size=V, n_layer=2, n_head=2, n_embd=32, max_seq_len=64))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
        w = model.wte.weight[EOS]
        model.ln_f.bias.add_(eos_boost * w / w.dot(w))  # raises the EOS logit by exactly eos_boost
    return model.eval()


MODEL = eos_prone_model()


def draw(seed: int = 0, *, prompts=PROMPTS, group_size: int = 4, model: GPT = MODEL, pad_id: int = PAD,
         eos_id: int = EOS, **sampler) -> Rollout:
    config = SamplerConfig(**{"max_new_tokens": 8, **sampler})
    return sample(model, prompts, group_size=group_size, eos_id=eos_id, pad_id=pad_id, config=config,
                  generator=torch.Generator().manual_seed(seed))


def first_eos(row: list[int], eos_id: int = EOS) -> int | None:
    return row.index(eos_id) if eos_id in row else None


def naive_distributions(model: GPT, prompt: list[int], response: list[int], temperature: float,
                        top_k: int | None) -> torch.Tensor:
    """Probabilities (len(response), V) of each response token's sampling distribution, in float64.

    One unpadded forward over ``prompt + response``; softmax and top-k written out by hand.
    """
    model64 = copy.deepcopy(model).double()
    with torch.no_grad():
        logits = model64(torch.tensor([prompt + response]))[0]  # (Tp + T, V)
    logits = logits[len(prompt) - 1: len(prompt) - 1 + len(response)]  # the ones that predicted the response
    if temperature > 0:
        logits = logits / temperature
    if top_k is not None:
        kth = logits.sort(-1, descending=True).values[:, top_k - 1: top_k]
        logits = torch.where(logits >= kth, logits, torch.tensor(-math.inf, dtype=logits.dtype))
    e = torch.exp(logits - logits.max(-1, keepdim=True).values)
    return e / e.sum(-1, keepdim=True)


def real_rows(rollout: Rollout):
    """(prompt ids, response ids) of every row with padding stripped, using masks only."""
    for i in range(rollout.prompt_ids.size(0)):
        prompt = rollout.prompt_ids[i][rollout.prompt_mask[i]].tolist()
        response = rollout.response_ids[i][rollout.mask[i].bool()].tolist()
        yield prompt, response


# ---- shapes and groups -------------------------------------------------------------------------------

def test_a_rollout_has_p_times_g_rows_with_each_prompts_group_contiguous():
    r = draw(group_size=4)
    P, G, Tp = len(PROMPTS), 4, max(map(len, PROMPTS))
    assert r.prompt_ids.shape == r.prompt_mask.shape == (P * G, Tp)
    T = r.response_ids.size(1)
    assert 1 <= T <= 8
    for t in (r.mask, r.old_logp, r.old_entropy):
        assert t.shape == (P * G, T)
    assert r.finished.shape == (P * G,) and r.finished.dtype == torch.bool
    assert r.group_size == G
    assert r.group_ids.tolist() == [i // G for i in range(P * G)]
    for row, (prompt, _) in enumerate(real_rows(r)):
        assert prompt == PROMPTS[row // G]


def test_prompts_are_left_padded_so_every_row_ends_its_prompt_in_the_same_column():
    r = draw()
    Tp = r.prompt_ids.size(1)
    for row in range(r.prompt_ids.size(0)):
        n = len(PROMPTS[row // 4])
        assert r.prompt_mask[row].tolist() == [False] * (Tp - n) + [True] * n
        assert r.prompt_ids[row, : Tp - n].tolist() == [PAD] * (Tp - n)
        assert r.prompt_ids[row, Tp - n:].tolist() == PROMPTS[row // 4]


def test_the_fixture_model_produces_both_finished_and_truncated_rows():
    r = draw()
    assert r.finished.any() and not r.finished.all()


# ---- reproducibility ----------------------------------------------------------------------------------

def test_the_same_seed_gives_the_same_samples():
    a, b = draw(3), draw(3)
    assert torch.equal(a.response_ids, b.response_ids)
    assert torch.equal(a.old_logp, b.old_logp) and torch.equal(a.mask, b.mask)


def test_different_seeds_give_different_samples():
    assert not torch.equal(draw(3).response_ids, draw(4).response_ids)


def test_greedy_decoding_ignores_the_generator():
    assert torch.equal(draw(1, temperature=0).response_ids, draw(2, temperature=0).response_ids)


def test_top_k_of_one_is_greedy_decoding_with_log_prob_zero_and_entropy_zero():
    top1, greedy = draw(5, top_k=1), draw(6, temperature=0)
    assert torch.equal(top1.response_ids, greedy.response_ids)
    assert torch.equal(top1.mask, greedy.mask)
    assert top1.old_logp.abs().max() == 0 and top1.old_entropy.abs().max() == 0


@pytest.mark.parametrize("sampler", [dict(), dict(temperature=0.7), dict(temperature=1.3, top_k=5)])
def test_the_kv_cache_changes_nothing_the_sampler_returns(sampler):
    cached, recomputed = draw(7, use_cache=True, **sampler), draw(7, use_cache=False, **sampler)
    assert torch.equal(cached.response_ids, recomputed.response_ids)
    assert torch.equal(cached.mask, recomputed.mask)
    torch.testing.assert_close(cached.old_logp, recomputed.old_logp, rtol=0, atol=1e-5)
    torch.testing.assert_close(cached.old_entropy, recomputed.old_entropy, rtol=0, atol=1e-5)


def full_pass_logits(model: GPT, r: Rollout) -> torch.Tensor:
    """The response-predicting logits of one plain forward pass over every row's [prompt | response]."""
    ids = torch.cat([r.prompt_ids, r.response_ids], 1)
    key_mask = torch.cat([r.prompt_mask, torch.ones_like(r.response_ids, dtype=torch.bool)], 1)
    logits = model(ids[:, :-1], positions=positions_from_mask(key_mask)[:, :-1], key_mask=key_mask[:, :-1])
    return logits[:, r.prompt_ids.size(1) - 1:]


@pytest.mark.parametrize("shuffle, new_tokens", [(False, 8), (True, 8), (False, 1)])
def test_reading_each_prompt_once_gives_the_full_passes_logits_and_gradients(shuffle, new_tokens):
    model = eos_prone_model(3)
    r = draw(21, model=model, max_new_tokens=new_tokens)  # 3 prompts of different lengths x 4 responses, finished and truncated rows
    if shuffle:  # a mini-batch: rows in any order, some prompts with fewer rows than others
        r = r.select(torch.tensor([7, 0, 11, 3, 4, 9, 1]))
    full, shared = full_pass_logits(model, r), response_logits(model, r)
    torch.testing.assert_close(shared, full, rtol=0, atol=1e-5)
    weights = torch.randn_like(full)  # any scalar function of the logits
    params = list(model.parameters())
    g_full = torch.autograd.grad((full * weights).sum(), params)
    g_shared = torch.autograd.grad((shared * weights).sum(), params)
    for a, b in zip(g_shared, g_full):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shuffle", [False, True])
def test_the_shared_prompt_scoring_equals_the_plain_pass_in_value_and_gradient(shuffle):
    """The trainer's two scorings (``TrainerConfig.scoring``) compute one thing: log-probs, entropies and the
    gradient of any function of the log-probs agree to round-off, whatever the rows and their order."""
    model = eos_prone_model(5)
    r = draw(23, model=model, max_new_tokens=8)
    if shuffle:
        r = r.select(torch.tensor([5, 2, 11, 0, 8]))
    (plain_logp, plain_h), (shared_logp, shared_h) = score_rollout(model, r), score_rollout_shared_prompt(model, r)
    real = r.mask.bool()
    torch.testing.assert_close(shared_logp[real], plain_logp[real], rtol=0, atol=1e-5)
    torch.testing.assert_close(shared_h[real], plain_h[real], rtol=0, atol=1e-5)
    weights = torch.randn(plain_logp.shape) * r.mask
    params = list(model.parameters())
    g_plain = torch.autograd.grad((plain_logp * weights).sum(), params)
    g_shared = torch.autograd.grad((shared_logp * weights).sum(), params)
    for a, b in zip(g_shared, g_plain):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


# ---- what the sampler records ---------------------------------------------------------------------------

@pytest.mark.parametrize("temperature, top_k", [(1.0, None), (0.7, None), (1.3, None), (1.0, 5), (0.7, 3)])
def test_recorded_logp_and_entropy_are_those_of_the_distribution_sampled_from(temperature, top_k):
    r = draw(11, temperature=temperature, top_k=top_k)
    for row, (prompt, response) in enumerate(real_rows(r)):
        probs = naive_distributions(MODEL, prompt, response, temperature, top_k)  # (n, V) float64
        picked = probs[torch.arange(len(response)), torch.tensor(response)]
        assert (picked > 0).all(), "a sampled token must have positive probability (top-k respected)"
        entropy = -(probs * torch.log(probs.clamp_min(1e-300))).sum(-1)  # 0 log 0 = 0
        n = len(response)
        torch.testing.assert_close(r.old_logp[row, :n].double(), picked.log(), rtol=0, atol=1e-5)
        torch.testing.assert_close(r.old_entropy[row, :n].double(), entropy, rtol=0, atol=1e-5)
        assert (r.old_logp[row, n:] == 0).all() and (r.old_entropy[row, n:] == 0).all()


@pytest.mark.parametrize("temperature", [1.0, 0.7, 1.5])
def test_a_fresh_teacher_forced_pass_scores_the_rollout_as_the_sampler_did(temperature):
    r = draw(13, temperature=temperature)
    with torch.no_grad():
        logp, entropy = score_rollout(MODEL, r, temperature=temperature)
    real = r.mask.bool()
    torch.testing.assert_close(logp[real], r.old_logp[real], rtol=0, atol=1e-5)
    torch.testing.assert_close(entropy[real], r.old_entropy[real], rtol=0, atol=1e-5)


def test_score_rollout_lets_gradients_flow_to_the_weights():
    model = copy.deepcopy(MODEL)
    logp, _ = score_rollout(model, draw(14, model=model))
    logp.sum().backward()
    assert model.wte.weight.grad is not None and model.wte.weight.grad.abs().sum() > 0


# ---- the response mask -------------------------------------------------------------------------------------

def check_mask_by_first_eos(r: Rollout, eos_id: int, max_new_tokens: int) -> None:
    T = r.response_ids.size(1)
    for row, ids in enumerate(r.response_ids.tolist()):
        stop = first_eos(ids, eos_id)
        length = max_new_tokens if stop is None else stop + 1
        assert r.mask[row].tolist() == [1.0] * length + [0.0] * (T - length)
        assert r.lengths[row] == length
        assert bool(r.finished[row]) == (stop is not None)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_mask_covers_each_response_up_to_and_including_its_first_eos(seed):
    r = draw(seed)
    check_mask_by_first_eos(r, EOS, 8)
    for row, ids in enumerate(r.response_ids.tolist()):
        n = int(r.lengths[row])
        assert ids[n:] == [PAD] * (len(ids) - n), "PAD fills the row after its first EOS"


def test_truncated_rows_have_the_full_length_and_are_not_finished():
    r = draw(0, max_new_tokens=5)
    truncated = ~r.finished
    assert truncated.any()
    assert (r.lengths[truncated] == 5).all()
    assert all(EOS not in ids for ids in r.response_ids[truncated].tolist())


def test_the_mask_stays_right_when_pad_and_eos_are_the_same_id():
    same = draw(21, pad_id=EOS)
    apart = draw(21, pad_id=PAD)
    assert same.finished.any() and not same.finished.all()
    check_mask_by_first_eos(same, EOS, 8)
    assert torch.equal(same.mask, apart.mask)
    assert torch.equal(same.finished, apart.finished)
    real = same.mask.bool()
    assert torch.equal(same.response_ids[real], apart.response_ids[real])
    torch.testing.assert_close(same.old_logp, apart.old_logp, rtol=0, atol=1e-6)


def test_sampling_stops_early_once_every_row_has_finished():
    r = draw(0, prompts=PROMPTS[:1], group_size=1, max_new_tokens=30, model=eos_prone_model(eos_boost=8.0))
    assert r.finished.all()
    assert r.response_ids.size(1) == int(r.lengths.max()) < 30


# ---- joining and selecting rollouts ---------------------------------------------------------------------------

def test_concatenated_rollouts_re_pad_prompts_on_the_left_and_responses_on_the_right():
    a = draw(1, prompts=PROMPTS[1:2], group_size=2, max_new_tokens=3)  # narrow prompt, short responses
    b = draw(2, prompts=PROMPTS[2:3], group_size=2, max_new_tokens=7)  # wide prompt, long responses
    joined = concat_rollouts([a, b], pad_id=PAD)
    Tp = max(a.prompt_ids.size(1), b.prompt_ids.size(1))
    T = max(a.response_ids.size(1), b.response_ids.size(1))
    assert joined.prompt_ids.shape == (4, Tp) and joined.response_ids.shape == (4, T)
    assert joined.group_size == 2 and joined.group_ids.tolist() == [0, 0, 1, 1]
    assert list(real_rows(joined)) == list(real_rows(a)) + list(real_rows(b))
    for part, rows in ((a, slice(0, 2)), (b, slice(2, 4))):
        tp, t = part.prompt_ids.size(1), part.response_ids.size(1)
        assert torch.equal(joined.prompt_ids[rows, Tp - tp:], part.prompt_ids)  # right-aligned
        assert torch.equal(joined.prompt_mask[rows, Tp - tp:], part.prompt_mask)
        assert not joined.prompt_mask[rows, : Tp - tp].any()
        assert (joined.prompt_ids[rows, : Tp - tp] == PAD).all()
        for name in ("response_ids", "mask", "old_logp", "old_entropy"):
            assert torch.equal(getattr(joined, name)[rows, :t], getattr(part, name))  # left-aligned
        assert (joined.response_ids[rows, t:] == PAD).all()
        assert (joined.mask[rows, t:] == 0).all() and (joined.old_logp[rows, t:] == 0).all()
        assert torch.equal(joined.finished[rows], part.finished)


def test_a_joined_rollout_still_scores_as_its_parts_did():
    a = draw(1, prompts=PROMPTS[1:2], group_size=2, max_new_tokens=3)
    b = draw(2, prompts=PROMPTS[2:3], group_size=2, max_new_tokens=7)
    joined = concat_rollouts([a, b], pad_id=PAD)
    with torch.no_grad():
        logp, _ = score_rollout(MODEL, joined)
    real = joined.mask.bool()
    torch.testing.assert_close(logp[real], joined.old_logp[real], rtol=0, atol=1e-5)


def test_concat_rollouts_refuses_nothing_and_mixed_group_sizes():
    with pytest.raises(ValueError, match="at least one rollout"):
        concat_rollouts([], pad_id=PAD)
    with pytest.raises(ValueError, match="different group sizes"):
        concat_rollouts([draw(0, group_size=2), draw(0, group_size=3)], pad_id=PAD)


SELECT_SOURCE = draw(8)  # 12 rows


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 11), min_size=1, max_size=12))
def test_selecting_rows_keeps_exactly_those_rows_in_the_order_asked(rows):
    r = SELECT_SOURCE
    picked = r.select(torch.tensor(rows))
    for name in ("prompt_ids", "prompt_mask", "response_ids", "mask", "old_logp", "old_entropy", "finished"):
        assert torch.equal(getattr(picked, name), getattr(r, name)[rows])
    assert picked.group_size == r.group_size


# ---- helpers and validation ------------------------------------------------------------------------------------

def test_left_pad_right_aligns_prompts_and_marks_them():
    ids, mask = left_pad([[5, 6, 7], [8]], pad_id=0, device="cpu")
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert mask.tolist() == [[True, True, True], [False, False, True]]
    assert positions_from_mask(mask).tolist() == [[0, 1, 2], [0, 0, 0]]


@pytest.mark.parametrize("prompts", [[], [[BOS], []]])
def test_an_empty_prompt_list_or_an_empty_prompt_is_a_value_error(prompts):
    with pytest.raises(ValueError, match="at least one token"):
        left_pad(prompts, PAD, "cpu")


@pytest.mark.parametrize("fields, message", [
    (dict(max_new_tokens=0), "max_new_tokens must be a positive int"),
    (dict(max_new_tokens=-3), "max_new_tokens must be a positive int"),
    (dict(max_new_tokens=2.5), "max_new_tokens must be a positive int"),
    (dict(temperature=-0.1), "temperature must be >= 0"),
    (dict(temperature=float("nan")), "temperature must be >= 0"),
    (dict(top_k=0), "top_k must be None or a positive int"),
    (dict(top_k=-1), "top_k must be None or a positive int"),
])
def test_an_impossible_sampler_config_is_a_value_error(fields, message):
    with pytest.raises(ValueError, match=message):
        SamplerConfig(**fields)


def test_a_bad_group_size_or_a_too_long_request_is_a_value_error():
    with pytest.raises(ValueError, match="group_size must be a positive int"):
        draw(group_size=0)
    with pytest.raises(ValueError, match="exceeds the model's max_seq_len=64"):
        draw(max_new_tokens=60)
