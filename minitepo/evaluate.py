"""Held-out evaluation: greedy accuracy per difficulty level, and sampled pass@k.

Evaluation always uses the task's fixed held-out set (``task.eval_set()``), whose prompts never
appear in training. Responses are decoded up to and including their first EOS and handed to the
task's verifier as text, exactly as during RL.
"""

from __future__ import annotations

import math
from collections import defaultdict

import torch

from minitepo.device import autocast
from minitepo.model import GPT
from minitepo.sampling import Rollout, SamplerConfig, sample
from minitepo.tokenizer import Tokenizer


def encode_prompts(tokenizer: Tokenizer, prompts: list[str]) -> list[list[int]]:
    """BOS followed by the prompt's tokens, for every prompt."""
    return [[tokenizer.bos_id] + tokenizer.encode(p) for p in prompts]


def completions(tokenizer: Tokenizer, rollout: Rollout) -> list[str]:
    """Each response's text up to and including its first EOS (no EOS if it was truncated)."""
    ids = rollout.response_ids.tolist()
    lengths = rollout.lengths.tolist()
    return [tokenizer.decode(row[:n]) for row, n in zip(ids, lengths)]


@torch.no_grad()
def generate(model: GPT, tokenizer: Tokenizer, prompts: list[str], *, max_new_tokens: int, group_size: int = 1,
             temperature: float = 0.0, generator: torch.Generator | None = None, batch_size: int = 512) -> list[str]:
    """Completions for every prompt (``group_size`` each, grouped), sampled in batches."""
    was_training = model.training
    model.eval()
    config = SamplerConfig(max_new_tokens=max_new_tokens, temperature=temperature)
    device = model.wte.weight.device
    out: list[str] = []
    per_batch = max(1, batch_size // group_size)
    for start in range(0, len(prompts), per_batch):
        chunk = encode_prompts(tokenizer, prompts[start:start + per_batch])
        with autocast(device):
            rollout = sample(model, chunk, group_size=group_size, eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id,
                             config=config, generator=generator)
        out.extend(completions(tokenizer, rollout))
    model.train(was_training)
    return out


def greedy_accuracy(model: GPT, tokenizer: Tokenizer, task, examples=None) -> dict[str, float]:
    """Fraction of held-out prompts answered correctly by greedy decoding, per level and overall.

    Returns ``{"all": acc, "level/1": acc, ...}``.
    """
    examples = task.eval_set() if examples is None else examples
    texts = generate(model, tokenizer, [e.prompt for e in examples], max_new_tokens=task.max_new_tokens)
    by_level: dict[int, list[float]] = defaultdict(list)
    for ex, text in zip(examples, texts):
        _, info = task.reward(ex.prompt, text)
        by_level[ex.level].append(float(info["correct"]))
    result = {"all": sum(sum(v) for v in by_level.values()) / max(1, len(examples))}
    for level in sorted(by_level):
        result[f"level/{level}"] = sum(by_level[level]) / len(by_level[level])
    return result


def pass_at_k_estimate(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct: 1 - C(n-c, k) / C(n, k)."""
    if not 0 < k <= n:
        raise ValueError(f"pass@k needs 0 < k <= n samples, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at_k(model: GPT, tokenizer: Tokenizer, task, *, k: int, n: int | None = None, temperature: float = 1.0,
              generator: torch.Generator | None = None, examples=None) -> float:
    """Mean unbiased pass@k over the held-out set, from ``n`` (default k) samples per prompt."""
    examples = task.eval_set() if examples is None else examples
    n = k if n is None else n
    texts = generate(model, tokenizer, [e.prompt for e in examples], max_new_tokens=task.max_new_tokens,
                     group_size=n, temperature=temperature, generator=generator)
    total = 0.0
    for i, ex in enumerate(examples):
        c = sum(task.reward(ex.prompt, t)[1]["correct"] for t in texts[i * n:(i + 1) * n])
        total += pass_at_k_estimate(n, int(c), k)
    return total / max(1, len(examples))
