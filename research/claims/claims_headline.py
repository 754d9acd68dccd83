"""The headline table of the TEPO claims test (issue 12): one row per task x entry, from each task's
``minitepo compare`` summary (``OUT/summary.json``), so no number in research/claims/README.md is typed by hand.

    PYTHONPATH=. python3 research/claims/claims_headline.py runs/claims/add_cot runs/claims/countdown runs/claims/add

Prints two markdown tables. The headline: runs that reached the task's target, iterations to it, final
accuracy, minimum entropy and unstable evaluations, each a mean with its 95% bootstrap interval over seeds
(``minitepo.lab.stats``). The early updates: over the first ``EARLY`` iterations, how far each rollout's optimizer
steps moved the policy (the median of the logged approximate KL to the behaviour policy), how often the clip
bound, and TEPO's mask fraction and penalty, each a mean with its interval over seeds.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import statistics

from minitepo.lab.compare import parse_entry
from minitepo.lab.runs import read_metrics
from minitepo.lab.stats import bootstrap_mean_ci, format_ci

COLUMNS = ("iters_to_target", "final", "entropy_min", "unstable_evals")
EARLY = 20
EARLY_KEYS = (("losses/approx_kl_old", statistics.median), ("losses/clip_frac", statistics.mean),
              ("tepo/mask_frac", statistics.mean), ("losses/mask_kl", statistics.mean))


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


def early_updates(folders: list[Path]) -> str:
    lines = [f"| task | entry | median approx. KL to the behaviour policy, iterations 1-{EARLY} | clip fraction | "
             "TEPO mask fraction | TEPO mask penalty |", "|---|---|---|---|---|---|"]
    for folder in folders:
        summary = json.loads((folder / "summary.json").read_text())
        task = summary["config"]["task"]
        for label, rows in summary["runs"].items():
            folder_name = parse_entry(label).folder
            per_seed = {key: [] for key, _ in EARLY_KEYS}
            for row in rows:
                records = [r for r in read_metrics(folder / f"{folder_name}-seed{row['seed']}") if 1 <= r["step"] <= EARLY]
                for key, reduce in EARLY_KEYS:
                    values = [r[key] for r in records if key in r]
                    if values:
                        per_seed[key].append(reduce(values))
            cells = [format_ci(bootstrap_mean_ci(per_seed[key])) for key, _ in EARLY_KEYS]
            lines.append(f"| {task} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path, help="minitepo compare output folders")
    folders = ap.parse_args(argv).folders
    print(headline(folders) + "\n\n" + early_updates(folders))


if __name__ == "__main__":
    main()
