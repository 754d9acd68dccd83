"""Per-answer-position teacher-forced accuracy of a checkpoint on held-out add prompts, per level,
split by whether that answer digit receives a carry. Reads the task's own prompt format (the default
``add``, operands ones-first and zero-padded; runs of the original study used the schoolbook format). Diagnoses *which* digits a stalled model gets wrong.

    PYTHONPATH=. python3 research/warm-start/digit_errors.py runs/study/base/seed2/checkpoint.pt [aligned width]
"""
import sys
from collections import defaultdict

import torch

from minitepo.lab.checkpoint import load_model
from minitepo.sft import IGNORE, make_batch
from toy_tasks import make_task
from toy_tasks.base import read_operands

torch.set_num_threads(1)
if len(sys.argv) > 2:  # a run trained with warmstart_study.py --patch aligned=W: pass W
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
    from warmstart_study import install_aligned_positions
    install_aligned_positions(int(sys.argv[2]))
model, tok, _ = load_model(sys.argv[1])
model.eval()
task = make_task("add", levels=(1, 2, 3))
for level in (1, 2, 3):
    exs = [e for e in task.eval_set() if e.level == level]
    x, y = make_batch(exs, tok, "cpu")
    with torch.no_grad():
        pred = model(x).argmax(-1)
    right = defaultdict(list)  # (answer position, carry-in) -> hits
    for i, e in enumerate(exs):
        a, b = read_operands(e.prompt, "+", reverse=task.config.reverse_operands)
        cols = (y[i] != IGNORE).nonzero().flatten().tolist()  # answer digits, then EOS
        for k, pos in enumerate(cols):
            carry = ((a % 10 ** k) + (b % 10 ** k)) >= 10 ** k if k > 0 else False
            right[(k, carry)].append(int(pred[i, pos] == y[i, pos]))
    print(f"level {level}: " + "  ".join(f"pos{k}{'c' if c else ''} {sum(v) / len(v):.2f}(n={len(v)})"
                                         for (k, c), v in sorted(right.items())))
