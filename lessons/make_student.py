"""Write student copies of the lessons: every exercise's solution replaced by ``raise NotImplementedError``.

A lesson marks each solution with a line ``### BEGIN SOLUTION`` and a line ``### END SOLUTION`` (the
lesson conventions put them inside a function body). Everything strictly between the two marker lines
is replaced by one line ``raise NotImplementedError("exercise")`` at the indentation of the first
solution line; the markers stay, so a student sees where to write. The checks after each exercise are
untouched: a student copy runs until the first unsolved exercise (the lesson's named checks then say
"exercise N not done yet"), and passes once every body is filled in.

A lesson may end with a ``## Solutions`` markdown cell holding the answers to its "predict first" and
"work it out by hand" questions; a student copy keeps only that cell's heading and drops the rest of the file
from there on.

    python lessons/make_student.py                       # -> runs/lessons/student/NN_name.py
    python lessons/make_student.py --out some/folder     # elsewhere
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = 'raise NotImplementedError("exercise")'
SOLUTIONS = "# ## Solutions"
SOLUTIONS_STUB = ("# %% [markdown]\n# ## Solutions\n#\n# The answers to this lesson's questions are in the lesson "
                  "itself (lessons/), not in this student copy.\n")
LESSON_NAME = re.compile(r"\d+[a-z]?_")
LESSONS = Path(__file__).resolve().parent
DEFAULT_OUT = Path("runs/lessons/student")


def lesson_files(folder: Path = LESSONS) -> list[Path]:
    """The lessons in ``folder``: files named like ``01_prompt_to_rollout.py`` or ``01b_policy_gradient.py``."""
    return sorted(p for p in Path(folder).glob("[0-9]*.py") if LESSON_NAME.match(p.name))


def solution_blocks(text: str, name: str = "lesson") -> list[tuple[int, int]]:
    """(begin, end) line indices of every marker pair; a ValueError names a marker out of place."""
    blocks, begin = [], None
    for i, line in enumerate(text.splitlines()):
        if line.strip() == BEGIN:
            if begin is not None:
                raise ValueError(f"{name}:{i + 1}: '{BEGIN}' inside another solution (opened at line {begin + 1})")
            begin = i
        elif line.strip() == END:
            if begin is None:
                raise ValueError(f"{name}:{i + 1}: '{END}' without a '{BEGIN}' before it")
            blocks.append((begin, i))
            begin = None
    if begin is not None:
        raise ValueError(f"{name}:{begin + 1}: '{BEGIN}' is never closed by '{END}'")
    return blocks


def without_solutions(text: str) -> str:
    """``text`` cut at the markdown cell whose heading is ``## Solutions`` (kept as a one-line stub)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() == SOLUTIONS:
            start = max(j for j in range(i + 1) if lines[j].startswith("# %%"))
            return "".join(lines[:start]) + SOLUTIONS_STUB
    return text


def student_text(text: str, name: str = "lesson") -> str:
    """``text`` with the lines strictly between each pair of markers replaced by one ``raise`` line, and the
    solutions section removed."""
    text = without_solutions(text)
    lines = text.splitlines(keepends=True)
    out, last = [], 0
    for begin, end in solution_blocks(text, name):
        body = [line for line in lines[begin + 1:end] if line.strip()]
        indent_of = body[0] if body else lines[begin]
        indent = indent_of[:len(indent_of) - len(indent_of.lstrip())]
        out += lines[last:begin + 1] + [f"{indent}{STUB}\n"]
        last = end
    out += lines[last:]
    return "".join(out)


def write_student_copies(out: Path | str = DEFAULT_OUT, lessons: list[Path] | None = None) -> list[Path]:
    """Write a student copy of each lesson into ``out``; returns the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in lesson_files() if lessons is None else lessons:
        target = out / Path(path).name
        target.write_text(student_text(Path(path).read_text(), Path(path).name))
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write student copies of the lessons, solutions removed.")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help=f"output folder (default: {DEFAULT_OUT})")
    parser.add_argument("lessons", nargs="*", help="lesson files (default: every lessons/[0-9]*.py)")
    args = parser.parse_args(argv)
    written = write_student_copies(args.out, [Path(p) for p in args.lessons] or None)
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
