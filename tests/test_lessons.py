"""The lessons run, follow the shared conventions, and make usable student copies.

* every ``lessons/NN_name.py`` (or ``NNb_name.py``) runs as a plain script in quick mode, from a working
  directory outside the repository, within a time budget;
* every lesson has the skeleton's headings in order, a saved figure, at least three top-level checks,
  at least one exercise, and a student copy that compiles and holds none of the solution lines;
* lessons (and the scripts that make their data) train with the core's loops (``train_supervised``, ``Trainer``),
  never with the lab's run loops ``train_sft`` / ``train_rl``, read from their sources;
* (opt-in: needs jupytext, nbclient and ipykernel, the ``lessons`` extra) one lesson converts to a
  notebook and executes cell by cell.

Lessons are discovered with a glob, so a new lesson is tested as soon as it lands. All tests here are
marked ``lessons``: ``pytest -m lessons`` runs only them, ``pytest -m "not lessons"`` skips them.
"""

import ast
import copy
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lesson_runner import run_script

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted(p for p in (ROOT / "lessons").glob("[0-9]*.py") if re.match(r"\d+[a-z]?_", p.name))
TIMEOUT_S = float(os.environ.get("MINITEPO_LESSON_TIMEOUT", "60"))  # generous: budget is 15 s; CI machines are noisy
HEADINGS = ("What you will learn", "Key equations", "Pseudocode", "Exercises", "Why these papers")
ALLOWED_IMPORTS = {"__future__", "minitepo", "torch", "numpy", "matplotlib", "math", "random", "os", "pathlib",
                   "json", "hypothesis", "copy", "inspect", "sys", "checks"}

pytestmark = pytest.mark.lessons
ids = [p.stem for p in LESSONS]


def load_make_student():
    spec = importlib.util.spec_from_file_location("make_student", ROOT / "lessons" / "make_student.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lesson_env() -> dict:
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    env.pop("MINITEPO_LESSONS", None)                                   # the tests run the quick setting
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def test_lessons_are_found():
    assert len(LESSONS) >= 3, f"expected lessons/NN_name.py files, found {[p.name for p in LESSONS]}"


@pytest.mark.parametrize("path", LESSONS, ids=ids)
def test_lesson_runs(path, tmp_path):
    """The lesson runs top to bottom as a plain script, from a working directory that is not the repository:
    every exercise's checks pass with its solution."""
    try:
        proc = run_script(path, cwd=tmp_path, env=lesson_env(), timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{path.name} took longer than {TIMEOUT_S:.0f} s (its quick-mode budget is 15 s)")
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"


@pytest.mark.parametrize("path", LESSONS, ids=ids)
def test_lesson_structure(path):
    """The conventions every lesson shares: format, skeleton, figure, checks, imports, no machine paths."""
    text = path.read_text()
    lines = text.splitlines()
    assert lines[0].strip() == "# %% [markdown]", "a lesson starts with a markdown cell (jupytext py:percent)"
    headings = [m.group(1).strip().lower() for m in (re.match(r"#\s*#{1,6}\s+(.*)", line) for line in lines) if m]
    found = []
    for want in HEADINGS:
        hits = [i for i, h in enumerate(headings) if h.startswith(want.lower())]
        assert hits, f"missing the heading '{want}'"
        found.append(hits[0])
    assert found == sorted(found), f"headings out of order; the skeleton is {' -> '.join(HEADINGS)}"
    assert ".savefig(" in text, "a lesson saves at least one figure"
    asserts = [line for line in lines if re.match(r"\s*(assert |cmp\(|check\()", line)]
    assert len(asserts) >= 3, f"need at least three checks (assert, cmp or check), found {len(asserts)}"
    bare = [f"line {node.lineno}" for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Assert) and node.msg is None]
    assert not bare, f"an assert without a message says nothing when it fails ({', '.join(bare[:5])})"
    machine_path = re.search(r"/(?:work|root|home|Users)/|C:\\", text)
    assert not machine_path, f"absolute machine path {machine_path and machine_path.group(0)!r} in the lesson"
    for node in ast.walk(ast.parse(text)):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        for name in names:
            assert name.split(".")[0] in ALLOWED_IMPORTS, f"import of {name!r}; lessons import only {ALLOWED_IMPORTS}"


LAB_LOOPS = {"train_sft", "train_rl"}           # the lab's run loops (run folders, checkpoints) around the core's
LAB_LOOP_MODULES = {"minitepo.lab.sft_run", "minitepo.lab.rl_run"}
DATA_SCRIPTS = sorted((ROOT / "lessons" / "data").glob("*.py"))


def lab_loop_uses(text: str) -> list[str]:
    """Where a source imports or calls the lab's run loops: ``from minitepo.lab import train_sft``, an import of
    their modules, or an attribute ``.train_sft`` / ``.train_rl``; one entry per hit."""
    hits = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("minitepo.lab"):
            module = node.module or ""
            hits += [f"line {node.lineno}: from {module} import {a.name}" for a in node.names
                     if a.name in LAB_LOOPS or module in LAB_LOOP_MODULES
                     or f"{module}.{a.name}" in LAB_LOOP_MODULES]
        elif isinstance(node, ast.Import):
            hits += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name in LAB_LOOP_MODULES]
        elif isinstance(node, ast.Attribute) and node.attr in LAB_LOOPS:
            hits.append(f"line {node.lineno}: .{node.attr}")
    return hits


def test_lab_loop_uses_finds_the_forms():
    """The reader below sees each way of reaching the lab's loops, and nothing else."""
    assert lab_loop_uses("from minitepo.lab import SFTConfig, train_sft\n") == [
        "line 1: from minitepo.lab import train_sft"]
    assert len(lab_loop_uses("from minitepo.lab.rl_run import RLRun\nimport minitepo.lab.sft_run\n")) == 2
    assert len(lab_loop_uses("from minitepo.lab import rl_run\nimport minitepo.lab\nminitepo.lab.train_rl(c)\n")) == 2
    assert lab_loop_uses("from minitepo import Trainer, train_supervised\nfrom minitepo.lab.stats import holm\n") == []


@pytest.mark.parametrize("path", LESSONS + DATA_SCRIPTS, ids=ids + [f"data/{p.stem}" for p in DATA_SCRIPTS])
def test_lessons_train_with_the_core_loops(path):
    """Lessons (and the scripts that make their data) train with the core's loops, ``train_supervised`` and
    ``Trainer``, on models kept in memory: none imports the lab's run loops ``train_sft`` or ``train_rl``
    (``minitepo.lab``), which add run folders and checkpoints a lesson does not read."""
    hits = lab_loop_uses(path.read_text())
    assert not hits, (f"{path.name} uses the lab's run loops ({'; '.join(hits)}): train with "
                      f"minitepo.train_supervised / minitepo.Trainer instead")


@pytest.mark.parametrize("path", LESSONS, ids=ids)
def test_student_copy(path, tmp_path):
    """make_student's copy compiles, keeps every marker, and holds none of the solution lines."""
    ms = load_make_student()
    text = path.read_text()
    blocks = ms.solution_blocks(text, path.name)
    assert blocks, "a lesson has at least one exercise (### BEGIN SOLUTION ... ### END SOLUTION)"
    (copy,) = ms.write_student_copies(tmp_path, [path])
    student = copy.read_text()
    compile(student, str(copy), "exec")
    lines = text.splitlines()
    inside = {i for b, e in blocks for i in range(b + 1, e)}
    outside = {lines[i].strip() for i in range(len(lines)) if i not in inside}
    secret = {lines[i].strip() for i in inside if lines[i].strip()} - outside
    leaked = secret & {line.strip() for line in student.splitlines()}
    assert not leaked, f"solution lines left in the student copy: {sorted(leaked)[:3]}"
    assert len(ms.solution_blocks(student)) == len(blocks)
    assert student.count(ms.STUB) == len(blocks)


def test_make_student_cli_and_errors(tmp_path):
    out = tmp_path / "student"
    proc = subprocess.run([sys.executable, "lessons/make_student.py", "--out", str(out)], cwd=ROOT,
                          env=lesson_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.glob("*.py")) == [p.name for p in LESSONS]
    ms = load_make_student()
    body = "def f():\n    ### BEGIN SOLUTION\n    x = 1\n\n    return x\n    ### END SOLUTION\n"
    assert ms.student_text(body) == ("def f():\n    ### BEGIN SOLUTION\n    raise NotImplementedError(\"exercise\")\n"
                                     "    ### END SOLUTION\n")
    with pytest.raises(ValueError, match="never closed"):
        ms.student_text("### BEGIN SOLUTION\nx = 1\n")
    with pytest.raises(ValueError, match="without"):
        ms.student_text("x = 1\n### END SOLUTION\n")


def test_readme_lists_every_lesson():
    readme = (ROOT / "lessons" / "README.md").read_text()
    for path in LESSONS:
        assert path.name in readme, f"lessons/README.md does not list {path.name}"


def execute_as_notebook(path: Path, tmp_path: Path, monkeypatch, *, each_cell_twice: bool = False):
    """``path`` converted with jupytext and executed under nbclient in ``tmp_path`` (outside lessons/, so the checks
    import falls back); with ``each_cell_twice`` every code cell runs twice in a row, as a learner re-running a
    cell does. Returns the executed notebook; fails on any error output."""
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = jupytext.read(path, fmt="py:percent")
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= 3 and sum(c.cell_type == "code" for c in nb.cells) >= 3
    if each_cell_twice:
        nb.cells = [cell for c in nb.cells for cell in ([c, copy.deepcopy(c)] if c.cell_type == "code" else [c])]
    for key, value in lesson_env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("MINITEPO_LESSONS", raising=False)
    client = nbclient.NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, f"{path.name} as a notebook: {errors[0].get('ename')}: {errors[0].get('evalue')}" if errors else ""
    return nb


def test_lesson_as_notebook(tmp_path, monkeypatch):
    """Opt-in (the ``lessons`` extra): a lesson converts with jupytext and runs as a notebook under nbclient."""
    path = ROOT / "lessons" / "03_aggregation.py"
    if not path.exists():
        path = LESSONS[0]
    nb = execute_as_notebook(path, tmp_path, monkeypatch)
    import jupytext
    jupytext.write(nb, tmp_path / (path.stem + ".ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", LESSONS, ids=ids)
def test_every_lesson_as_notebook_each_cell_twice(path, tmp_path, monkeypatch):
    """Every lesson runs as a notebook (the ``lessons`` extra) with each code cell run twice in a row, as a learner
    re-running a cell does: a cell that trains must start again from its own starting model, and a check must not
    depend on having run only once. ``-m slow`` (about 2x the lessons' own time)."""
    execute_as_notebook(path, tmp_path, monkeypatch, each_cell_twice=True)
