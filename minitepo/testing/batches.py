"""Random rollout batches for property tests: ``Batch`` (one optimizer step's tensors), ``Step`` (what the step
looks like when a loss sees only a micro-batch of it) and the hypothesis strategy ``batches``.

A ``Batch`` is what one optimizer step of a GRPO-style trainer sees: groups of responses of random sizes,
ragged lengths, padding filled with junk (including +-1e4), rewards with ties and all-equal groups, and an
off-policy drift between the current and the behaviour log-probabilities large enough to push many ratios
outside every clip range.

Hypothesis draws the *structure* (group sizes, lengths, mask layout, junk, drift scale, rewards); the bulk
float values come from a torch generator seeded by a drawn integer, which keeps example generation fast and
lets a failing example shrink to a small, readable one.

Shapes: B responses (rows), T padded positions (columns). Everything is float64.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from minitepo.losses import step_normalizer

DTYPE = torch.float64
JUNK = (0.0, 1e4, -1e4, 3.0e3, -77.5)
"""Finite values written at masked positions: a loss must not read any of them."""
NONFINITE_JUNK = (-float("inf"), float("inf"), float("nan"))
"""Non-finite junk. Real log-prob tensors hold -inf at padding (a masked logit) or NaN (0 * inf upstream), so a loss
that masks by multiplying *before* ``exp``, where (-inf) * 0 = NaN, fails on them while it passes every finite value.
The masked-junk check refills padding with these too (after the finite ones: hypothesis shrinks towards the first
value that still fails, so a failure shows the most ordinary junk that breaks the loss); every other check keeps
finite junk, so that one such mistake is reported once, as masked junk, not as every property's NaN."""
TOKEN_TENSORS = ("logp", "old_logp", "ref_logp", "entropy", "old_entropy", "entropy_drop_score", "tok_adv")
"""The (B, T) float tensors of a Batch (the mask is the other (B, T) one)."""
FLOAT_TENSORS = TOKEN_TENSORS + ("seq_adv",)
"""Every float input a loss may read; ``evaluate`` reports the gradient with respect to each."""


def examples(n: int) -> int:
    """Hypothesis examples for a check: n scaled by $MINITEPO_EXAMPLES (default 1; e.g. 10 for a thorough run)."""
    return max(1, round(n * float(os.environ.get("MINITEPO_EXAMPLES", "1"))))


@dataclass
class Batch:
    """One optimizer step's worth of rollout data. Shapes: B responses, T padded positions."""

    logp: torch.Tensor  # (B, T) current policy log-probs of the sampled tokens
    old_logp: torch.Tensor  # (B, T) behaviour policy
    ref_logp: torch.Tensor  # (B, T) frozen reference
    entropy: torch.Tensor  # (B, T) current full-vocabulary entropy
    old_entropy: torch.Tensor  # (B, T) rollout-time entropy
    entropy_drop_score: torch.Tensor  # (B, T) S(a) of spec section 6 (TEPO's "predicted" mask)
    tok_adv: torch.Tensor  # (B, T) token advantages
    seq_adv: torch.Tensor  # (B,) sequence advantages
    rewards: torch.Tensor  # (B,)
    correct: torch.Tensor  # (B,) bool
    group_ids: torch.Tensor  # (B,) int64
    mask: torch.Tensor  # (B, T) bool or float 0/1
    max_len: int  # L_max >= T, the response-length limit

    @property
    def B(self) -> int:
        return self.mask.shape[0]

    @property
    def T(self) -> int:
        return self.mask.shape[1]

    @property
    def bool_mask(self) -> torch.Tensor:
        return self.mask.bool()

    @property
    def lengths(self) -> list[int]:
        """|o_i| of every response."""
        return self.bool_mask.sum(-1).tolist()

    def replace(self, **changes) -> "Batch":
        return dataclasses.replace(self, **changes)

    def rows(self, index) -> "Batch":
        """The sub-batch (or permutation) of the given rows, every tensor selected jointly."""
        index = torch.as_tensor(index, dtype=torch.long)
        changes = {f.name: getattr(self, f.name)[index] for f in dataclasses.fields(self) if f.name != "max_len"}
        return self.replace(**changes)

    def map_tokens(self, fn) -> "Batch":
        """Apply fn to every (B, T) tensor (including the mask)."""
        changes = {name: fn(getattr(self, name)) for name in TOKEN_TENSORS + ("mask",)}
        return self.replace(**changes)

    def sequence_advantages_everywhere(self, adv: torch.Tensor | None = None) -> "Batch":
        """The batch with seq_adv = adv (default: its own) and every token's advantage equal to its response's, so a
        check reads the same A_i whichever advantage the loss under test takes. Padding keeps its junk."""
        adv = self.seq_adv if adv is None else adv
        return self.replace(seq_adv=adv, tok_adv=fill_masked(adv[:, None].expand(self.B, self.T), self.mask,
                                                             self.tok_adv))

    def lists(self) -> dict:
        """Everything as nested Python lists, for naive reference implementations."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out = {k: (v.tolist() if isinstance(v, torch.Tensor) else v) for k, v in out.items()}
        out["mask"] = self.bool_mask.tolist()
        return out

    def summary(self, digits: int = 3) -> str:
        """A short, readable description: shapes, lengths, groups, advantages and each real token's log-ratio."""
        def r(x):
            return [round(float(v), digits) for v in x]

        m = self.bool_mask
        x = self.logp - self.old_logp
        lines = [f"B={self.B} T={self.T} L_max={self.max_len} lengths={self.lengths} "
                 f"groups={self.group_ids.tolist()} mask={'float' if self.mask.is_floating_point() else 'bool'}",
                 f"  A_i (seq_adv)        = {r(self.seq_adv)}"]
        for i in range(self.B):
            lines.append(f"  row {i}: logp={r(self.logp[i][m[i]])} logp-old_logp={r(x[i][m[i]])}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Step:
    """The optimizer step a (micro-)batch belongs to: its full mask and L_max, and how many micro-batches it was
    cut into. A loss that supports gradient accumulation divides by the *step's* normaliser, not its part's."""

    mask: torch.Tensor  # (B_step, T) the whole step's mask
    max_len: int  # L_max of the step
    micro_batches: int = 1  # K, the number of parts the step is cut into

    @classmethod
    def of(cls, batch: Batch, micro_batches: int = 1) -> "Step":
        return cls(mask=batch.mask, max_len=batch.max_len, micro_batches=micro_batches)

    @property
    def n_tokens(self) -> int:
        """N, the real tokens of the step."""
        return int(self.mask.bool().sum())

    @property
    def n_sequences(self) -> int:
        """B', the responses with at least one real token."""
        return int(self.mask.bool().any(-1).sum())

    @property
    def n_rows(self) -> int:
        """B, every response of the step, empty ones included."""
        return int(self.mask.shape[0])

    def normalizer(self, agg: str) -> float:
        """The step's N, B' or C = B * L_max for aggregation mode ``agg`` (spec section 3)."""
        return step_normalizer(self.mask, agg, self.max_len)


def policy_gradient_weights(batch: Batch, agg: str) -> torch.Tensor:
    """(B, T): w_i of spec §3 on every real token of response i, 0 at padding (the weight of -A_i in the on-policy
    gradient): 1/N, 1/(B' |o_i|), 1/B' or 1/C with C = B * L_max."""
    m = batch.bool_mask
    lengths = m.sum(-1, keepdim=True).clamp(min=1).double()                 # (B, 1)
    step = Step.of(batch)
    w = {"token-mean": torch.full_like(lengths, 1.0 / step.n_tokens),
         "seq-mean-token-mean": 1.0 / (step.n_sequences * lengths),
         "seq-mean-token-sum": torch.full_like(lengths, 1.0 / max(step.n_sequences, 1)),
         "seq-mean-token-sum-norm": torch.full_like(lengths, 1.0 / (step.n_rows * batch.max_len))}[agg]
    return torch.where(m, w.expand(batch.B, batch.T), 0.0)


def fill_masked(x: torch.Tensor, mask: torch.Tensor, junk) -> torch.Tensor:
    """x with every masked position replaced by junk (a number or a tensor of x's shape)."""
    junk = torch.as_tensor(junk, dtype=x.dtype).expand_as(x)
    return torch.where(mask.bool(), x, junk)


@st.composite
def batches(draw, *, max_groups=4, max_group_size=4, max_T=8, min_T=1, min_rows=1, empty_rows=True, prefix=None,
            equal_lengths=False, length=None, perturb=None, float_mask=None, distinct_rewards=False, junk=JUNK):
    """A random Batch. Options pin one aspect:

    max_groups, max_group_size, max_T, min_T   size limits
    min_rows        at least this many responses (B); the micro-batch checks ask for 2, a step one can cut
    empty_rows      allow responses with no real token (default True)
    prefix          True: real tokens first, then padding; False: mask holes anywhere; None: either
    equal_lengths   every response the same length;  length=k: every response exactly k tokens
    perturb         off-policy drift scale between logp and old_logp (0.0: on-policy); None draws one of
                    0, 0.05, 0.3, 1.0 (1.0 pushes most ratios outside every clip range)
    float_mask      mask as float 0/1 instead of bool; None: either
    distinct_rewards  no ties (default: rewards in {0, 0.5, 1}, so ties and all-equal groups are common)
    junk            the values padding may hold (one per batch, or "random" ones); JUNK + NONFINITE_JUNK adds
                    +-inf and NaN
    """
    sizes = draw(st.lists(st.integers(1, max_group_size), min_size=1, max_size=max_groups))
    if sum(sizes) < min_rows:  # too few rows for the check: grow the last group (shrinks to exactly min_rows)
        sizes[-1] += min_rows - sum(sizes)
    B = sum(sizes)
    T = draw(st.integers(max(min_T, length or 1), max_T))
    prefix = draw(st.booleans()) if prefix is None else prefix
    seed = draw(st.integers(0, 2**31 - 1))
    junk = draw(st.sampled_from(tuple(junk) + ("random",)))
    perturb = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0])) if perturb is None else perturb
    float_mask = draw(st.booleans()) if float_mask is None else float_mask
    max_len = T + draw(st.integers(0, 3))

    g = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.rand(*shape, generator=g, dtype=DTYPE)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=DTYPE)

    if length is not None:
        lengths = [length] * B
    elif equal_lengths:
        lengths = [int(torch.randint(1, T + 1, (), generator=g))] * B
    else:
        lengths = torch.randint(0 if empty_rows else 1, T + 1, (B,), generator=g).tolist()
        if sum(lengths) == 0:
            lengths[0] = 1
    if distinct_rewards:
        rewards = (torch.randperm(B, generator=g).to(DTYPE) + 0.5 * rand(B)).tolist()
    else:  # few distinct values: ties and all-equal groups are common
        rewards = torch.tensor([0.0, 0.5, 1.0], dtype=DTYPE)[torch.randint(0, 3, (B,), generator=g)].tolist()

    mask = torch.zeros(B, T, dtype=torch.bool)
    for i, n in enumerate(lengths):
        cols = torch.arange(n) if prefix else torch.randperm(T, generator=g)[:n]
        mask[i, cols] = True

    tensors, seq_adv = _random_tensors(g, B, T, perturb)

    junk_t = (1e3 * randn(B, T)) if junk == "random" else junk
    tensors = {k: fill_masked(v, mask, junk_t) for k, v in tensors.items()}
    rewards_t = torch.tensor(rewards, dtype=DTYPE)
    group_ids = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    return Batch(**tensors, seq_adv=seq_adv, rewards=rewards_t, correct=rewards_t > 0, group_ids=group_ids,
                 mask=mask.to(DTYPE) if float_mask else mask, max_len=max_len)


def _random_tensors(g: torch.Generator, B: int, T: int, perturb: float) -> tuple[dict, torch.Tensor]:
    """The (B, T) float tensors of a batch (no junk yet) and its (B,) sequence advantages, from generator g."""
    def rand(*shape):
        return torch.rand(*shape, generator=g, dtype=DTYPE)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=DTYPE)

    logp = -4.0 * rand(B, T) - 0.01
    # a per-response offset and per-token noise: some sequence ratios land far outside the clip range
    old_logp = logp + perturb * (0.5 * randn(B, 1) + randn(B, T))
    ref_logp = logp + 0.5 * randn(B, T)
    ent = 0.05 + 3.0 * rand(B, T)
    old_ent = (ent + 0.3 * randn(B, T)).clamp_min(0.01)
    score = randn(B, T)
    seq_adv = randn(B) * (rand(B) > 0.15)  # some exact zeros
    tok_adv = randn(B, T)
    tensors = dict(logp=logp, old_logp=old_logp, ref_logp=ref_logp, entropy=ent, old_entropy=old_ent,
                   entropy_drop_score=score, tok_adv=tok_adv)
    return tensors, seq_adv


def plain_batch(lengths=(1, 2, 4, 3), T: int = 5, max_len: int = 7, *, float_mask: bool = False,
                perturb: float = 0.05, seed: int = 0) -> Batch:
    """A fixed, benign batch, drawn without hypothesis: two groups of two, ragged prefix masks, no empty response,
    0 at padding, every advantage nonzero, a little off-policy drift. The kit runs a loss on it first: a loss that
    cannot run here cannot be judged. Its lengths, T and L_max make every aggregation's weights differ (1/N,
    1/(B'|o_i|), 1/B', 1/(B L_max) and the padded width's 1/(B T)), which the on-policy hint reads."""
    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    tensors, _ = _random_tensors(g, B, T, perturb)
    mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]          # (B, T) prefix
    seq_adv = torch.tensor([1.0, -0.5, 0.75, -1.25, 0.3, -0.9, 1.1, -0.4][:B], dtype=DTYPE)
    tensors = {k: fill_masked(v, mask, 0.0) for k, v in tensors.items()}
    rewards = (seq_adv > 0).to(DTYPE)
    return Batch(**tensors, seq_adv=seq_adv, rewards=rewards, correct=rewards > 0,
                 group_ids=torch.arange(B) // 2, mask=mask.to(DTYPE) if float_mask else mask, max_len=max_len)


def concat(*parts: Batch) -> Batch:
    """The batch holding the rows of every part, in order (max_len of the first)."""
    fields = {f.name: torch.cat([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(Batch)
              if f.name != "max_len"}
    return parts[0].replace(**fields)
