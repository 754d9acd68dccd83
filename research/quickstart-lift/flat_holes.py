"""A check of a weak ``add`` warm start before RL: does some tens or hundreds digit ignore the operands?

A *flat hole* is a class of 3-digit prompts (the sum of the column below the digit, carry included) where the
model's distribution over the written digit is nearly the same whatever the operands, so the right digit gets about
one chance in ten. RL with a 0/1 reward did not fill one in 750 iterations, and the warm start does not close it
before 40% accuracy (research/quickstart-lift/README.md, "What a hole is"): three of the four quickstart runs that started from
one ended below 80%. The tenth round of that page read each warm start with ``find_flat_holes`` and, if it had one,
trained another (the quickstart's ``--redraw-flat`` at f38078c; the round kept today's quickstart and the switch has
left the package). The check stays here, with its test, as the definition the page's flat holes were counted by.

The reading, per class with at least ``MIN_CLASS`` probe prompts, teacher-forced on ``PROBE`` fixed prompts at the
RL temperature:

    p(class)      = mean over its prompts of pi(right digit | prompt, the right answer so far)
    spread(class) = mean over its prompts of TV(pi(. | prompt), mean of pi(. | prompt) over the class)

over the ten digits, TV(q, r) = 1/2 sum_d |q_d - r_d|. A class is a flat hole when p < ``FLAT_P`` and
spread < ``FLAT_SPREAD``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from minitepo.model import GPT
from minitepo.sft import IGNORE, make_batch
from minitepo.tokenizer import Tokenizer
from toy_tasks import make_task
from toy_tasks.base import read_operands

PROBE = 3000        # fixed 3-digit prompts, drawn with random.Random(PROBE_SEED)
PROBE_SEED = 0
MIN_CLASS = 20      # a class needs this many probe prompts to count
FLAT_P = 0.2        # ... and is a flat hole below this mean probability of the right digit
FLAT_SPREAD = 0.3   # ... and this spread (the four flat classes of 40 warm starts read 0.08-0.11; others >= 0.57)


@dataclass(frozen=True)
class DigitClass:
    """One class of the probe: the answer digit (``"tens"`` or ``"hundreds"``), the sum of the column below with its
    carry, how many probe prompts it has, ``p`` and ``spread`` (see the module's docstring)."""
    digit: str
    below: int
    n: int
    p: float
    spread: float

    @property
    def flat(self) -> bool:
        return self.n >= MIN_CLASS and self.p < FLAT_P and self.spread < FLAT_SPREAD

    def __str__(self) -> str:
        return (f"the {self.digit} digit after a column summing to {self.below} (p {self.p:.2f}, spread "
                f"{self.spread:.2f}, {self.n} probe prompts)")


def probe_examples(prompts: int = PROBE):
    """The fixed probe: ``prompts`` 3-digit ``add`` examples drawn with random.Random(PROBE_SEED)."""
    task = make_task("add", levels=(3,))
    rng = random.Random(PROBE_SEED)
    return task, [task.generate(rng, 3) for _ in range(prompts)]


@torch.no_grad()
def digit_classes(model: GPT, tokenizer: Tokenizer, *, temperature: float = 0.7,
                  prompts: int = PROBE) -> list[DigitClass]:
    """Every tens and hundreds class of the probe, read teacher-forced in one pass (the model is put in eval mode
    and restored)."""
    task, examples = probe_examples(prompts)
    device = next(model.parameters()).device
    x, y = make_batch(examples, tokenizer, device)              # (B, L) each; y is IGNORE off the answer
    was_training = model.training
    model.eval()
    logits = model(x).float()                                   # (B, L, V)
    model.train(was_training)
    digits = torch.tensor([tokenizer.encode(str(d))[0] for d in range(10)], device=device)
    probs = torch.softmax(logits / temperature, -1)[..., digits].cpu()   # (B, L, 10): the written digit's distribution
    rows: dict[tuple[str, int], list[tuple[int, int, int]]] = {}          # class -> (prompt, position, right digit)
    for i, example in enumerate(examples):
        a, b = read_operands(example.prompt, "+", reverse=task.config.reverse_operands)
        answer = (y[i] != IGNORE).nonzero().flatten().tolist()   # the answer's digits, ones first, then EOS
        carry = 0
        for k, name in ((1, "tens"), (2, "hundreds")):
            below = (a // 10 ** (k - 1)) % 10 + (b // 10 ** (k - 1)) % 10 + carry   # column k-1 with its carry
            carry = below // 10
            right = int(example.answer[k])                        # the answer is written ones first
            rows.setdefault((name, below), []).append((i, answer[k], right))
    classes = []
    for (name, below), members in sorted(rows.items(), key=lambda kv: (kv[0][0] != "tens", kv[0][1])):
        p = sum(probs[i, pos, right].item() for i, pos, right in members) / len(members)
        spread = tv_spread(torch.stack([probs[i, pos] for i, pos, _ in members]))
        classes.append(DigitClass(name, below, len(members), p, spread))
    return classes


def tv_spread(dists: torch.Tensor) -> float:
    """Mean total-variation distance of each row of ``dists`` (n, 10), a distribution, from the rows' mean."""
    return 0.5 * (dists - dists.mean(0)).abs().sum(-1).mean().item()


def find_flat_holes(model: GPT, tokenizer: Tokenizer, *, temperature: float = 0.7) -> list[DigitClass]:
    """The flat holes of a model of 3-digit ``add`` (empty: none), weakest first."""
    return sorted((c for c in digit_classes(model, tokenizer, temperature=temperature) if c.flat), key=lambda c: c.p)
