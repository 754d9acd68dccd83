"""tests/lesson_runner.py runs a script as ``python path.py`` would: status, output, traceback, working directory,
environment, ``__name__``, and a time limit."""

import os
import subprocess
import sys

import pytest

from lesson_runner import run_script


def script(tmp_path, body: str):
    path = tmp_path / "script.py"
    path.write_text(body)
    return path


def test_a_script_runs_as_main_in_its_folder_with_its_environment_and_status(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 41\n")
    work = tmp_path / "work"
    work.mkdir()
    path = script(tmp_path, "import os, sys\nfrom helper import VALUE\n"
                            "print(__name__, VALUE + 1, os.getcwd(), os.environ.get('ONLY_HERE'))\n"
                            "print('to stderr', file=sys.stderr)\nsys.exit(3)\n")
    done = run_script(path, cwd=work, env={**os.environ, "ONLY_HERE": "yes"}, timeout=30)
    assert done.returncode == 3
    assert done.stdout.split() == ["__main__", "42", str(work), "yes"] and done.stderr == "to stderr\n"


def test_a_raising_script_prints_its_traceback_and_exits_1_as_python_does(tmp_path):
    path = script(tmp_path, "class CheckFailed(AssertionError):\n    pass\nraise CheckFailed('exercise 2: loss')\n")
    mine = run_script(path, cwd=tmp_path, env=dict(os.environ), timeout=30)
    python = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True)
    assert mine.returncode == python.returncode == 1
    assert mine.stderr.splitlines()[-1] == python.stderr.splitlines()[-1] == "CheckFailed: exercise 2: loss"


def test_a_script_past_its_time_limit_is_stopped_and_reported(tmp_path):
    path = script(tmp_path, "import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    with pytest.raises(subprocess.TimeoutExpired) as stopped:
        run_script(path, cwd=tmp_path, env=dict(os.environ), timeout=1)
    assert stopped.value.output == "started\n"
    assert run_script(script(tmp_path, "print('next')\n"), cwd=tmp_path, env=dict(os.environ), timeout=30).stdout \
        == "next\n"
