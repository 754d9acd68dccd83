"""The characters every toy task writes, and the special-token names the tokenizer adds.

The tokenizer (``minitepo.tokenizer``) is built from exactly this alphabet, one token per
character, so every digit is its own token. A task may only ever produce prompts and answers
over ``ALPHABET``; ``tests/test_tasks.py`` checks that.
"""

ALPHABET = "0123456789+-*/=(),:; \n"
"""Every character a prompt or a reference answer may contain (one token each)."""

BOS = "<|bos|>"
"""Begin-of-sequence special token: the model sees it before every prompt."""

EOS = "<|eos|>"
"""End-of-sequence special token: a response ends at its first EOS. Verifiers read a completion
only up to the first occurrence of this text."""

PAD = "<|pad|>"
"""Padding special token: fills the unused tail of a batch. Masks are built by position, never
by comparing token values with it."""
