"""Collecting a rollout: prompts in, sampled responses with their rewards out.

    examples --encode--> token ids --sample (G per prompt)--> responses --decode--> text --verifier--> rewards

``collect_rollout`` is the one place where this happens: the trainer, the held-out evaluation and
the lessons all call it. It is also the one place where rewards are shaped: the task's verifier
gives the outcome reward (plus the task's own ``format_bonus`` option, if set), and DAPO's
overlong shaping, when asked for, is added here. The returned ``Rollout`` carries ``rewards`` and
``correct`` next to its tokens, mask, log-probs and entropies.
"""

from __future__ import annotations

import torch

from minitepo.advantages import overlong_penalty
from minitepo.device import autocast
from minitepo.model import GPT
from minitepo.sampling import Rollout, SamplerConfig, sample
from minitepo.tokenizer import Tokenizer
from toy_tasks import split_at_eos


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
    max_len = task.max_new_tokens if max_new_tokens is None else max_new_tokens
    device = model.wte.weight.device
    was_training = model.training
    model.eval()
    with autocast(device, precision):
        rollout = sample(model, encode_prompts(tokenizer, [e.prompt for e in examples]), group_size=group_size,
                         eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id,
                         config=SamplerConfig(max_new_tokens=max_len, temperature=temperature), generator=generator)
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
