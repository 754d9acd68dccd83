"""The character tokenizer: one token per character, three special ids, and errors that teach.

The oracle here is the alphabet itself: id ``i`` must be character ``ALPHABET[i]``, so every
expectation is computed from the string, never from tiktoken.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitepo.tokenizer import Tokenizer
from toy_tasks.alphabet import ALPHABET, BOS, EOS, PAD

FAST = settings(max_examples=100, deadline=None)

TOK = Tokenizer()  # building it is cheap, and it holds no state that a test could change

alphabet_text = st.text(alphabet=ALPHABET)
outside_char = st.characters().filter(lambda ch: ch not in ALPHABET)


def raised_by(fn, *args) -> BaseException:
    """The exception ``fn(*args)`` raises, whatever its type (a pyo3 panic is a BaseException)."""
    try:
        fn(*args)
    except BaseException as e:  # noqa: BLE001 - the point is to see panics too
        return e
    raise AssertionError(f"{fn.__name__}{args!r} raised nothing")


# ---- the vocabulary --------------------------------------------------------------------------------

def test_every_character_of_the_alphabet_is_exactly_one_token_with_its_alphabet_index():
    for i, ch in enumerate(ALPHABET):
        assert TOK.encode(ch) == [i]
        assert TOK.decode([i]) == ch


def test_every_digit_of_a_number_is_its_own_token():
    assert TOK.encode("1234567890") == [ALPHABET.index(d) for d in "1234567890"]
    assert len(TOK.encode("99+1=100")) == len("99+1=100")


def test_special_ids_follow_the_alphabet_contiguously_bos_eos_pad():
    n = len(ALPHABET)
    assert (TOK.bos_id, TOK.eos_id, TOK.pad_id) == (n, n + 1, n + 2)
    assert TOK.vocab_size == n + 3


def test_special_ids_decode_to_their_names():
    assert TOK.decode([TOK.bos_id, TOK.eos_id, TOK.pad_id]) == BOS + EOS + PAD


def test_the_encoding_is_built_offline_from_the_alphabet_not_downloaded():
    assert TOK.encoding.name == "minitepo-chars"
    assert TOK.encoding.n_vocab == len(ALPHABET) + 3


def test_a_custom_alphabet_gets_its_own_ids():
    tok = Tokenizer("ab")
    assert tok.encode("abba") == [0, 1, 1, 0]
    assert (tok.bos_id, tok.eos_id, tok.pad_id, tok.vocab_size) == (2, 3, 4, 5)


# ---- round trips ------------------------------------------------------------------------------------

@FAST
@given(alphabet_text)
def test_decoding_an_encoding_gives_back_every_string_over_the_alphabet(text):
    ids = TOK.encode(text)
    assert len(ids) == len(text)
    assert ids == [ALPHABET.index(ch) for ch in text]
    assert TOK.decode(ids) == text


@pytest.mark.parametrize("text", ["", "\n", "\n\n", " ", "1 + 2\n=3\n"])
def test_empty_text_and_newlines_round_trip_too(text):
    assert TOK.decode(TOK.encode(text)) == text


def test_decode_accepts_any_iterable_of_integers_including_tensors():
    import torch

    ids = TOK.encode("12+3=")
    assert TOK.decode(torch.tensor(ids)) == "12+3="
    assert TOK.decode(tuple(ids)) == "12+3="


# ---- errors that teach ------------------------------------------------------------------------------

@FAST
@given(alphabet_text, outside_char, alphabet_text)
def test_a_character_outside_the_alphabet_raises_a_value_error_naming_it_and_the_alphabet(before, bad, after):
    error = raised_by(TOK.encode, before + bad + after)
    assert type(error) is ValueError, f"expected ValueError, got {type(error).__name__}: {error}"
    assert repr(bad) in str(error)
    assert repr(ALPHABET) in str(error)


@pytest.mark.parametrize("bad", ["<", "|", "a", "x", "\t", "é", "\u00a0", "😀", "\x00", "$"])
def test_common_outsiders_raise_value_error_never_a_tiktoken_panic(bad):
    error = raised_by(TOK.encode, f"1{bad}2")
    assert type(error) is ValueError
    assert f"character {bad!r} is not in the tokenizer alphabet" in str(error)


@pytest.mark.parametrize("special", [BOS, EOS, PAD, "12" + EOS])
def test_special_token_text_cannot_be_smuggled_into_encode(special):
    error = raised_by(TOK.encode, special)
    assert type(error) is ValueError
    assert "'<'" in str(error)


def test_encode_rejects_non_text_with_a_value_error():
    error = raised_by(TOK.encode, b"12")
    assert type(error) is ValueError
    assert "expected text (str), got bytes" in str(error)


@pytest.mark.parametrize("bad_id", [-1, len(ALPHABET) + 3, 10**6])
def test_decoding_an_id_outside_the_vocabulary_raises_value_error(bad_id):
    error = raised_by(TOK.decode, [0, bad_id, 1])
    assert type(error) is ValueError
    assert f"token id {bad_id} is outside the vocabulary [0, {TOK.vocab_size})" in str(error)


def test_an_empty_alphabet_is_refused():
    with pytest.raises(ValueError, match="alphabet is empty"):
        Tokenizer("")


def test_an_alphabet_with_repeated_characters_is_refused_and_the_repeats_are_named():
    with pytest.raises(ValueError, match=r"repeats characters \['1', 'a'\]"):
        Tokenizer("1a2a31")


# ---- responses ----------------------------------------------------------------------------------------

@FAST
@given(alphabet_text, alphabet_text)
def test_decode_response_stops_at_the_first_eos_and_drops_everything_after(answer, tail):
    ids = TOK.encode(answer) + [TOK.eos_id] + TOK.encode(tail) + [TOK.eos_id, TOK.pad_id]
    assert TOK.decode_response(ids) == answer


@FAST
@given(alphabet_text)
def test_decode_response_without_eos_is_the_whole_text(text):
    assert TOK.decode_response(TOK.encode(text)) == text
