"""Run a lesson script as ``python path.py`` would, without paying for ``import torch`` on every run.

The lesson tests run about 27 scripts (each lesson, and a planted mistake per lesson); a fresh Python process spends
about 3 of a lesson's 3-9 seconds importing torch, matplotlib and minitepo. Here one *zygote* process imports them
once and then forks one child per script: the child starts with those modules loaded and nothing else done (no
tensor op has run in the zygote, its random generators are a fresh process's, it uses one thread), runs the script
as ``__main__`` from the given working directory, with the given environment, and exits with the script's status;
its stdout and stderr go to files. A script that raises prints its traceback to stderr and exits 1, as Python does.
``run_script`` returns a ``subprocess.CompletedProcess``, so a test reads it as it read ``subprocess.run``'s.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ZYGOTE = r"""
import json, os, runpy, sys, traceback
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot, numpy, torch
import minitepo
torch.set_num_threads(1)
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:                                             # the child: one fresh run of one script
        for stream, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), stream)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        sys.stdin = open(os.devnull)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = [request["path"]]
        sys.path[0] = os.path.dirname(request["path"])
        status = 0
        try:
            runpy.run_path(request["path"], run_name="__main__")
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    print(json.dumps({"pid": pid}), flush=True)
    _, wait_status = os.waitpid(pid, 0)
    print(json.dumps({"status": os.waitstatus_to_exitcode(wait_status)}), flush=True)
"""

_zygote: subprocess.Popen | None = None
_lock = threading.Lock()


def _start() -> subprocess.Popen:
    global _zygote
    if _zygote is None or _zygote.poll() is not None:
        env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        _zygote = subprocess.Popen([sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True, env=env, cwd=ROOT)
        atexit.register(_zygote.kill)
    return _zygote


def run_script(path: Path, *, cwd: Path, env: dict, timeout: float) -> subprocess.CompletedProcess:
    """``path`` run as a script in ``cwd`` with environment ``env``; raises ``subprocess.TimeoutExpired`` (after
    killing the run) when it takes longer than ``timeout`` seconds."""
    with _lock, tempfile.TemporaryDirectory() as tmp:
        zygote = _start()
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        zygote.stdin.write(json.dumps({"path": str(path), "cwd": str(cwd), "env": env, "stdout": str(out),
                                       "stderr": str(err)}) + "\n")
        zygote.stdin.flush()
        pid = json.loads(zygote.stdout.readline())["pid"]
        fired = threading.Event()

        def kill():
            fired.set()
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:   # it ended just now
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            status = json.loads(zygote.stdout.readline())["status"]
        finally:
            timer.cancel()
        stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
        if fired.is_set():
            raise subprocess.TimeoutExpired([str(path)], timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess([str(path)], status, stdout, stderr)
