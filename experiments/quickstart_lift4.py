"""Issue 29, fourth round: do bigger groups, or a KL to the warm start, lift every seed?

The protocol, the arms, the selection rule and the seeds are in ``docs/quickstart-lift.md`` ("Fourth round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 experiments/quickstart_lift4.py run    --seeds 100-119 --jobs 2 [--until HH:MM]
    python3 experiments/quickstart_lift4.py report --out docs/lift/round4.json
    python3 experiments/quickstart_lift4.py doc [--check]     # the page's round-4 blocks, from the JSON records

As in the third round, every arm starts from the first round's warm starts (``runs/lift/warm``) and ``base``'s rows
are the earlier runs of today's quickstart; the new arms go to ``runs/lift4/``. The run, the report and the rule
are the third round's (``quickstart_lift3``), given this round's arms.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

import quickstart_lift as round1  # noqa: E402  (the first round: target, page helpers)
import quickstart_lift2 as round2  # noqa: E402  (one RL run's row, the head-to-head)
import quickstart_lift3 as round3  # noqa: E402  (the run, the report and the rule)

from minitepo.lab.compare import parse_seed_list  # noqa: E402

RUNS = ROOT / "runs" / "lift4"
SUMMARY = ROOT / "docs" / "lift" / "round4.json"
CONFIRM = ROOT / "docs" / "lift" / "confirm-round4.json"   # the confirmation of this round's pick (seeds 0-19)
TARGET = round1.TARGET
ARMS = {
    # name: RLConfig overrides on the quickstart's RL stage (from the same warm start)
    "g16": {"prompts": 16, "group_size": 16},   # the same 256 responses per sampling round, in groups of 16
    "kl0.04": {"beta": 0.04},                   # GRPO's reference KL (k3), the warm start as reference
}
CONFIRMED = None    # what the confirmation ran, set once the rule has picked
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


def markdown(result: dict) -> str:
    arms, pct, seeds = result["arms"], round1.pct, result["seeds"]
    lines = [f"Seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} per arm), every arm from the same warm start per seed.", "",
             "| arm | seeds at target (<= 40% -> >= 80%) | median final | lowest final | sampled responses vs `base` "
             "| sampled entropy, iterations 51-100 | share of groups trained, last 50 iterations | RL seconds (median) |",
             "|---" * 8 + "|"]
    for name, a in arms.items():
        mark = "" if name != result["pick"] else " **(kept)**" if name == "base" else " **(picked)**"
        seconds = "(earlier sessions)" if name == "base" else f"{a['median_rl_seconds']:.0f}"
        lines.append(f"| `{name}`{mark} | {a['met']} of {a['n']} | {pct(a['median_after'])} | {pct(a['min_after'])} "
                     f"| {a['cost_ratio']:.2f}x | {a['mean_entropy_51_100']:.2f} | {a['mean_groups_share_last50']:.2f} "
                     f"| {seconds} |")
    lines += ["", "| seed | warm-start steps | before | " + " | ".join(f"`{n}`" for n in arms) + " |",
              "|---" * (3 + len(arms)) + "|"]
    for i, seed in enumerate(seeds):
        base = result["runs"]["base"][i]
        finals = [result["runs"][n][i]["after"] for n in arms]
        lines.append(f"| {seed} | {base['warm']['steps']} | {pct(base['before'])} | "
                     + " | ".join(pct(f) if f >= TARGET else f"*{pct(f)}*" for f in finals) + " |")
    return "\n".join(lines)


def doc(check: bool) -> int:
    """Write (or, with ``check``, compare) the page's blocks of this round."""
    return round1.write_page(round1.replace_block(round1.PAGE.read_text(), "round4",
                                                  markdown(json.loads(SUMMARY.read_text()))),
                             check, "experiments/quickstart_lift4.py")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("phase", choices=["run", "report", "doc", "job"])
    ap.add_argument("rest", nargs="*", help="job: ARM SEED (internal)")
    ap.add_argument("--seeds", default="100-119")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--until", help="run: begin no seed after this UTC time (HH:MM)")
    ap.add_argument("--out", type=Path, help="report: write the summary JSON here")
    ap.add_argument("--check", action="store_true", help="doc: exit 1 if the page differs from the records")
    args = ap.parse_args(argv)
    if args.phase == "job":
        arm, seed = args.rest[0], int(args.rest[1])
        row = round2.rl_row(arm, seed, round3.WARM, ARMS[arm], RUNS / arm / f"seed{seed}")
        path = row_path(arm, seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(row))
    elif args.phase == "run":
        round3.run(parse_seed_list(args.seeds), args.jobs, args.until, arms=ARMS, row=row_path, script=__file__)
    elif args.phase == "doc":
        return doc(args.check)
    else:
        round3.report(args.out, new_arms=ARMS, row=row_path, describe=mechanism)
    return 0


if __name__ == "__main__":
    sys.exit(main())
