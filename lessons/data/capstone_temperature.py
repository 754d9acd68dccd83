"""Make lesson 10's evidence for its sampling temperature: the lesson's loop at T = 1, 0.7 and 0.5, three seeds each.

    python lessons/data/capstone_temperature.py lessons/data/capstone_temperature.json [--workers 1]

The loop, warm start, evaluation and seeds are those of ``capstone_settings.py`` (the library's ``tepo_loss`` in the
shipped reading in place of the learner's loss), with the lesson's optimizer (AdamW betas (0.9, 0.95), gradient norm
clipped at 1, peak lr 3e-4 with a warmup over 10 iterations and a cosine decay to a tenth) and 150 iterations; only the
temperature the rollouts are sampled at differs. Seed 0 is the lesson's own run, and T = 0.5 is the lesson's
temperature (the same runs as the last setting of ``capstone_settings.json``). About 2 minutes of CPU, spread over
``--workers`` processes (one torch thread each); the numbers do not depend on the number of workers.
"""

import argparse
import json
import time
from multiprocessing import Pool

import torch
from capstone_settings import LEVELS, SEEDS, loop_record, report, run, warm_start  # (same folder)

from minitepo import Tokenizer, make_task

BETAS, CLIP, SCHEDULE = (0.9, 0.95), 1.0, "cosine"
TEMPERATURES = {"T 1": 1.0, "T 0.7": 0.7, "T 0.5": 0.5}
WARM = {}          # the warm start, made once before the workers start (they inherit it)


def one_run(job):
    name, seed = job
    torch.set_num_threads(1)
    tokenizer, task = WARM["tokenizer"], WARM["task"]
    t0 = time.process_time()
    curve = run(WARM["model"], tokenizer, task, task.eval_set(), BETAS, CLIP, SCHEDULE, seed,
                temperature=TEMPERATURES[name])
    report(name, seed, curve, time.process_time() - t0)
    return name, seed, curve


def main(out_path, workers):
    torch.set_num_threads(1)
    WARM["tokenizer"], WARM["task"] = Tokenizer(), make_task("add", levels=LEVELS)
    WARM["model"] = warm_start(WARM["tokenizer"], WARM["task"])
    jobs = [(name, seed) for name in TEMPERATURES for seed in SEEDS]
    if workers > 1:
        with Pool(workers) as pool:
            results = pool.map(one_run, jobs, chunksize=1)
    else:
        results = [one_run(job) for job in jobs]
    data = {"held_out": len(WARM["task"].eval_set()), **loop_record(),
            "betas": list(BETAS), "clip": CLIP, "schedule": SCHEDULE, "temperatures": TEMPERATURES,
            "runs": {name: {} for name in TEMPERATURES}}
    for name, seed, curve in sorted(results, key=lambda r: r[1]):
        data["runs"][name][str(seed)] = curve
    with open(out_path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="lessons/data/capstone_temperature.json")
    parser.add_argument("--workers", type=int, default=1, help="processes, one torch thread each")
    args = parser.parse_args()
    main(args.out, args.workers)
