"""Lesson 10's own RL loop lifts held-out greedy accuracy, on its default seed and on two more.

The lesson trains with the learner's loss and optimizer steps (their solutions), then checks that greedy accuracy
on the 20 held-out prompts rose by at least 10 points. Here it runs as a script, as a learner runs it, with
``MINITEPO_CAPSTONE_SEED`` set to 0 (its default), 1 and 2; each run must pass every check, and its printed lift is
read back and asserted again. ``-m slow``: about 25 s of CPU per seed.
"""

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "lessons" / "10_capstone_tepo.py"
TIMEOUT_S = float(os.environ.get("MINITEPO_LESSON_TIMEOUT", "60")) * 3

pytestmark = [pytest.mark.slow, pytest.mark.lessons]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_capstone_loop_lifts_held_out_greedy_accuracy(seed, tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1", MINITEPO_CAPSTONE_SEED=str(seed))
    env.pop("MINITEPO_LESSONS", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, str(LESSON)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert proc.returncode == 0, f"seed {seed}: the lesson failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    found = re.search(rf"seed {seed}: held-out greedy accuracy (\d\.\d+) -> (\d\.\d+)", proc.stdout)
    assert found, f"seed {seed}: the lesson did not print its held-out greedy accuracy:\n{proc.stdout[-2000:]}"
    start, end = float(found.group(1)), float(found.group(2))
    print(f"seed {seed}: held-out greedy accuracy {start:.2f} -> {end:.2f}, lesson {cpu:.1f} s of CPU")
    assert end - start >= 0.10 - 1e-9, f"seed {seed}: held-out greedy accuracy {start:.2f} -> {end:.2f}, lift < 0.10"
