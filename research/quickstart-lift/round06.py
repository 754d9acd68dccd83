"""Issue 29, sixth round: groups of 4 at the quickstart's cost.

The protocol, the arms, the selection rule and the seeds are in ``research/quickstart-lift/README.md`` ("Sixth round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 research/quickstart-lift/round06.py run    --seeds 100-119 --jobs 2 [--until HH:MM]
    python3 research/quickstart-lift/round06.py report --out research/quickstart-lift/data/round6.json
    python3 research/quickstart-lift/round06.py doc [--check]     # the page's round-6 blocks, from the JSON records

As in the third to fifth rounds, every arm starts from the first round's warm starts (``runs/lift/warm``) and
``base``'s rows are the earlier runs of today's quickstart. ``g4``'s rows are the fifth round's (its runs are not
repeated); the new arms go to ``runs/lift6/``. The run, the report and the rule are the third round's
(``quickstart_lift3``), the description and the sign test the fifth round's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402  (the first round: target, page helpers)
import round03 as round3  # noqa: E402  (the run, the report and the rule)
import round04 as round4  # noqa: E402  (the page's blocks)
import round05 as round5  # noqa: E402  (the description, the table with the sign test, the confirmation)


RUNS = ROOT / "runs" / "lift6"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "round6.json"
CONFIRM = ROOT / "research" / "quickstart-lift" / "data" / "confirm-round6.json"   # the confirmation of this round's pick (seeds 0-19)
TARGET = round1.TARGET
G4 = {"prompts": 64, "group_size": 4}
ARMS = {
    # name: RLConfig overrides on the quickstart's RL stage (from the same warm start)
    "g4": G4,                                             # the fifth round's rows (1.27x base's responses)
    "g4-i200": G4 | {"iterations": 200},                  # the same, over 200 rollouts instead of 250
    "g4-r2": G4 | {"max_resample_rounds": 2},             # the same, with at most 2 extra sampling rounds (not 3)
}
CONFIRMED = "64 prompts x 4 answers with at most 2 extra sampling rounds"   # the rule's pick, g4-r2


def row_path(arm: str, seed: int) -> Path:
    if arm in ("base", "g4"):
        return round5.row_path(arm, seed)
    return RUNS / arm / f"seed{seed}.json"


def doc(check: bool) -> int:
    """The page's blocks of this round: the study and its confirmation."""
    return round4.write_round(6, round5.markdown(json.loads(SUMMARY.read_text())), CONFIRM,
                              lambda first, new, idle: round5.confirmation_block(first, new, idle, CONFIRMED),
                              "research/quickstart-lift/round06.py", check)


def main(argv=None) -> int:
    return round3.cli(argv, __doc__.splitlines()[0], ARMS, row_path, doc, round5.mechanism, __file__)


if __name__ == "__main__":
    sys.exit(main())
