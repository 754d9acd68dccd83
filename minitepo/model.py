"""A compact decoder-only transformer, written to be read.

Pre-LayerNorm blocks, causal self-attention through ``F.scaled_dot_product_attention``, rotary
position embeddings (RoPE), tied input/output embeddings, and a key/value cache for generation.

Shape legend
    B  batch size            T  query length (tokens fed in this call)
    S  key length            (T plus whatever the KV cache already holds)
    C  embedding width       nh number of heads, hs = C // nh head size
    V  vocabulary size

Padding. Prompts in a batch have different lengths, so the sampler left-pads them. Two optional
inputs make that exact: ``positions`` (B, T) gives each token its own position (counted from the
row's first real token, so padding never shifts RoPE), and ``key_mask`` (B, S) marks which keys
are real. Every query may always attend to itself, so a padding query (whose other keys are all
masked) still has one key and yields finite junk instead of NaN; nothing reads those outputs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from minitepo.tokenizer import Tokenizer


@dataclass
class ModelConfig:
    """Size of the transformer. The defaults are the "4-layer, d=128" model used throughout."""

    vocab_size: int = 25
    """Number of token ids (the tokenizer's ``vocab_size``)."""
    n_layer: int = 4
    """Number of transformer blocks."""
    n_head: int = 4
    """Attention heads per block; must divide ``n_embd``, and the head size must be even (RoPE)."""
    n_embd: int = 128
    """Width of the residual stream."""
    max_seq_len: int = 128
    """Longest sequence (prompt + response) the rotary tables cover."""
    rope_base: float = 10000.0
    """RoPE frequency base: head dimension pair i rotates at ``base ** (-2i / hs)`` per position."""

    def __post_init__(self):
        for name in ("vocab_size", "n_layer", "n_head", "n_embd", "max_seq_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"ModelConfig.{name} must be a positive int, got {value!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd={self.n_embd} must be divisible by n_head={self.n_head}")
        if (self.n_embd // self.n_head) % 2:
            raise ValueError(f"head size {self.n_embd // self.n_head} must be even for rotary embeddings")

    def to_dict(self) -> dict:
        return asdict(self)


CAUSAL = "causal"  # attention-mask fast path: plain causal attention, no padding anywhere
ALL_KEYS = "all keys"  # fast path: one new query that may attend to every cached key


class KVCache:
    """Keys and values of every layer for the tokens seen so far, preallocated to ``capacity``."""

    def __init__(self, config: ModelConfig, batch: int, capacity: int, device, dtype):
        hs = config.n_embd // config.n_head
        shape = (config.n_layer, batch, config.n_head, capacity, hs)
        self.k = torch.zeros(shape, device=device, dtype=dtype)
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self.key_mask = torch.ones(batch, capacity, dtype=torch.bool, device=device)  # (B, capacity)
        self.length = 0  # number of positions filled; the same for every layer after a full forward
        self.capacity = capacity

    def extend(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this call's keys and values (B, nh, T, hs) after the ``length`` already held by ``layer``;
        return every key and value so far, (B, nh, S, hs) each."""
        start, end = self.length, self.length + k.size(2)
        self.k[layer, :, :, start:end] = k
        self.v[layer, :, :, start:end] = v
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]

    def select_rows(self, rows: torch.Tensor) -> "KVCache":
        """A new cache holding rows ``rows`` (1-D index) of this one: e.g. each prompt's keys once per response."""
        picked = KVCache.__new__(KVCache)
        picked.k, picked.v = self.k[:, rows], self.v[:, rows]
        picked.key_mask, picked.length, picked.capacity = self.key_mask[rows], self.length, self.capacity
        return picked


def rope_tables(config: ModelConfig, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin tables, each (max_seq_len, hs/2)."""
    hs = config.n_embd // config.n_head
    inv_freq = config.rope_base ** (-torch.arange(0, hs, 2, dtype=torch.float32, device=device) / hs)
    angles = torch.outer(torch.arange(config.max_seq_len, dtype=torch.float32, device=device), inv_freq)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs of x's channels by their position's angle.

    x: (B, nh, T, hs); cos, sin: (B, 1, T, hs/2). Channel i is paired with channel i + hs/2 (the
    "rotate half" layout, cheaper than interleaved pairs and just as much RoPE), and each pair is
    rotated by angle(position) * freq_i. Rotating queries and keys alike makes their dot product
    depend only on the distance between the two positions.
    """
    x1, x2 = x.chunk(2, dim=-1)  # (B, nh, T, hs/2) each
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).type_as(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_head = config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd, bias=False)
        self.proj = nn.Linear(config.n_embd, config.n_embd, bias=False)

    def forward(self, x, cos, sin, attn_mask, cache: KVCache | None, layer: int):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            k, v = cache.extend(layer, k, v)  # (B, nh, S, hs): the cached keys and values, then this call's
        if attn_mask is CAUSAL:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif attn_mask is ALL_KEYS:
            y = F.scaled_dot_product_attention(q, k, v)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=False)
        self.proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=False)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    """Pre-LayerNorm residual block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x, cos, sin, attn_mask, cache, layer):
        x = x + self.attn(self.ln1(x), cos, sin, attn_mask, cache, layer)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """The language model: token embedding -> blocks -> LayerNorm -> logits (tied weights)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        cos, sin = rope_tables(config)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init_weights)
        # Scale the residual projections so the residual stream's variance does not grow with depth.
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def new_cache(self, batch: int, capacity: int) -> KVCache:
        p = self.wte.weight
        dtype = torch.get_autocast_dtype(p.device.type) if torch.is_autocast_enabled(p.device.type) else p.dtype
        return KVCache(self.config, batch, capacity, p.device, dtype)

    @staticmethod
    def attention_mask(start: int, T: int, key_mask, cache: KVCache | None, device):
        """Which keys each query may attend to: a (B, 1, T, S) bool mask, or one of two fast paths.

        ``CAUSAL`` (no padding, queries start at position 0) and ``ALL_KEYS`` (no padding, a single new
        query, which may see every key before it) let SDPA skip the explicit mask.
        """
        S = start + T
        if cache is not None:
            if key_mask is not None:
                cache.key_mask[:, start:S] = key_mask
            keys_real = cache.key_mask[:, :S]  # (B, S)
        else:
            keys_real = key_mask
        if keys_real is None or bool(keys_real.all()):
            if start == 0:
                return CAUSAL
            if T == 1:
                return ALL_KEYS
        if keys_real is None:
            keys_real = torch.ones(1, S, dtype=torch.bool, device=device)
        q_pos = torch.arange(start, S, device=device)  # absolute index of each query
        k_pos = torch.arange(S, device=device)
        causal = k_pos[None, :] <= q_pos[:, None]  # (T, S)
        is_self = k_pos[None, :] == q_pos[:, None]  # (T, S)
        return ((causal & keys_real[:, None, :]) | is_self)[:, None]  # (B, 1, T, S), broadcast over heads

    def forward(self, idx, positions=None, key_mask=None, cache: KVCache | None = None,
                last_only: bool = False):
        """Logits for every position of ``idx`` (B, T), or only the last one if ``last_only``.

        positions: (B, T) long, each token's position; default ``cache.length + arange(T)``.
        key_mask:  (B, T) bool, False for padding tokens in ``idx``. With a cache it is stored,
                   so later calls keep ignoring those keys.
        cache:     a ``KVCache`` to read earlier keys from and append this call's keys to (or anything with its
                   ``extend``, ``key_mask``, ``length`` and ``capacity``: ``shared_prompt.GradKVCache`` trains through one).
        Returns (B, T, V) logits, or (B, 1, V) with ``last_only``.
        """
        B, T = idx.size()
        start = cache.length if cache is not None else 0
        S = start + T
        if S > self.config.max_seq_len:
            raise ValueError(f"sequence length {S} exceeds the model's max_seq_len={self.config.max_seq_len}")
        if cache is not None and S > cache.capacity:
            raise ValueError(f"KV cache holds {cache.capacity} positions; {S} were requested")
        if positions is None:
            positions = torch.arange(start, S, device=idx.device).expand(B, T)
        cos = self.rope_cos[positions].unsqueeze(1)  # (B, 1, T, hs/2)
        sin = self.rope_sin[positions].unsqueeze(1)

        attn_mask = self.attention_mask(start, T, key_mask, cache, idx.device)
        x = self.wte(idx)  # (B, T, C)
        for layer, block in enumerate(self.blocks):
            x = block(x, cos, sin, attn_mask, cache, layer)
        if cache is not None:
            cache.length = S
        if last_only:
            x = x[:, -1:]
        x = self.ln_f(x)
        return x @ self.wte.weight.t()  # (B, T, V): tied input/output embeddings
