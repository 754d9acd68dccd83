"""Make the data of lesson 10's last section: its training loop under a few settings, three seeds each.

    python lessons/data/capstone_settings.py lessons/data/capstone_settings.json

Runs the loop of lesson 10 ("Your code in the loop") from the lesson's warm start, with the library's ``tepo_loss``
in the shipped reading in place of the learner's loss (exercise 2 checks that the two give the same parameters).
Seed 0 is the lesson's own run; seeds 1 and 2 draw other prompts, other samples and another mini-batch order.
At every evaluation it records the greedy accuracy on the task's held-out prompts (``task.eval_set()``) and on the
80 training problems, and the sampled accuracy at T = 1 on the held-out prompts (16 answers each, a fixed
generator). About 2 minutes of one CPU core.
"""

import copy
import json
import random
import sys
import time

import torch

from minitepo import (GPT, TEPO_MASK_TOL, ModelConfig, SupervisedConfig, Tokenizer, collect_rollout, group_advantages,
                      make_task, score_rollout, tepo_loss, train_supervised)
from minitepo.evaluate import greedy_accuracy, verdicts

SHIPPED = dict(ratio_clip="token_log", delta_low=0.4, delta_high=0.4, mask_criterion="measured", mask_action="kl",
               mask_kl="k3")
G, K, PROMPTS, LR, EVAL_EVERY = 8, 4, 32, 3e-4, 25
SETTINGS = {   # name: (iterations, AdamW betas, gradient-norm clip or 0, dynamic sampling)
    "adamw, no clip, 60 iterations": (60, (0.9, 0.999), 0.0, False),
    "adamw, no clip, 150 iterations": (150, (0.9, 0.999), 0.0, False),
    "betas (0.9, 0.95), clip 1.0, 150 iterations": (150, (0.9, 0.95), 1.0, False),
    "betas (0.9, 0.95), clip 1.0, 150 iterations, dynamic sampling": (150, (0.9, 0.95), 1.0, True),
}


def warm_start(tokenizer, task):
    """Lesson 10's warm start, bit for bit: seeded model, 150 supervised steps on 1-digit sums (the core's loop)."""
    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=2, n_head=2, n_embd=64))
    train_supervised(model, tokenizer, task, SupervisedConfig(steps=150, batch_size=64, lr=3e-3, warmup=10),
                     eval_every=150)
    return model


def training_problems(task, n_draws=3000):
    """Every distinct problem the training sampler can draw (80 for 1-digit sums), in a fixed order."""
    seen = {}
    for j in range(n_draws):
        ex = task.sample(random.Random(j))
        seen.setdefault(ex.prompt, ex)
    return list(seen.values())


def evaluate(model, tokenizer, task, held_out, train_set):
    sampled = verdicts(model, tokenizer, task, held_out, group_size=16, temperature=1.0,
                       generator=torch.Generator().manual_seed(7))
    return dict(greedy_held=greedy_accuracy(model, tokenizer, task, held_out)["all"],
                greedy_train=greedy_accuracy(model, tokenizer, task, train_set)["all"],
                sampled_held=sum(sampled) / len(sampled))


def run(warm, tokenizer, task, held_out, train_set, iterations, betas, clip, dynamic, seed, temperature=1.0,
        rewards=None):
    """One run of the loop; ``rewards``, a list, gets each iteration's mean sampled reward."""
    policy = copy.deepcopy(warm)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=LR, betas=betas)
    order_gen = torch.Generator().manual_seed(2 + seed)
    curve = {"step": [0], **{k: [v] for k, v in evaluate(policy, tokenizer, task, held_out, train_set).items()}}
    for it in range(iterations):
        prompts = [task.sample(random.Random(10_000 + 100 * it + j + 1_000_000 * seed)) for j in range(PROMPTS)]
        ro = collect_rollout(policy, tokenizer, task, prompts, group_size=G, temperature=temperature,
                             generator=torch.Generator().manual_seed(100 + it + 1000 * seed))
        if rewards is not None:
            rewards.append(ro.rewards.mean().item())
        adv = group_advantages(ro.rewards, group_size=G)
        if dynamic:                                      # keep only the groups whose rewards differ
            keep = (adv.view(-1, G).abs().sum(1) > 0).repeat_interleave(G).nonzero().squeeze(-1)
            ro, adv = (ro.select(keep), adv[keep]) if keep.numel() >= K else (None, None)
        if ro is not None:
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
            curve["step"].append(it + 1)
            for k, v in evaluate(policy, tokenizer, task, held_out, train_set).items():
                curve[k].append(v)
    return curve


def main(out_path):
    torch.set_num_threads(1)
    tokenizer, task = Tokenizer(), make_task("add", levels=(1,))
    warm = warm_start(tokenizer, task)
    held_out, train_set = task.eval_set(), training_problems(task)
    data = {"held_out": len(held_out), "train_problems": len(train_set), "settings": {}}
    for name, (iterations, betas, clip, dynamic) in SETTINGS.items():
        data["settings"][name] = {}
        for seed in range(3):
            t0 = time.process_time()
            curve = run(warm, tokenizer, task, held_out, train_set, iterations, betas, clip, dynamic, seed)
            data["settings"][name][str(seed)] = curve
            print(f"{name}, seed {seed}: held-out greedy {curve['greedy_held'][0]:.2f} -> {curve['greedy_held'][-1]:.2f}"
                  f", train greedy {curve['greedy_train'][0]:.3f} -> {curve['greedy_train'][-1]:.3f}, held-out "
                  f"sampled {curve['sampled_held'][0]:.3f} -> {curve['sampled_held'][-1]:.3f} "
                  f"({time.process_time() - t0:.1f} s)", flush=True)
    with open(out_path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "lessons/data/capstone_settings.json")
