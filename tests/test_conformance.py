"""docs/conformance.md, the table of TRL's and verl's losses against minitepo's objectives, is what the module makes:
its rows are the module's pairs, its verdicts hold when recomputed, and (slow) a rerun writes it byte for byte."""

import re
from pathlib import Path

import pytest

pytest.importorskip("verl")
pytest.importorskip("trl")

from minitepo.testing import conformance  # noqa: E402

PAGE = Path(__file__).resolve().parents[1] / "docs" / "conformance.md"


def table_rows() -> list[list[str]]:
    rows = [line.split(" | ") for line in PAGE.read_text().splitlines() if line.startswith("| ") and "---" not in line]
    return [[cell.strip("| ") for cell in row] for row in rows[1:]]


def test_the_page_has_one_row_per_pair_in_order_and_names_the_installed_versions():
    assert [row[0] for row in table_rows()] == [p.peer for p in conformance.PAIRS]
    assert conformance.versions() in PAGE.read_text(), "regenerate the page after a version bump"


@pytest.mark.parametrize("label", ["verl vanilla, token-mean",
                                   "verl vanilla, seq-mean-token-sum-norm (default scale: the padded width)"])
def test_a_rows_whole_step_verdict_holds_when_recomputed(label):
    """One row the page calls equal and one it calls different, recomputed on fewer batches: the verdict stands."""
    pair = next(p for p in conformance.PAIRS if p.peer == label)
    found = conformance.compare(pair, pair.make(), examples=8)
    page_says = next(row for row in table_rows() if row[0] == label)[3]
    assert re.sub(r"\*", "", page_says).startswith("equal" if found.get("whole", (0.0,))[0] <= conformance.TOL
                                                   else "differ"), (label, page_says, found.get("whole"))


@pytest.mark.slow
def test_the_page_regenerates_byte_for_byte():
    assert conformance.main(["--check", str(PAGE)]) == 0
