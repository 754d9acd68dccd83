"""Make the data of lesson 10's last section: its training loop under three optimizer settings, three seeds each.

    python lessons/data/capstone_settings.py lessons/data/capstone_settings.json

Runs the loop of lesson 10 ("Your code in the loop") from the lesson's warm start (450 supervised steps on 2-digit
sums), with the library's ``tepo_loss`` in the shipped reading in place of the learner's loss (exercise 2 checks that
the two give the same parameters). Seed 0 is the lesson's own run; seeds 1 and 2 draw other prompts, other samples
and another mini-batch order. At every evaluation (every 25 iterations) it records the greedy accuracy on the task's
200 held-out prompts (``task.eval_set()``) and the sampled accuracy at T = 1 on them (4 answers each, a fixed
generator); at the start and at the end, which held-out prompts greedy decoding gets right (a string of 0s and 1s, in
``task.eval_set()``'s order), from which the lesson computes each run's paired interval. Besides, each iteration's mean
sampled reward. The settings, the seeds and the loop's fixed numbers are written into the file. About 2 minutes of
one CPU core (one torch thread).
"""

import copy
import json
import random
import sys
import time

import torch

from minitepo import (GPT, TEPO_MASK_TOL, ModelConfig, SupervisedConfig, Tokenizer, collect_rollout, group_advantages,
                      make_task, score_rollout, tepo_loss, train_supervised)
from minitepo.evaluate import verdicts
from minitepo.optim import lr_at

SHIPPED = dict(ratio_clip="token_log", delta_low=0.4, delta_high=0.4, mask_criterion="measured", mask_action="kl",
               mask_kl="k3")
LEVELS, WARM_STEPS = (2,), 450                 # the lesson's task and warm start
G, K, PROMPTS, LR, EVAL_EVERY, ITERATIONS, TEMPERATURE = 8, 4, 32, 3e-4, 25, 150, 0.5
WARMUP, MIN_LR_FRAC = 10, 0.1                  # the schedule's warmup (iterations) and floor, when it has one
SEEDS = (0, 1, 2)
SETTINGS = {   # name: (AdamW betas, gradient-norm clip or 0, learning-rate schedule)
    "adamw's betas, no clip, constant lr": ((0.9, 0.999), 0.0, "constant"),
    "betas (0.9, 0.95), clip 1.0, constant lr": ((0.9, 0.95), 1.0, "constant"),
    "betas (0.9, 0.95), clip 1.0, warmup and cosine lr": ((0.9, 0.95), 1.0, "cosine"),
}


def warm_start(tokenizer, task):
    """Lesson 10's warm start, bit for bit: seeded model, 450 supervised steps on 2-digit sums (the core's loop)."""
    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=2, n_head=2, n_embd=64))
    train_supervised(model, tokenizer, task, SupervisedConfig(steps=WARM_STEPS, batch_size=64, lr=3e-3, warmup=10),
                     eval_every=WARM_STEPS)
    return model


def evaluate(model, tokenizer, task, held_out):
    """Which held-out prompts greedy decoding gets right (a list of bools), and the sampled accuracy at T = 1."""
    greedy = verdicts(model, tokenizer, task, held_out)
    sampled = verdicts(model, tokenizer, task, held_out, group_size=4, temperature=1.0,
                       generator=torch.Generator().manual_seed(7))
    return greedy, sum(sampled) / len(sampled)


def lr_of(iteration, iterations, schedule):
    """The learning rate of one iteration: constant, or the lesson's warmup and cosine (``minitepo.optim.lr_at``)."""
    if schedule == "constant":
        return LR
    return lr_at(iteration, lr=LR, warmup=WARMUP, total=iterations, min_lr_frac=MIN_LR_FRAC)


def run(warm, tokenizer, task, held_out, betas, clip, schedule, seed, temperature=TEMPERATURE, iterations=ITERATIONS):
    """One run of the lesson's loop; returns its curve (greedy and sampled held-out accuracy every EVAL_EVERY
    iterations, each iteration's mean reward, and the held-out verdicts at the start and the end)."""
    policy = copy.deepcopy(warm)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=LR, betas=betas)
    order_gen = torch.Generator().manual_seed(2 + seed)
    greedy, sampled = evaluate(policy, tokenizer, task, held_out)
    curve = {"step": [0], "greedy_held": [sum(greedy) / len(greedy)], "sampled_held": [sampled], "reward": [],
             "verdicts_start": "".join("1" if v else "0" for v in greedy)}
    for it in range(iterations):
        for group in optimizer.param_groups:
            group["lr"] = lr_of(it, iterations, schedule)
        prompts = [task.sample(random.Random(10_000 + 100 * it + j + 1_000_000 * seed)) for j in range(PROMPTS)]
        ro = collect_rollout(policy, tokenizer, task, prompts, group_size=G, temperature=temperature,
                             generator=torch.Generator().manual_seed(100 + it + 1000 * seed))
        curve["reward"].append(round(ro.rewards.mean().item(), 5))
        adv = group_advantages(ro.rewards, group_size=G)
        for rows in torch.randperm(ro.mask.shape[0], generator=order_gen).tensor_split(K):
            mb = ro.select(rows)
            logp, entropy = score_rollout(policy, mb)
            loss, _ = tepo_loss(logp=logp, old_logp=mb.old_logp, advantages=adv[rows], mask=mb.mask, entropy=entropy,
                                old_entropy=mb.old_entropy, mask_tol=TEPO_MASK_TOL, beta_mask=1.0, **SHIPPED)
            optimizer.zero_grad()
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(policy.parameters(), clip)
            optimizer.step()
        if (it + 1) % EVAL_EVERY == 0 or it + 1 == iterations:
            greedy, sampled = evaluate(policy, tokenizer, task, held_out)
            curve["step"].append(it + 1)
            curve["greedy_held"].append(sum(greedy) / len(greedy))
            curve["sampled_held"].append(sampled)
    curve["verdicts_end"] = "".join("1" if v else "0" for v in greedy)
    return curve


def loop_record():
    """The loop's fixed numbers, written into each data file."""
    return {"task": f"add, levels {list(LEVELS)}", "warm_start_steps": WARM_STEPS, "prompts": PROMPTS, "group_size": G,
            "minibatches": K, "lr": LR, "warmup_iterations": WARMUP, "min_lr_frac": MIN_LR_FRAC,
            "iterations": ITERATIONS, "eval_every": EVAL_EVERY, "seeds": list(SEEDS)}


def report(name, seed, curve, seconds):
    print(f"{name}, seed {seed}: held-out greedy {curve['greedy_held'][0]:.3f} -> {curve['greedy_held'][-1]:.3f}, "
          f"held-out sampled {curve['sampled_held'][0]:.3f} -> {curve['sampled_held'][-1]:.3f} ({seconds:.1f} s)",
          flush=True)


def main(out_path):
    torch.set_num_threads(1)
    tokenizer, task = Tokenizer(), make_task("add", levels=LEVELS)
    warm = warm_start(tokenizer, task)
    held_out = task.eval_set()
    data = {"held_out": len(held_out), "temperature": TEMPERATURE, **loop_record(),
            "settings": {name: {"betas": list(betas), "clip": clip, "schedule": schedule}
                         for name, (betas, clip, schedule) in SETTINGS.items()},
            "runs": {}}
    for name, (betas, clip, schedule) in SETTINGS.items():
        data["runs"][name] = {}
        for seed in SEEDS:
            t0 = time.process_time()
            curve = run(warm, tokenizer, task, held_out, betas, clip, schedule, seed)
            data["runs"][name][str(seed)] = curve
            report(name, seed, curve, time.process_time() - t0)
    with open(out_path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "lessons/data/capstone_settings.json")
