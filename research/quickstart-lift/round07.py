"""Issue 29, seventh round: a larger step for the seeds that are still rising when the run ends.

The protocol, the arms, the selection rule and the seeds are in ``research/quickstart-lift/README.md`` ("Seventh round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 research/quickstart-lift/round07.py run    --seeds 100-119 --jobs 2 [--until HH:MM]
    python3 research/quickstart-lift/round07.py report --out research/quickstart-lift/data/round7.json
    python3 research/quickstart-lift/round07.py doc [--check]     # the page's round-7 blocks, from the JSON records

As in the third to sixth rounds, every arm starts from the first round's warm starts (``runs/lift/warm``).
``base`` is today's quickstart, the sixth round's pick ``g4-r2`` (its confirmation held), and its rows are that
round's runs of it. The new arms go to ``runs/lift7/``. The run, the report and the rule are the third round's
(``quickstart_lift3``), the description and the sign test the fifth round's. The rule kept ``base``, so this round
has no confirmation (its protocol's would have been the fourth round's rule against the sixth round's confirmation).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402  (the first round: target, the settings as they ran)
import round03 as round3  # noqa: E402  (the run, the report and the rule)
import round05 as round5  # noqa: E402  (the description, the table with the sign test)
import round06 as round6  # noqa: E402  (the sixth round: its pick, this round's base, and its rows)


RUNS = ROOT / "runs" / "lift7"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "round7.json"

BASE = round6.ARMS["g4-r2"]
"""Today's quickstart's RL settings beyond ``round1.AS_RAN`` (the sixth round's pick): this round's ``base``."""
ARMS = {
    # name: RLConfig overrides on the quickstart's RL stage (from the same warm start), each one change from base
    "lr8e-4": BASE | {"lr": 8e-4},              # peak learning rate 8e-4 instead of 6e-4, the same cosine to a tenth
    "floor0.3": BASE | {"min_lr_frac": 0.3},    # the cosine decays to 0.3x the peak instead of 0.1x
}


def row_path(arm: str, seed: int) -> Path:
    if arm == "base":
        return round6.row_path("g4-r2", seed)
    return RUNS / arm / f"seed{seed}.json"


def doc(check: bool) -> int:
    """The page's block of this round: the study (nothing was confirmed)."""
    page = round1.replace_block(round1.PAGE.read_text(), "round7", round5.markdown(json.loads(SUMMARY.read_text())))
    return round1.write_page(page, check, "research/quickstart-lift/round07.py")


def main(argv=None) -> int:
    return round3.cli(argv, __doc__.splitlines()[0], ARMS, row_path, doc, round5.mechanism, __file__)


if __name__ == "__main__":
    sys.exit(main())
