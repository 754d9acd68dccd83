"""A rollout, from prompts to scored responses: the data every RL objective trains on.

    examples --encode--> token ids --sample (G per prompt)--> responses --decode--> text --verifier--> rewards
                                                                         --teacher-forced pass--> log-probs (score_rollout)

* ``sample``: batched sampling of G responses per prompt with a KV cache; it records each sampled token's
  log-prob and its distribution's entropy, the behaviour policy's ``old_logp`` and ``old_entropy``;
* ``collect_rollout``: sample, decode, reward. The one place where rewards are made and shaped: the task's
  verifier gives the outcome reward (plus the task's own ``format_bonus`` option, if set), and DAPO's overlong
  shaping, when asked for, is added here. The trainer, the held-out evaluation and the lessons all call it;
* ``score_rollout``: the same log-probs and entropies, recomputed teacher-forced with gradient, in one plain forward
  pass over every row's ``[prompt | response]``. On the same weights the two agree within float round-off (tested),
  which is what lets an objective use the recorded values as ``old_logp`` and ``old_entropy``.
  (``minitepo.shared_prompt`` computes the same numbers faster, reading each distinct prompt once.)

Shape legend
    P  prompts             G  responses per prompt (one *group*)      B = P * G rows
    Tp padded prompt width T  response width (<= max_new_tokens)      V  vocabulary size

Layout of one row: ``[PAD .. PAD, BOS, prompt..., response..., PAD ..]``. Prompts are left-padded
so that every row's next token is produced at the same column; RoPE positions are counted from
the row's first real token, so padding never changes what the model computes (see model.py).

The response mask is built **by position**: a row's real tokens are those up to and including
its first EOS (or all of them if it was truncated at the length limit). It is never inferred by
comparing token ids with PAD, so it stays right even if PAD and EOS were the same id.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from minitepo.advantages import overlong_penalty
from minitepo.device import uses_bf16
from minitepo.model import GPT
from minitepo.tokenizer import Tokenizer
from toy_tasks import split_at_eos


@dataclass
class SamplerConfig:
    """How responses are drawn."""

    max_new_tokens: int = 8
    """Response-length limit in tokens (EOS included); longer responses are truncated."""
    temperature: float = 1.0
    """Logits are divided by this before the softmax. 0 means greedy (argmax) decoding."""
    top_k: int | None = None
    """Sample only among the k most likely tokens (None: the full vocabulary)."""
    use_cache: bool = True
    """Reuse keys/values of earlier tokens (KV cache) instead of recomputing the whole prefix."""

    def __post_init__(self):
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive int, got {self.max_new_tokens!r}")
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {self.temperature!r}")
        if self.top_k is not None and (not isinstance(self.top_k, int) or self.top_k < 1):
            raise ValueError(f"top_k must be None or a positive int, got {self.top_k!r}")


@dataclass
class Rollout:
    """G sampled responses for each of P prompts; rows of a group are contiguous."""

    prompt_ids: torch.Tensor  # (B, Tp) long, left-padded with PAD
    prompt_mask: torch.Tensor  # (B, Tp) bool, True on BOS and prompt tokens
    response_ids: torch.Tensor  # (B, T) long, PAD after a row's first EOS
    mask: torch.Tensor  # (B, T) float 0/1, real response tokens (up to and including the first EOS)
    old_logp: torch.Tensor  # (B, T) float32, log-prob of the sampled token under the sampling policy; 0 where mask is 0
    old_entropy: torch.Tensor  # (B, T) float32, entropy of the sampling distribution; 0 where mask is 0
    finished: torch.Tensor  # (B,) bool, True if the response ended with EOS (False: truncated)
    group_size: int  # G
    temperature: float = 1.0  # the sampling temperature: old_logp and old_entropy are this distribution's
    rewards: torch.Tensor | None = None  # (B,) float32, set by ``collect_rollout``: the verifier's (shaped) reward
    correct: torch.Tensor | None = None  # (B,) bool, set by ``collect_rollout``: the verifier's verdict
    form: torch.Tensor | None = None  # (B,) long, set by ``collect_rollout`` for tasks whose answers take several
    #                                   forms (``task.FORMS``): the index of the form each response took

    @property
    def lengths(self) -> torch.Tensor:
        return self.mask.sum(-1).long()  # (B,)

    @property
    def group_ids(self) -> torch.Tensor:
        return torch.arange(self.prompt_ids.size(0), device=self.mask.device) // self.group_size  # (B,)

    def select(self, rows: torch.Tensor) -> "Rollout":
        """The sub-rollout made of ``rows`` (a 1-D index tensor); group_size is kept as metadata."""
        pick = lambda t: None if t is None else t[rows]  # noqa: E731
        return Rollout(pick(self.prompt_ids), pick(self.prompt_mask), pick(self.response_ids), pick(self.mask),
                       pick(self.old_logp), pick(self.old_entropy), pick(self.finished), self.group_size, self.temperature,
                       pick(self.rewards), pick(self.correct), pick(self.form))


def check_group_size(group_size) -> None:
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise ValueError(f"group_size must be a positive int, got {group_size!r}")


def check_prompts(prompts, vocab_size: int) -> None:
    """Prompts must be a non-empty list of token-id lists, each id in [0, vocab_size)."""
    hint = "encode text first, e.g. [[tokenizer.bos_id] + tokenizer.encode(p) for p in texts]"
    if isinstance(prompts, (str, torch.Tensor)) or not isinstance(prompts, (list, tuple)) or not prompts:
        raise ValueError(f"prompts must be a non-empty list of token-id lists; {hint}")
    for i, p in enumerate(prompts):
        if isinstance(p, str) or not isinstance(p, (list, tuple)) or not p:
            raise ValueError(f"prompt {i} is {p!r}: every prompt must be a non-empty list of token ids "
                             f"(starting with BOS); {hint}")
        bad = [t for t in p if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab_size]
        if bad:
            raise ValueError(f"prompt {i} holds {bad[0]!r}, which is not a token id in [0, {vocab_size}); {hint}")


def left_pad(prompts: list[list[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack token lists of different lengths, padding on the left. Returns ids and mask (P, Tp)."""
    if not prompts or any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt must hold at least one token (its BOS)")
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.bool)
    for row, p in enumerate(prompts):
        ids[row, width - len(p):] = torch.tensor(p, dtype=torch.long)
        mask[row, width - len(p):] = True
    return ids.to(device), mask.to(device)


def positions_from_mask(key_mask: torch.Tensor) -> torch.Tensor:
    """Position of every token counted from its row's first real token; padding gets 0. (B, S)."""
    return (key_mask.long().cumsum(-1) - 1).clamp(min=0)


def distribution(logits: torch.Tensor, temperature: float, top_k: int | None) -> torch.Tensor:
    """Log-probabilities of the sampling distribution from raw logits (..., V), in float32."""
    logits = logits.float() / (temperature if temperature > 0 else 1.0)
    if top_k is not None and top_k < logits.size(-1):
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return F.log_softmax(logits, dim=-1)


def entropy_of(logprobs: torch.Tensor) -> torch.Tensor:
    """Full-vocabulary entropy -sum p log p of each distribution (..., V) -> (...)."""
    return torch.special.entr(logprobs.exp()).sum(-1)  # entr(0) = 0, so top-k's -inf entries are harmless


@torch.no_grad()
def sample(model: GPT, prompts: list[list[int]], *, group_size: int, eos_id: int, pad_id: int,
           config: SamplerConfig, generator: torch.Generator | None = None, validate: bool = True) -> Rollout:
    """Sample ``group_size`` responses for every prompt (token lists that start with BOS).

    ``generator`` makes sampling reproducible: the same seed gives the same samples. It must live
    on the model's device. Greedy decoding (temperature 0) ignores it. ``validate=False`` skips the checks of
    ``prompts`` and ``group_size``, for a caller that made them itself (``collect_rollout``).
    """
    if validate:
        check_group_size(group_size)
        check_prompts(prompts, model.config.vocab_size)
    device = model.wte.weight.device
    unique_ids, unique_mask = left_pad(prompts, pad_id, device)  # (P, Tp)
    prompt_ids = unique_ids.repeat_interleave(group_size, dim=0)  # (B, Tp)
    prompt_mask = unique_mask.repeat_interleave(group_size, dim=0)
    B, Tp = prompt_ids.shape
    n_new = config.max_new_tokens
    if Tp + n_new > model.config.max_seq_len:
        raise ValueError(f"prompt width {Tp} + max_new_tokens {n_new} exceeds the model's "
                         f"max_seq_len={model.config.max_seq_len}")
    greedy = config.temperature == 0

    tokens = torch.full((B, n_new), pad_id, dtype=torch.long, device=device)
    logps = torch.zeros((B, n_new), dtype=torch.float32, device=device)
    entropies = torch.zeros((B, n_new), dtype=torch.float32, device=device)
    finished = torch.zeros(B, dtype=torch.bool, device=device)
    lengths = torch.full((B,), n_new, dtype=torch.long, device=device)  # truncated rows keep n_new

    positions = positions_from_mask(prompt_mask)  # (B, Tp)
    next_pos = positions[:, -1:] + 1  # (B, 1): the first response token's position
    if config.use_cache:  # the prompt is read once, not once per response: prefill P rows, then copy G times
        cache = model.new_cache(len(prompts), Tp + n_new)
        logits = model(unique_ids, positions=positions_from_mask(unique_mask), key_mask=unique_mask, cache=cache,
                       last_only=True)  # (P, 1, V)
        if group_size > 1:
            rows = torch.arange(len(prompts), device=device).repeat_interleave(group_size)  # (B,): each row's prompt
            logits, cache = logits[rows], cache.select_rows(rows)
    else:
        cache = None
        logits = model(prompt_ids, positions=positions, key_mask=prompt_mask, last_only=True)
    seq, seq_mask, seq_pos = prompt_ids, prompt_mask, positions  # the uncached path grows these

    steps = 0
    for t in range(n_new):
        logprobs = distribution(logits[:, -1], config.temperature, config.top_k)  # (B, V)
        if greedy:
            tok = logprobs.argmax(-1)
        else:
            tok = torch.multinomial(logprobs.exp(), 1, generator=generator).squeeze(-1)  # (B,)
        active = ~finished
        tokens[:, t] = torch.where(active, tok, pad_id)
        logps[:, t] = torch.where(active, logprobs.gather(-1, tok[:, None]).squeeze(-1), 0.0)
        entropies[:, t] = torch.where(active, entropy_of(logprobs), 0.0)
        ended_now = active & (tok == eos_id)
        lengths = torch.where(ended_now, t + 1, lengths)
        finished |= ended_now
        steps = t + 1
        if bool(finished.all()) or t == n_new - 1:
            break
        pos = next_pos + t
        if cache is not None:
            logits = model(tokens[:, t:t + 1], positions=pos, cache=cache)
        else:  # recompute the whole prefix: the slow path the KV cache replaces
            seq = torch.cat([seq, tokens[:, t:t + 1]], 1)
            seq_mask = torch.cat([seq_mask, torch.ones_like(seq_mask[:, :1])], 1)
            seq_pos = torch.cat([seq_pos, pos], 1)
            logits = model(seq, positions=seq_pos, key_mask=seq_mask, last_only=True)

    mask = (torch.arange(steps, device=device)[None, :] < lengths[:, None]).float()  # (B, T): by position
    return Rollout(prompt_ids, prompt_mask, tokens[:, :steps], mask, logps[:, :steps] * mask,
                   entropies[:, :steps] * mask, finished, group_size, config.temperature)


def score_rollout(model: GPT, rollout: Rollout, temperature: float | None = None, return_logprobs: bool = False):
    """Teacher-forced log-probs and entropies of a rollout's responses under ``model``: one forward pass.

    Every row's ``[prompt | response]`` goes through the model once; the logits at the last prompt position and at
    each response position but the last predict the response's tokens. ``temperature`` defaults to the one the
    rollout was sampled at, so the result is comparable with ``rollout.old_logp``. ``logp`` carries the gradient
    unless called under no_grad; ``entropy`` never does (no objective here differentiates it, and its graph through
    the (B, T, V) distribution would only cost memory). Returns ``logp`` and ``entropy``, each (B, T) float32
    (values at padded positions are junk; the objectives mask them), and with ``return_logprobs`` also the full
    (B, T, V) log-probabilities.
    """
    Tp = rollout.prompt_ids.size(1)
    ids = torch.cat([rollout.prompt_ids, rollout.response_ids[:, :-1]], 1)   # (B, Tp + T - 1): the last token predicts nothing
    real = torch.cat([rollout.prompt_mask, torch.ones_like(rollout.response_ids[:, :-1], dtype=torch.bool)], 1)
    logits = model(ids, positions=positions_from_mask(real), key_mask=real)[:, Tp - 1:]   # (B, T, V)
    return scores(logits, rollout, temperature, return_logprobs)


def scores(logits: torch.Tensor, rollout: Rollout, temperature: float | None, return_logprobs: bool):
    """``score_rollout``'s results from the (B, T, V) logits that predict the rollout's response tokens."""
    temperature = rollout.temperature if temperature is None else temperature
    logprobs = distribution(logits, temperature, None)                       # (B, T, V)
    logp = logprobs.gather(-1, rollout.response_ids[..., None]).squeeze(-1)  # (B, T)
    with torch.no_grad():
        entropy = entropy_of(logprobs.detach())                              # (B, T)
    if return_logprobs:
        return logp, entropy, logprobs
    return logp, entropy


def concat_rollouts(parts: list[Rollout], pad_id: int) -> Rollout:
    """Join rollouts row-wise (e.g. several dynamic-sampling rounds), re-padding prompts on the left
    and responses on the right to the widest part. All parts must share one group size."""
    if not parts:
        raise ValueError("concat_rollouts needs at least one rollout")
    if len({p.group_size for p in parts}) != 1:
        raise ValueError("cannot join rollouts with different group sizes")
    Tp = max(p.prompt_ids.size(1) for p in parts)
    T = max(p.response_ids.size(1) for p in parts)

    def pad(t, width, value, left):
        extra = width - t.size(1)
        if extra == 0:
            return t
        filler = torch.full((t.size(0), extra), value, dtype=t.dtype, device=t.device)
        return torch.cat([filler, t] if left else [t, filler], 1)

    if len({p.temperature for p in parts}) != 1:
        raise ValueError("cannot join rollouts sampled at different temperatures")
    cat = lambda f, width, value, left: torch.cat([pad(getattr(p, f), width, value, left) for p in parts])  # noqa: E731
    per_row = lambda f: (None if any(getattr(p, f) is None for p in parts)  # noqa: E731
                         else torch.cat([getattr(p, f) for p in parts]))
    return Rollout(cat("prompt_ids", Tp, pad_id, True), cat("prompt_mask", Tp, False, True),
                   cat("response_ids", T, pad_id, False), cat("mask", T, 0.0, False), cat("old_logp", T, 0.0, False),
                   cat("old_entropy", T, 0.0, False), per_row("finished"), parts[0].group_size, parts[0].temperature,
                   per_row("rewards"), per_row("correct"), per_row("form"))


def encode_prompts(tokenizer: Tokenizer, prompts: list[str]) -> list[list[int]]:
    """BOS followed by the prompt's tokens, for every prompt."""
    return [[tokenizer.bos_id] + tokenizer.encode(p) for p in prompts]


def completions(tokenizer: Tokenizer, rollout: Rollout) -> list[str]:
    """Each response's text up to and including its first EOS (no EOS if it was truncated)."""
    ids = rollout.response_ids.tolist()
    lengths = rollout.lengths.tolist()
    return [tokenizer.decode(row[:n]) for row, n in zip(ids, lengths)]


@torch.no_grad()
def collect_rollout(model: GPT, tokenizer: Tokenizer, task, examples, *, group_size: int, temperature: float = 1.0,
                    max_new_tokens: int | None = None, generator: torch.Generator | None = None,
                    overlong_cache: int | None = None, precision: str = "auto") -> Rollout:
    """Sample ``group_size`` responses to each of ``examples`` (the task's ``Example`` objects) and score them.

    temperature      sampling temperature (0: greedy); recorded in the rollout, and ``score_rollout``
                     uses it by default, so old and new log-probs are comparable
    max_new_tokens   the response-length limit L_max (default: the task's)
    generator        a seeded ``torch.Generator`` on the model's device makes sampling reproducible
    overlong_cache   DAPO's overlong shaping (None: off): responses longer than L_max - overlong_cache
                     lose up to 1 reward point, linearly, and a truncated one loses 1
    precision        "fp32", "bf16" (autocast) or "auto" (bf16 on CUDA, fp32 elsewhere); see ``minitepo.device``

    Returns a ``Rollout`` whose ``rewards`` (B,) float32 are what the advantages are computed from and
    whose ``correct`` (B,) bool is the verifier's verdict, rows grouped by prompt (B = P * G). For a task
    whose answers take several forms (``task.FORMS``, e.g. ``add_or_cot``'s direct or steps), ``form`` (B,)
    holds the index of each response's form.
    """
    if not examples or isinstance(examples, str) or not all(hasattr(e, "prompt") for e in examples):
        raise ValueError("examples must be a non-empty list of the task's Example objects (task.sample(rng) "
                         "or task.eval_set() make them)")
    check_group_size(group_size)
    max_len = task.max_new_tokens if max_new_tokens is None else max_new_tokens
    device = model.wte.weight.device
    bf16 = precision != "fp32" and uses_bf16(device, precision)   # (fp32, the trainer's usual case, asks nothing)
    was_training = model.training
    model.eval()
    with torch.autocast(device.type, torch.bfloat16, enabled=bf16):
        rollout = sample(model, encode_prompts(tokenizer, [e.prompt for e in examples]), group_size=group_size,
                         eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id,
                         config=SamplerConfig(max_new_tokens=max_len, temperature=temperature), generator=generator,
                         validate=False)   # the prompts are checked examples, encoded by the tokenizer
    model.train(was_training)
    texts = completions(tokenizer, rollout)
    verdicts = [task.reward(examples[i // group_size].prompt, text) for i, text in enumerate(texts)]
    rollout.rewards = torch.tensor([reward for reward, _ in verdicts], dtype=torch.float32, device=device)  # (B,)
    rollout.correct = torch.tensor([bool(info["correct"]) for _, info in verdicts], device=device)          # (B,)
    if getattr(task, "FORMS", ()):  # a task whose answers take several forms says which one each response took
        rollout.form = torch.tensor([task.FORMS.index(task.response_form(split_at_eos(text)[0]))
                                     for text in texts], device=device)                                 # (B,)
    if overlong_cache is not None:
        rollout.rewards = rollout.rewards + overlong_penalty(rollout.lengths, max_len, overlong_cache).to(rollout.rewards)
    return rollout
