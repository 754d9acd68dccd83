"""Issue 29, fifth round: do more prompts per iteration lift every seed?

The protocol, the arms, the selection rule and the seeds are in ``research/quickstart-lift/README.md`` ("Fifth round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 research/quickstart-lift/round05.py run    --seeds 100-119 --jobs 2 [--until HH:MM]
    python3 research/quickstart-lift/round05.py report --out research/quickstart-lift/data/round5.json
    python3 research/quickstart-lift/round05.py doc [--check]     # the page's round-5 blocks, from the JSON records

As in the third and fourth rounds, every arm starts from the first round's warm starts (``runs/lift/warm``) and
``base``'s rows are the earlier runs of today's quickstart; the new arms go to ``runs/lift5/``. The run, the report
and the rule are the third round's (``quickstart_lift3``), given this round's arms.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402  (the first round: target, page helpers)
import round03 as round3  # noqa: E402  (the run, the report and the rule)
import round04 as round4  # noqa: E402  (the table, the confirmation and its time rule)


RUNS = ROOT / "runs" / "lift5"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "round5.json"
CONFIRM = ROOT / "research" / "quickstart-lift" / "data" / "confirm-round5.json"   # the confirmation of this round's pick (seeds 0-19)
TARGET = round1.TARGET
ARMS = {
    # name: RLConfig overrides on the quickstart's RL stage (from the same warm start). Both train 64 prompts per
    # iteration instead of 32, with the same responses and the same 1,000 optimizer steps of 64 rows over the run.
    "g4": {"prompts": 64, "group_size": 4},                 # the same 256 responses per sampling round, groups of 4
    "p64": {"prompts": 64, "minibatches": 8, "iterations": 125, "eval_every": 5},   # 512 per round, half the rounds
}
CONFIRMED = "64 prompts x 8 answers with 8 optimizer steps per rollout"   # the rule's pick, p64


def row_path(arm: str, seed: int) -> Path:
    return round3.row_path(arm, seed) if arm == "base" else RUNS / arm / f"seed{seed}.json"


def mechanism(folder: Path) -> dict:
    """A run's sampled responses (the cost the rule reads) and, descriptive, its mean sampled entropy over the same
    share of the run as the earlier rounds' iterations 51-100 of 250 (the run's 20%-40%), and the groups trained as
    a share of those asked for over its last fifth (the earlier rounds' last 50 of 250)."""
    from minitepo.lab.runs import read_metrics
    config = json.loads((folder / "rl" / "config.json").read_text())
    n, prompts = config["iterations"], config["prompts"]
    rows = [r for r in read_metrics(folder / "rl") if "charts/groups_trained" in r]
    mid = [r["charts/entropy_sampled"] for r in rows if 0.2 * n < r["step"] <= 0.4 * n]
    last = rows[-round(0.2 * n):]
    return {"responses": sum(r["charts/responses_sampled"] for r in rows),
            "entropy_20_40": round(statistics.fmean(mid), 4),
            "groups_share_last_fifth": round(statistics.fmean(r["charts/groups_trained"] for r in last) / prompts, 4)}


def sign_test(up: int, down: int) -> float:
    """Two-sided exact sign test: the chance, with no shift, of a split of ``up + down`` seeds (ties left out) at
    least as uneven as this one."""
    n, k = up + down, max(up, down)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n)


def shifts(result: dict) -> dict:
    """Per new arm, the seeds that ended above, below and level with ``base`` (same warm start), and the sign test
    of that split (the readout fixed in the protocol; it chooses nothing)."""
    base = [r["after"] for r in result["runs"]["base"]]
    out = {}
    for name in result["arms"]:
        if name != "base":
            after = [r["after"] for r in result["runs"][name]]
            up, down = sum(a > b for a, b in zip(after, base)), sum(a < b for a, b in zip(after, base))
            out[name] = {"above": up, "below": down, "level": len(base) - up - down, "p": sign_test(up, down)}
    return out


DESCRIBED = (("sampled entropy, 20%-40% of the run", "entropy_20_40"),
             ("share of groups trained, last fifth", "groups_share_last_fifth"))
"""The two descriptive columns of the fifth and sixth rounds' tables (``mechanism``'s keys)."""


def markdown(result: dict) -> str:
    """The fourth round's tables with this round's columns and, under the first, each arm's sign test."""
    notes = [f"* `{name}` against `base`, seed by seed: above on {s['above']}, below on {s['below']}, level on "
             f"{s['level']} (two-sided sign test p = {s['p']:.2g})." for name, s in shifts(result).items()]
    return round4.markdown(result, DESCRIBED, notes)


def doc(check: bool) -> int:
    """The page's blocks of this round: the study and its confirmation."""
    return round4.write_round(5, markdown(json.loads(SUMMARY.read_text())), CONFIRM, confirmation_block,
                              "research/quickstart-lift/round05.py", check)


def confirmation_block(first: list[dict], new: list[dict], idle: list[dict], confirmed: str | None = None) -> str:
    """The fourth round's block and rule (at least as good as the first round's confirmation, and within its time
    limit of the idle run's) for ``confirmed``, by default this round's pick; the sixth round's driver passes its own."""
    confirmed = confirmed or CONFIRMED
    return round4.confirmation_block(first, new, idle, confirmed, kept=confirmed, reverted="32 prompts x 8 answers")


def main(argv=None) -> int:
    return round3.cli(argv, __doc__.splitlines()[0], ARMS, row_path, doc, mechanism, __file__)


if __name__ == "__main__":
    sys.exit(main())
