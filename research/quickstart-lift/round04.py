"""Issue 29, fourth round: do bigger groups, or a KL to the warm start, lift every seed?

The protocol, the arms, the selection rule and the seeds are in ``research/quickstart-lift/README.md`` ("Fourth round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 research/quickstart-lift/round04.py run    --seeds 100-119 --jobs 2 [--until HH:MM]
    python3 research/quickstart-lift/round04.py report --out research/quickstart-lift/data/round4.json
    python3 research/quickstart-lift/round04.py doc [--check]     # the page's round-4 blocks, from the JSON records

As in the third round, every arm starts from the first round's warm starts (``runs/lift/warm``) and ``base``'s rows
are the earlier runs of today's quickstart; the new arms go to ``runs/lift4/``. The run, the report and the rule
are the third round's (``quickstart_lift3``), given this round's arms.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402  (the first round: target, page helpers)
import round02 as round2  # noqa: E402  (one RL run's row, the head-to-head)
import round03 as round3  # noqa: E402  (the run, the report and the rule)


RUNS = ROOT / "runs" / "lift4"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "round4.json"
CONFIRM = ROOT / "research" / "quickstart-lift" / "data" / "confirm-round4.json"   # the confirmation of this round's pick (seeds 0-19)
TARGET = round1.TARGET
ARMS = {
    # name: RLConfig overrides on the quickstart's RL stage (from the same warm start)
    "g16": {"prompts": 16, "group_size": 16},   # the same 256 responses per sampling round, in groups of 16
    "kl0.04": {"beta": 0.04},                   # GRPO's reference KL (k3), the warm start as reference
}
CONFIRMED = "a KL of 0.04 to the warm start"   # what the confirmation ran: the rule's pick, kl0.04
TIME_LIMIT = 1.10   # the pick stays only if its median wall time per seed is within this of the idle run's


def row_path(arm: str, seed: int) -> Path:
    return round3.row_path(arm, seed) if arm == "base" else RUNS / arm / f"seed{seed}.json"


def mechanism(folder: Path) -> dict:
    """The third round's description of a run, with the groups trained as a share of the groups asked for (32 in
    ``base`` and ``kl0.04``, 16 in ``g16``)."""
    described = round3.mechanism(folder)
    prompts = json.loads((folder / "rl" / "config.json").read_text())["prompts"]
    return {"responses": described["responses"], "entropy_51_100": described["entropy_51_100"],
            "groups_share_last50": round(described["groups_last50"] / prompts, 4)}


DESCRIBED = (("sampled entropy, iterations 51-100", "entropy_51_100"),
             ("share of groups trained, last 50 iterations", "groups_share_last50"))
"""The two descriptive columns of this round's table: a header and the key ``mechanism`` gives."""


def markdown(result: dict, described=DESCRIBED, notes: list[str] = ()) -> str:
    """A round's table per arm (the ``described`` columns averaged over its seeds), ``notes`` under it, then the
    seed-by-seed table. The fifth and sixth rounds pass their own columns and the sign tests."""
    arms, pct, seeds = result["arms"], round1.pct, result["seeds"]
    lines = [f"Seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} per arm), every arm from the same warm start per seed.", "",
             "| arm | seeds at target (<= 40% -> >= 80%) | median final | lowest final | sampled responses vs `base` "
             + "".join(f"| {header} " for header, _ in described) + "| RL seconds (median) |",
             "|---" * (6 + len(described)) + "|"]
    for name, a in arms.items():
        mark = "" if name != result["pick"] else " **(kept)**" if name == "base" else " **(picked)**"
        seconds = "(earlier sessions)" if name == "base" else f"{a['median_rl_seconds']:.0f}"
        lines.append(f"| `{name}`{mark} | {a['met']} of {a['n']} | {pct(a['median_after'])} | {pct(a['min_after'])} "
                     f"| {a['cost_ratio']:.2f}x " + "".join(f"| {a['mean_' + key]:.2f} " for _, key in described)
                     + f"| {seconds} |")
    if notes:
        lines += ["", *notes]
    return "\n".join(lines + ["", round3.seed_table(result)])


def median_wall(rows: list[dict]) -> float:
    return statistics.median(r["wall_s"] for r in rows)


def pick_holds(first: list[dict], fourth: list[dict], idle: list[dict]) -> bool:
    """The confirmation's rule (committed with the protocol): the pick stays only if (a) its confirmation
    (``fourth``) is at least as good as the first round's (``first``) on seeds at target, then the median, and (b)
    its median wall time per seed is at most ``TIME_LIMIT`` x the idle run's (``idle``, the same command before
    this round, nothing else running)."""
    return round2.pick_holds(first, fourth) and median_wall(fourth) <= TIME_LIMIT * median_wall(idle)


def confirmation_block(first: list[dict], new: list[dict], idle: list[dict], confirmed: str = CONFIRMED,
                       kept: str = "the KL to the warm start", reverted: str = "no KL") -> str:
    """The confirmation of ``confirmed`` (``new``) against the issue's targets, against the first round's, its time,
    and the verdict: the quickstart keeps ``kept`` or goes back to ``reverted``. The fifth and sixth rounds pass
    their own picks."""
    pct = round1.pct
    met, med, up, down = round2.versus(first, new)
    limit = TIME_LIMIT * median_wall(idle)
    return "\n".join([
        round1.confirmation(new, confirmed), "",
        f"* (a) Against the first round's confirmation (the quickstart before this round, same seeds, same command): "
        f"**{met[1]} of {len(new)} against {met[0]} of {len(first)}** at target, median {pct(med[1])} against "
        f"{pct(med[0])}; with {confirmed} a seed ended higher on {up} seeds and lower on {down}.",
        f"* (b) Median wall time per seed **{median_wall(new):.1f} s** against the idle run's "
        f"{median_wall(idle):.1f} s (limit {limit:.1f} s, {TIME_LIMIT:.2f}x).",
        f"* **The pick holds**: the quickstart keeps {kept}; the README's seed table is this confirmation."
        if pick_holds(first, new, idle) else
        f"* **The pick does not hold**: the quickstart goes back to {reverted}, and the README's seed table stays the "
        f"idle run of the first round's recipe."])


def write_round(number: int, table: str, confirm: Path, block, script: str, check: bool) -> int:
    """Write (or, with ``check``, compare) a round's blocks on the page: its study (``table``) and, once its
    confirmation ``confirm`` is recorded, ``block(first round's confirmation, this one, the idle run)``. The fifth and
    sixth rounds' drivers use it too."""
    def seeds(path: Path) -> list[dict]:
        return json.loads(path.read_text())["seeds"]
    new = round1.replace_block(round1.PAGE.read_text(), f"round{number}", table)
    if confirm.is_file():
        new = round1.replace_block(new, f"confirmation{number}", block(seeds(round1.CONFIRM), seeds(confirm),
                                                                        seeds(round3.IDLE)))
    return round1.write_page(new, check, script)


def doc(check: bool) -> int:
    """The page's blocks of this round: the study and its confirmation."""
    return write_round(4, markdown(json.loads(SUMMARY.read_text())), CONFIRM, confirmation_block,
                       "research/quickstart-lift/round04.py", check)


def main(argv=None) -> int:
    return round3.cli(argv, __doc__.splitlines()[0], ARMS, row_path, doc, mechanism, __file__)


if __name__ == "__main__":
    sys.exit(main())
