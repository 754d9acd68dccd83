"""Lesson 6's one-minute ablation (the mask as shipped against beta_M = 0, run by the learner with the core's
``Trainer``) runs, checks what its text says, and draws its figure.

The ablation is off in the quick setting that ``tests/test_lessons.py`` runs (the lessons tier is at its time
budget); this test switches it on with ``MINITEPO_ABLATION=1``. ``-m slow``: about 40 s of CPU for the ablation on
top of the lesson's own time.
"""

import os
from pathlib import Path

import pytest

from lesson_runner import run_script

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "lessons" / "06_tepo.py"

pytestmark = [pytest.mark.lessons, pytest.mark.slow]


def test_lesson_6_ablation_runs(tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1", MINITEPO_ABLATION="1")
    env.pop("MINITEPO_LESSONS", None)                      # the quick setting, with only the ablation switched on
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    proc = run_script(LESSON, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, f"lesson 6 with its ablation failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    out = proc.stdout
    assert "the one-minute ablation is off" not in out, "MINITEPO_ABLATION=1 did not switch the ablation on"
    for line in ("your run: B1 - B2 = ", "experiment B: B1 - B2 = ", "verdict: "):
        assert line in out, f"the ablation did not print {line!r}"
    checks = [line for line in out.splitlines() if line.startswith("ok   your run:")]
    assert len(checks) == 3, f"expected the ablation's 3 'your run' checks to pass, found {checks}"
    assert (tmp_path / "runs" / "lessons" / "06_mask_ablation_yours.png").is_file(), "the ablation's figure"
