"""One RL iteration stays short to read: the files, executed lines and file changes in reading order of one
``Trainer.iterate()`` at the core's defaults, traced as a learner would follow it (each function counted where it is
first entered; the project's own files only).

Issue 43's target is at most 10 files, 400 lines and 20 file changes. Measured: 10 files, 565 lines, 29 changes when
this test was written (the plain scoring path, no checks on the trainer's path, the record in rl.py; dynamic sampling on
at the core's defaults, as in ``minitepo rl``); then 505 lines and 26 changes (no input checks on trainer-made
rewards and prompts, the filter and one round's rollout read in place, a single micro-batch's statistics taken as
they are). The bounds below pin that measurement, so the reading path can only get shorter; lower them as it does.

Why the target is not met (measured 2026-12-07): with the KV cache off the default sampler (sampling 6-14x slower),
the same trace reads 473 lines and still 26 changes. 400 lines needs, besides that, most of the record (about 45
lines that the lab, the lessons and these tests read) or the task's prompt and verifier code (66 lines; 10 of the 26
changes go into, out of or between toy_tasks/base.py and add.py); that trade is the issue's to decide, not this test's.
"""

import collections
import random
import sys
from dataclasses import replace
from pathlib import Path

import torch

from minitepo import GPT, ModelConfig, Tokenizer, Trainer, TrainerConfig, make_task

ROOT = str(Path(__file__).resolve().parents[1]) + "/"
MAX_FILES, MAX_LINES, MAX_SWITCHES = 10, 505, 26


class CoinTask:
    """The task, with a coin-flip verdict so that groups are mixed and every part of the iteration runs."""

    def __init__(self, task):
        self.task, self.rng = task, random.Random(0)

    def __getattr__(self, name):
        return getattr(self.task, name)

    def reward(self, prompt, text):
        _, info = self.task.reward(prompt, text)
        right = self.rng.random() < 0.5
        return float(right), {**info, "correct": right}


def trace_one_iteration():
    torch.manual_seed(0)
    tokenizer = Tokenizer()
    config = replace(TrainerConfig(), prompts=4, group_size=4, iterations=1)
    trainer = Trainer(config, GPT(ModelConfig(vocab_size=tokenizer.vocab_size)), tokenizer,
                      CoinTask(make_task("add", levels=(3,))))
    lines, order, seen = collections.defaultdict(set), [], set()

    def local(frame, event, arg):
        if event == "line":
            lines[frame.f_code.co_filename].add(frame.f_lineno)
        return local

    def tracer(frame, event, arg):
        path = frame.f_code.co_filename
        if not path.startswith(ROOT) or "/tests/" in path:
            return None
        key = (path, frame.f_code.co_name, frame.f_code.co_firstlineno)
        if key not in seen:
            seen.add(key)
            order.append(path)
        lines[path].add(frame.f_lineno)
        return local

    sys.settrace(tracer)
    try:
        trainer.iterate()
    finally:
        sys.settrace(None)
    switches = sum(a != b for a, b in zip(order, order[1:]))
    return {p[len(ROOT):]: len(n) for p, n in lines.items()}, switches


def test_one_iteration_reads_in_few_files_few_lines_and_few_file_changes():
    per_file, switches = trace_one_iteration()
    total = sum(per_file.values())
    table = ", ".join(f"{p} {n}" for p, n in sorted(per_file.items(), key=lambda kv: -kv[1]))
    assert len(per_file) <= MAX_FILES and total <= MAX_LINES and switches <= MAX_SWITCHES, \
        f"one iteration: {len(per_file)} files, {total} lines, {switches} file changes ({table})"
    assert "minitepo/losses/checks.py" not in per_file or per_file["minitepo/losses/checks.py"] <= 15, \
        "the trainer's path runs the objectives' input checks again"
    assert "minitepo/shared_prompt.py" not in per_file, "the default path takes the speed optimisation"
