"""Make lesson 10's evidence for its sampling temperature: the lesson's loop at T = 1 and at T = 0.7, three seeds each.

    python lessons/data/capstone_temperature.py lessons/data/capstone_temperature.json [--workers 2]

The loop, warm start, evaluation and seeds are those of ``capstone_settings.py`` (the library's ``tepo_loss`` in the
shipped reading in place of the learner's loss), with the trainer's betas and clip (AdamW betas (0.9, 0.95), gradient norm
clipped at 1) and 200 iterations; only the temperature the rollouts are sampled at differs. Seed 0 is the lesson's
own run. Besides the evaluations every 25 iterations, it keeps each iteration's mean sampled reward. About 90 s of
CPU, spread over ``--workers`` processes (one torch thread each); the numbers do not depend on the number of workers.
"""

import argparse
import json
import time
from multiprocessing import Pool

import torch
from capstone_settings import evaluate, run, training_problems, warm_start  # noqa: F401  (same folder)

from minitepo import Tokenizer, make_task

ITERATIONS, BETAS, CLIP = 200, (0.9, 0.95), 1.0
SETTINGS = {"T 1, betas (0.9, 0.95), clip 1.0, 200 iterations": 1.0,
            "T 0.7, betas (0.9, 0.95), clip 1.0, 200 iterations": 0.7}
SEEDS = (0, 1, 2)
WARM = {}          # the warm start, made once before the workers start (they inherit it)


def one_run(job):
    name, seed = job
    torch.set_num_threads(1)
    tokenizer, task = WARM["tokenizer"], WARM["task"]
    rewards = []
    t0 = time.process_time()
    curve = run(WARM["model"], tokenizer, task, task.eval_set(), training_problems(task), ITERATIONS, BETAS, CLIP,
                False, seed, temperature=SETTINGS[name], rewards=rewards)
    curve["reward"] = [round(r, 5) for r in rewards]
    print(f"{name}, seed {seed}: held-out greedy {curve['greedy_held'][0]:.2f} -> {curve['greedy_held'][-1]:.2f}, "
          f"train greedy {curve['greedy_train'][0]:.3f} -> {curve['greedy_train'][-1]:.3f}, held-out sampled "
          f"{curve['sampled_held'][0]:.3f} -> {curve['sampled_held'][-1]:.3f} ({time.process_time() - t0:.1f} s)",
          flush=True)
    return name, seed, curve


def main(out_path, workers):
    torch.set_num_threads(1)
    WARM["tokenizer"], WARM["task"] = Tokenizer(), make_task("add", levels=(1,))
    WARM["model"] = warm_start(WARM["tokenizer"], WARM["task"])
    task = WARM["task"]
    jobs = [(name, seed) for name in reversed(SETTINGS) for seed in SEEDS]
    with Pool(workers) as pool:
        results = pool.map(one_run, jobs, chunksize=1)
    data = {"held_out": len(task.eval_set()), "train_problems": len(training_problems(task)),
            "iterations": ITERATIONS, "settings": {name: {} for name in SETTINGS}}
    for name, seed, curve in sorted(results, key=lambda r: r[1]):
        data["settings"][name][str(seed)] = curve
    with open(out_path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="lessons/data/capstone_temperature.json")
    parser.add_argument("--workers", type=int, default=2, help="processes, one torch thread each")
    args = parser.parse_args()
    main(args.out, args.workers)
