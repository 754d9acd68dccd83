"""A character-level tokenizer built on tiktoken, entirely offline.

tiktoken normally downloads its public encodings (cl100k and friends) on first use. We never do:
the vocabulary is the toy tasks' own alphabet, one token per character, plus three special
tokens. One token per character means every digit is its own token, which is what lets a tiny
model learn column-wise arithmetic.

Two tiktoken behaviours would bite a naive wrapper, and both are handled here:

* A character with no entry in the vocabulary makes tiktoken's Rust core *panic*. The panic
  surfaces as ``pyo3_runtime.PanicException``, a ``BaseException`` that ``except Exception``
  does not catch. So ``encode`` validates the text first and raises a ``ValueError`` that names
  the bad character and the allowed alphabet.
* Text that the split regex does not match is silently dropped. Our pattern ``[\\s\\S]`` matches
  every single character (newlines included), so ``decode(encode(s)) == s`` for every string
  over the alphabet (a hypothesis property in ``tests/test_tokenizer.py``).
"""

from __future__ import annotations

import tiktoken

from toy_tasks.alphabet import ALPHABET, BOS, EOS, PAD

# Each piece the regex yields is one character; with single-character ranks and no merges, BPE
# maps it straight to that character's id.
_SPLIT_PATTERN = r"[\s\S]"


class Tokenizer:
    """Maps text over ``alphabet`` to token ids and back.

    Ids are contiguous: characters get ``0 .. len(alphabet)-1`` in alphabet order, then BOS, EOS
    and PAD follow (``vocab_size = len(alphabet) + 3``).
    """

    def __init__(self, alphabet: str = ALPHABET):
        if not alphabet:
            raise ValueError("the tokenizer alphabet is empty; pass at least one character")
        if len(set(alphabet)) != len(alphabet):
            dupes = sorted({c for c in alphabet if alphabet.count(c) > 1})
            raise ValueError(f"the tokenizer alphabet repeats characters {dupes!r}; each must appear once")
        self.alphabet = alphabet
        self._allowed = frozenset(alphabet)
        ranks = {ch.encode("utf-8"): i for i, ch in enumerate(alphabet)}
        n = len(alphabet)
        self.bos_id, self.eos_id, self.pad_id = n, n + 1, n + 2
        self.encoding = tiktoken.Encoding(
            name="minitepo-chars",
            pat_str=_SPLIT_PATTERN,
            mergeable_ranks=ranks,
            special_tokens={BOS: self.bos_id, EOS: self.eos_id, PAD: self.pad_id},
            explicit_n_vocab=n + 3,
        )

    @property
    def vocab_size(self) -> int:
        return self.encoding.n_vocab

    def check(self, text: str) -> None:
        """Raise ``ValueError`` unless every character of ``text`` is in the alphabet."""
        if not isinstance(text, str):
            raise ValueError(f"expected text (str), got {type(text).__name__}")
        for ch in text:
            if ch not in self._allowed:
                raise ValueError(
                    f"character {ch!r} is not in the tokenizer alphabet {self.alphabet!r}"
                )

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no special tokens are added, and none may appear in it)."""
        self.check(text)
        ids = self.encoding.encode_ordinary(text)
        assert len(ids) == len(text), "one token per character"  # guaranteed by the pattern
        return ids

    def decode(self, ids) -> str:
        """Text of ``ids``; special tokens decode to their names (e.g. ``<|eos|>``)."""
        ids = [int(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(f"token id {bad[0]} is outside the vocabulary [0, {self.vocab_size})")
        return self.encoding.decode(ids)

    def decode_response(self, ids) -> str:
        """Text of a response up to (not including) its first EOS; PAD ids are never reached."""
        ids = [int(i) for i in ids]
        if self.eos_id in ids:
            ids = ids[: ids.index(self.eos_id)]
        return self.decode(ids)
