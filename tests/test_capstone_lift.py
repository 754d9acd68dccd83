"""Lesson 10's own RL loop lifts held-out greedy accuracy, on its default seed and on two more.

The lesson trains with the learner's loss and optimizer steps (their solutions), then checks that greedy accuracy
on the 200 held-out prompts rose by at least 10 points with the lower end of its paired 95% interval above 0. Here it
runs as a script, as a learner runs it, with ``MINITEPO_CAPSTONE_SEED`` set to 0 (its default), 1 and 2; each run must
pass every check, and its printed lift and interval are read back and asserted again. The settings were chosen on
seeds 10-12 before these three ran (lessons/data/README.md, "Capstone: choosing the loop's settings").
``-m slow``: about 25 s of CPU per seed.
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
    found = re.search(rf"seed {seed}: held-out greedy accuracy (\d\.\d+) -> (\d\.\d+), lift ([+-]\d\.\d+), "
                      rf"95% interval \[([+-]\d\.\d+), ([+-]\d\.\d+)\]", proc.stdout)
    assert found, f"seed {seed}: the lesson did not print its held-out greedy accuracy:\n{proc.stdout[-2000:]}"
    start, end, lift, low, high = (float(x) for x in found.groups())
    print(f"seed {seed}: held-out greedy accuracy {start:.3f} -> {end:.3f}, lift {lift:+.3f} [{low:+.3f}, {high:+.3f}], "
          f"lesson {cpu:.1f} s of CPU")
    assert abs(end - start - lift) < 2e-3, f"seed {seed}: the printed lift {lift} is not {end:.3f} - {start:.3f}"
    assert lift >= 0.10 - 1e-9, f"seed {seed}: held-out greedy accuracy {start:.3f} -> {end:.3f}, lift < 0.10"
    assert low > 0, f"seed {seed}: the lift's 95% interval [{low:+.3f}, {high:+.3f}] does not lie above 0"
