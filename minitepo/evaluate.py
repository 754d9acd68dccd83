"""Held-out evaluation: greedy accuracy per difficulty level, and sampled pass@k.

Evaluation always uses the task's fixed held-out set (``task.eval_set()``), whose prompts never
appear in training. Responses are decoded up to and including their first EOS and handed to the
task's verifier as text, exactly as during RL.
"""

from __future__ import annotations

import math
from collections import defaultdict

import torch

from minitepo.model import GPT
from minitepo.rollout import collect_rollout
from minitepo.tokenizer import Tokenizer


def verdicts(model: GPT, tokenizer: Tokenizer, task, examples, *, group_size: int = 1, temperature: float = 0.0,
             generator: torch.Generator | None = None, batch_size: int = 512, precision: str = "auto") -> list[bool]:
    """Whether each of ``group_size`` responses to every example is correct (grouped by example),
    collected in batches of at most ``batch_size`` responses."""
    return _judged(model, tokenizer, task, examples, group_size=group_size, temperature=temperature,
                   generator=generator, batch_size=batch_size, precision=precision)[0]


def _judged(model, tokenizer, task, examples, *, group_size, temperature, generator, batch_size, precision):
    """(whether each response is correct, the index of its form in ``task.FORMS`` or None for tasks of one form)."""
    per_batch = max(1, batch_size // group_size)
    correct: list[bool] = []
    forms: list[int] | None = [] if getattr(task, "FORMS", ()) else None
    for start in range(0, len(examples), per_batch):
        rollout = collect_rollout(model, tokenizer, task, examples[start:start + per_batch], group_size=group_size,
                                  temperature=temperature, generator=generator, precision=precision)
        correct.extend(rollout.correct.tolist())
        if forms is not None:
            forms.extend(rollout.form.tolist())
    return correct, forms


def greedy_accuracy(model: GPT, tokenizer: Tokenizer, task, examples=None, precision: str = "auto") -> dict[str, float]:
    """Fraction of held-out prompts answered correctly by greedy decoding, per level and overall.

    Returns ``{"all": acc, "level/1": acc, ...}``; for a task whose answers take several forms (``task.FORMS``)
    also, per form, the share of answers given in it (``"form_share/steps"``) and the accuracy of those answers
    (``"form_acc/steps"``; 0 when no answer took the form).
    """
    examples = task.eval_set() if examples is None else examples
    correct, forms = _judged(model, tokenizer, task, examples, group_size=1, temperature=0.0, generator=None,
                             batch_size=512, precision=precision)
    by_level: dict[int, list[float]] = defaultdict(list)
    for ex, ok in zip(examples, correct):
        by_level[ex.level].append(float(ok))
    result = {"all": sum(sum(v) for v in by_level.values()) / max(1, len(examples))}
    for level in sorted(by_level):
        result[f"level/{level}"] = sum(by_level[level]) / len(by_level[level])
    for index, name in enumerate(task.FORMS if forms is not None else ()):   # forms: None for a one-form task
        in_form = [ok for ok, form in zip(correct, forms) if form == index]
        result[f"form_share/{name}"] = len(in_form) / max(1, len(correct))
        result[f"form_acc/{name}"] = sum(in_form) / len(in_form) if in_form else 0.0
    return result


def pass_at_k_estimate(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct: 1 - C(n-c, k) / C(n, k)."""
    if not 0 < k <= n:
        raise ValueError(f"pass@k needs 0 < k <= n samples, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at_k(model: GPT, tokenizer: Tokenizer, task, *, k: int, n: int | None = None, temperature: float = 1.0,
              generator: torch.Generator | None = None, examples=None, precision: str = "auto") -> float:
    """Mean unbiased pass@k over the held-out set, from ``n`` (default k) samples per prompt."""
    examples = task.eval_set() if examples is None else examples
    n = k if n is None else n
    if not 0 < k <= n:  # checked before any sampling
        raise ValueError(f"pass@k needs 0 < k <= n samples, got k={k}, n={n}")
    correct = verdicts(model, tokenizer, task, examples, group_size=n, temperature=temperature, generator=generator,
                       precision=precision)
    total = sum(pass_at_k_estimate(n, sum(correct[i * n:(i + 1) * n]), k) for i in range(len(examples)))
    return total / max(1, len(examples))
