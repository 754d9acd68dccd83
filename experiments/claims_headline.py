"""The headline table of the TEPO claims test (issue 12): one row per task x entry, from each task's
``minitepo compare`` summary (``OUT/summary.json``), so no number in docs/results.md is typed by hand.

    PYTHONPATH=. python3 experiments/claims_headline.py runs/claims/add_cot runs/claims/countdown runs/claims/add

Prints a markdown table: runs that reached the task's target, iterations to it, final accuracy, minimum
entropy and unstable evaluations, each a mean with its 95% bootstrap interval over seeds (``minitepo.stats``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from minitepo.stats import bootstrap_mean_ci, format_ci

COLUMNS = ("iters_to_target", "final", "entropy_min", "unstable_evals")


def headline(folders: list[Path]) -> str:
    lines = ["| task | entry | reached target | iterations to target | final acc | min entropy | unstable evals |",
             "|---|---|---|---|---|---|---|"]
    for folder in folders:
        summary = json.loads((folder / "summary.json").read_text())
        config = summary["config"]
        task, target = config["task"], config["target_accuracy"]
        for label, rows in summary["runs"].items():
            reached = sum(r["iters_to_target"] is not None for r in rows)
            cells = [format_ci(bootstrap_mean_ci([r[key] for r in rows if r[key] is not None])) for key in COLUMNS]
            lines.append(f"| {task} ({target:.0%}) | {label} | {reached}/{len(rows)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path, help="minitepo compare output folders")
    print(headline(ap.parse_args(argv).folders))


if __name__ == "__main__":
    main()
