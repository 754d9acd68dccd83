"""Write every lesson as an executed notebook, with its printed output and figures, for reading on GitHub.

The lessons are jupytext *py:percent* files: GitHub shows them as code, with no output and no figure. This script
converts each with jupytext and runs it under nbclient (the quick setting, one torch thread, in a scratch working
directory, so the lesson's own figure files go nowhere), then writes ``lessons/notebooks/<lesson>.ipynb``. The cells
are the ``.py`` file's, unchanged: edit the ``.py``, never the notebook, and run this again.
``tests/test_notebooks.py`` fails when a notebook's cells no longer match its lesson (``--check`` says the same here).

    python lessons/make_notebooks.py              # every lesson (a few minutes of CPU)
    python lessons/make_notebooks.py 03 06        # only the lessons whose names start so
    python lessons/make_notebooks.py --check      # exit 1 if a notebook is missing, stale or unexecuted

Needs the ``lessons`` extra (jupytext, nbclient, ipykernel), which ``setup.sh`` installs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

LESSONS = Path(__file__).resolve().parent
ROOT = LESSONS.parent
NOTEBOOKS = LESSONS / "notebooks"
CELL_TIMEOUT_S = 600
MAX_NOTEBOOK_BYTES = 2_000_000
"""A notebook larger than this holds an output it should not (a huge print, a figure at print resolution)."""

sys.path.insert(0, str(LESSONS))
from make_student import lesson_files  # noqa: E402


def notebook_path(lesson: Path) -> Path:
    return NOTEBOOKS / (lesson.stem + ".ipynb")


def cells_of(lesson: Path) -> list[tuple[str, str]]:
    """(cell type, source) of every cell of the lesson, as jupytext reads it."""
    import jupytext
    return [(c.cell_type, c.source) for c in jupytext.read(lesson, fmt="py:percent").cells]


def problems(lesson: Path) -> list[str]:
    """What is wrong with the lesson's notebook: missing, cells that differ from the ``.py``, a code cell not run,
    an error output, too large. Empty when it is in sync."""
    import nbformat
    path = notebook_path(lesson)
    if not path.is_file():
        return [f"{path.relative_to(ROOT)} is missing: run python lessons/make_notebooks.py {lesson.stem[:3]}"]
    nb = nbformat.read(path, as_version=4)
    found, expected = [(c.cell_type, c.source) for c in nb.cells], cells_of(lesson)
    issues = []
    if found != expected:
        first = next((i for i, (a, b) in enumerate(zip(found, expected)) if a != b), min(len(found), len(expected)))
        issues.append(f"{path.name}: its cells differ from {lesson.name} from cell {first} on "
                      f"({len(found)} cells, the lesson has {len(expected)}): rerun make_notebooks.py")
    code = [c for c in nb.cells if c.cell_type == "code"]
    if any(c.get("execution_count") is None for c in code if c.source.strip()):
        issues.append(f"{path.name}: a code cell was never run")
    if any(o.get("output_type") == "error" for c in code for o in c.get("outputs", [])):
        issues.append(f"{path.name}: a cell's output is an error")
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        issues.append(f"{path.name}: {path.stat().st_size:,} bytes, over the {MAX_NOTEBOOK_BYTES:,} allowed")
    return issues


def execute(lesson: Path) -> None:
    """Run ``lesson`` as a notebook and write it to ``lessons/notebooks/``."""
    import jupytext
    import nbclient
    import nbformat
    nb = jupytext.read(lesson, fmt="py:percent")
    env = {"OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    saved = {k: os.environ.get(k) for k in (*env, "MINITEPO_LESSONS", "MPLBACKEND")}
    os.environ.update(env)
    os.environ.pop("MINITEPO_LESSONS", None)   # the quick setting, the one the tests and the timing table run
    os.environ.pop("MPLBACKEND", None)         # the kernel's inline backend: figures go into the notebook
    try:
        with tempfile.TemporaryDirectory() as scratch:
            nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", record_timing=False,
                                    resources={"metadata": {"path": scratch}}).execute()
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NOTEBOOKS.mkdir(exist_ok=True)
    nbformat.write(nb, notebook_path(lesson))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("only", nargs="*", help="lesson name prefixes, e.g. 03 10 (default: every lesson)")
    p.add_argument("--check", action="store_true", help="only check that every notebook is in sync; exit 1 if not")
    args = p.parse_args(argv)
    lessons = [lesson for lesson in lesson_files() if not args.only or lesson.stem.startswith(tuple(args.only))]
    if not lessons:
        p.error(f"no lesson starts with {', '.join(args.only)}; the lessons are "
                f"{', '.join(lesson.stem for lesson in lesson_files())}")
    if args.check:
        issues = [issue for lesson in lessons for issue in problems(lesson)]
        print("\n".join(issues) or f"{len(lessons)} notebooks in sync with their lessons")
        return 1 if issues else 0
    for lesson in lessons:
        execute(lesson)
        size = notebook_path(lesson).stat().st_size
        print(f"{notebook_path(lesson).relative_to(ROOT)}  {size / 1e3:,.0f} kB")
        if issues := problems(lesson):
            print("\n".join(issues))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
