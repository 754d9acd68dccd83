"""The executed notebooks in lessons/notebooks/ are the lessons as they are: the same cells as each ``.py``, every
code cell run, no error output, a sensible size (``python lessons/make_notebooks.py`` rewrites them)."""

import sys
from pathlib import Path

import pytest

LESSONS = Path(__file__).resolve().parents[1] / "lessons"
sys.path.insert(0, str(LESSONS))
from make_notebooks import NOTEBOOKS, notebook_path, problems  # noqa: E402
from make_student import lesson_files  # noqa: E402

pytest.importorskip("jupytext")
pytest.importorskip("nbformat")


@pytest.mark.parametrize("lesson", lesson_files(), ids=lambda p: p.stem)
def test_notebook_matches_its_lesson(lesson):
    assert not problems(lesson), "\n".join(problems(lesson))


def test_no_notebook_without_a_lesson():
    lessons = {notebook_path(lesson).name for lesson in lesson_files()}
    strays = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb") if p.name not in lessons)
    assert not strays, f"notebooks with no lesson of their name: {strays}"


def test_a_stale_notebook_is_caught(tmp_path, monkeypatch):
    """Change one character of a lesson's code: its notebook no longer matches and the check says which cell."""
    import make_notebooks
    lesson = lesson_files()[0]
    text = lesson.read_text()
    code_line = next(line for line in text.splitlines() if line.startswith("import "))
    copy = tmp_path / lesson.name
    copy.write_text(text.replace(code_line, code_line + "  # edited", 1))
    monkeypatch.setattr(make_notebooks, "notebook_path", lambda _: notebook_path(lesson))
    found = make_notebooks.problems(copy)
    assert any("differ" in issue for issue in found), found
