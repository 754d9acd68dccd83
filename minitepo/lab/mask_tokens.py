"""Which tokens TEPO's KL mask hits in a chain-of-thought answer.

    python -m minitepo.lab.mask_tokens --init runs/cot/warmstart/checkpoint.pt --out runs/cot/mask_tokens.png

The mask falls on tokens with a positive advantage whose entropy dropped after an update. In an
``add_cot`` answer (``8+7+0=15;5+6+1=12:125``) the tokens play different parts: operand digits copied
from the prompt, the carry into a column, the column sums (the arithmetic), separators, the final
answer (all the reward reads) and EOS. This tool samples one rollout from a checkpoint, makes the
trainer's ``minibatches`` TEPO steps on it (the measured criterion with ``TEPO_MASK_TOL``, as ``minitepo
rl`` does; the checkpoint itself is not changed), and counts, per role, the fraction of that role's
tokens in the mask on the steps after the first (on the first the policy is the behaviour policy and
the mask is empty). The figure: that fraction per role, and a few answers coloured by membership.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from matplotlib.figure import Figure

from minitepo.advantages import group_advantages
from minitepo.device import pick_device, set_cpu_threads
from minitepo.lab.checkpoint import load_model
from minitepo.lab.compare import COMPARE
from minitepo.lab.config import add_flags, from_args
from minitepo.lab.plotting import save_figure
from minitepo.losses import TEPO_MASK_TOL, tepo_loss, tepo_mask
from minitepo.optim import make_optimizer
from minitepo.rollout import collect_rollout, score_rollout
from toy_tasks import resolve_task

ROLES = ("operand", "carry", "column sum", "separator", "final answer", "eos", "other")
_STEP = re.compile(r"([0-9])\+([0-9])\+([0-9])=([0-9]{1,2})")


def cot_roles(chars: list[str]) -> list[str]:
    """The role of every token of an ``add_cot`` response, given as one string per token (EOS as "<eos>")."""
    text = "".join(c if len(c) == 1 else "\0" for c in chars)              # one character per token
    roles = ["other"] * len(chars)
    body_end = text.find("\0") if "\0" in text else len(text)
    colon = text.rfind(":", 0, body_end)
    steps_end = colon if colon >= 0 else body_end
    start = 0
    for piece in text[:steps_end].split(";"):
        match = _STEP.fullmatch(piece)
        if match:
            labels = ["operand", "separator", "operand", "separator", "carry", "separator"]
            labels += ["column sum"] * len(match.group(4))
            roles[start:start + len(piece)] = labels
        end = start + len(piece)
        if end < steps_end:
            roles[end] = "separator"                                         # the ";"
        start = end + 1
    if colon >= 0:
        roles[colon] = "separator"
        roles[colon + 1:body_end] = ["final answer" if c.isdigit() else "other" for c in text[colon + 1:body_end]]
    for i, c in enumerate(chars):
        if len(c) != 1:
            roles[i] = "eos"
    return roles


@dataclass
class MaskTokensConfig:
    """Which tokens TEPO's mask hits in chain-of-thought answers."""

    init: str = "runs/sft/checkpoint.pt"
    """Checkpoint to start from (an add_cot warm start); it is not changed."""
    task: str = "add_cot"
    """Toy task (the roles are add_cot's)."""
    levels: str | None = None
    """Levels, comma-separated; default: the checkpoint's."""
    prompts: int = COMPARE.prompts
    """Prompts in the rollout."""
    group_size: int = COMPARE.group_size
    """Responses per prompt."""
    minibatches: int = COMPARE.minibatches
    """TEPO optimizer steps on the rollout, as the trainer makes them."""
    lr: float = COMPARE.lr
    """Learning rate of those steps (a comparison's, ``minitepo.lab.compare.COMPARE``, as in the runs it looks into)."""
    temperature: float = COMPARE.temperature
    """Sampling temperature (the loss uses the same one)."""
    seed: int = 0
    """Seed for prompts, sampling and the mini-batch order."""
    device: str = "auto"
    """auto, cpu, cuda or mps."""
    out: str = "runs/mask_tokens.png"
    """The figure (PNG)."""


def mask_hits(config: MaskTokensConfig) -> dict:
    """Per role: tokens in TEPO's mask and tokens seen, on the steps after the first; and a few coloured answers."""
    device = pick_device(config.device)
    model, tokenizer, data = load_model(config.init, device)
    task = resolve_task(config.task, config.levels, trained_name=data.get("task"), trained_levels=data.get("levels"))
    rng, generator = random.Random(config.seed), torch.Generator(device=device).manual_seed(config.seed)
    examples = [task.sample(rng) for _ in range(config.prompts)]
    rollout = collect_rollout(model, tokenizer, task, examples, group_size=config.group_size,
                              temperature=config.temperature, generator=generator)
    advantages = group_advantages(rollout.rewards, rollout.group_ids)                  # (B,)
    optimizer = make_optimizer(model, config.lr, 0.0)
    order = torch.randperm(rollout.mask.size(0), generator=torch.Generator().manual_seed(config.seed + 1))
    hits = {role: [0, 0] for role in ROLES}
    examples_shown = []
    model.train()
    for step, rows in enumerate(order.tensor_split(config.minibatches)):
        micro = rollout.select(rows.to(device))
        logp, entropy = score_rollout(model, micro)
        M = tepo_mask(advantages[rows], micro.mask, entropy=entropy, old_entropy=micro.old_entropy, tol=TEPO_MASK_TOL)
        if step > 0:  # on the first step the policy is the behaviour policy: the measured mask is empty
            for ids, mask_row, hit_row, adv in zip(micro.response_ids.tolist(), micro.mask.bool().tolist(),
                                                   M.tolist(), advantages[rows].tolist()):
                chars = [tokenizer.decode([i]) if i != tokenizer.eos_id else "<eos>" for i, m in zip(ids, mask_row) if m]
                roles = cot_roles(chars)
                for role, hit in zip(roles, hit_row):
                    hits[role][0] += int(hit)
                    hits[role][1] += 1
                if adv > 0 and any(hit_row) and len(examples_shown) < 6:
                    examples_shown.append((chars, hit_row[:len(chars)]))
        loss, _ = tepo_loss(logp=logp, old_logp=micro.old_logp, advantages=advantages[rows], mask=micro.mask,
                            entropy=entropy, old_entropy=micro.old_entropy, mask_tol=TEPO_MASK_TOL)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return {"hits": hits, "examples": examples_shown, "reward_mean": rollout.rewards.mean().item()}


def plot_mask_hits(result: dict, out) -> Path:
    """Bar chart of the masked fraction per role, and the example answers coloured by membership."""
    fig = Figure(figsize=(11, 3.8))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.4]})
    roles = [r for r in ROLES if result["hits"][r][1]]
    fractions = [result["hits"][r][0] / result["hits"][r][1] for r in roles]
    left.bar(roles, fractions, color="C3")
    left.set_ylabel("fraction of the role's tokens in the mask")
    left.set_title("TEPO's mask by token role (steps 2+)")
    left.tick_params(axis="x", rotation=35)
    right.set_axis_off()
    right.set_title("positive-advantage answers; red = in the mask")
    for row, (chars, hit_row) in enumerate(result["examples"]):
        for col, (c, hit) in enumerate(zip(chars, hit_row)):
            right.text(0.02 + col * 0.03, 0.9 - row * 0.15, "$" if c == "<eos>" else c, family="monospace",
                       color="C3" if hit else "0.3", fontweight="bold" if hit else "normal",
                       transform=right.transAxes)
    return save_figure(fig, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minitepo.lab.mask_tokens", description=__doc__.split("\n\n")[0])
    add_flags(parser, MaskTokensConfig)
    config = from_args(MaskTokensConfig, parser.parse_args(argv))
    set_cpu_threads(1)
    result = mask_hits(config)
    for role in ROLES:
        hit, seen = result["hits"][role]
        if seen:
            print(f"{role:13s} {hit:5d} / {seen:5d} tokens in the mask ({hit / seen:.1%})")
    print(f"wrote {plot_mask_hits(result, config.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
