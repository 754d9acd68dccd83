"""Make the thinned copy of experiment A's runs (research/mechanisms/README.md) that lesson 12 reads.

    python lessons/data/thin_mechanisms.py lessons/data/mechanisms_aggregation.json runs/mech/aggregation
    python lessons/data/thin_mechanisms.py OUT.json runs/mech/aggregation-lo runs/mech/aggregation-hi   # halves

Each argument after the output file is a ``minitepo compare`` output folder: its run folders are
``ENTRY-seedN/metrics.jsonl``, and its ``summary.json`` (when there is one) names each entry and its reading.
Keeps, per entry and seed, the rows of the evaluations and of every iteration up to 20, then of every 2nd
iteration, with only the keys in ``KEYS`` (a key a row lacks is null: iteration 0 holds only the evaluation,
and only every 10th iteration is evaluated); floats rounded to 5 significant digits. Writes

    {"keys": [...], "entries": {ENTRY: {"folder": ..., "label": ...}},
     "runs": {ENTRY: {SEED: {KEY: [value per kept row]}}}}
"""

import json
import re
import sys
from pathlib import Path

KEYS = ("step", "eval/greedy_acc/all", "eval/greedy_acc/form_share/steps", "eval/greedy_acc/form_acc/steps",
        "charts/form_share/steps", "charts/len_cv_in_group", "charts/entropy_sampled", "charts/reward_mean")
EVERY_UP_TO = 20          # every iteration up to this one is kept, then every 2nd


def folder_of(entry: str) -> str:
    """The run-folder prefix ``minitepo compare`` gives an entry (``Entry.folder`` in minitepo/lab/compare.py)."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", entry.replace(":", "-"))


def keep(row: dict) -> bool:
    return "eval/greedy_acc/all" in row or row["step"] <= EVERY_UP_TO or row["step"] % 2 == 0


def rounded(value):
    return float(f"{value:.5g}") if isinstance(value, float) else value


def thin_run(metrics: Path) -> dict:
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    kept = [row for row in rows if keep(row)]
    return {key: [rounded(row.get(key)) for row in kept] for key in KEYS}


def entries_of(folder: Path) -> dict:
    """{entry: label} from the folder's summary.json (compare's entries and their readings); {} without one."""
    summary = folder / "summary.json"
    if not summary.is_file():
        return {}
    data = json.loads(summary.read_text())
    readings = data.get("readings", {})
    labels = {}
    for entry in data["runs"]:
        reading = readings.get(entry)
        if reading:
            labels[entry] = f"{reading['algo']}: {reading['ratio']} ratio, {reading['clip']}, {reading['agg']}"
        else:
            labels[entry] = entry
    return labels


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    target, folders = Path(sys.argv[1]), [Path(f) for f in sys.argv[2:]]
    labels = {}
    for folder in folders:
        labels.update(entries_of(folder))
    by_folder = {folder_of(entry): entry for entry in labels}
    data = {"keys": list(KEYS), "entries": {}, "runs": {}}
    for folder in folders:
        runs = sorted(folder.glob("*-seed*/metrics.jsonl"))
        if not runs:
            raise SystemExit(f"{folder}: no ENTRY-seedN/metrics.jsonl here")
        for metrics in runs:
            prefix, _, seed = metrics.parent.name.rpartition("-seed")
            entry = by_folder.get(prefix, prefix)      # without a summary, the folder's name stands for the entry
            data["entries"].setdefault(entry, {"folder": prefix, "label": labels.get(entry, entry)})
            data["runs"].setdefault(entry, {})[seed] = thin_run(metrics)
    for entry in data["runs"]:
        data["runs"][entry] = dict(sorted(data["runs"][entry].items(), key=lambda kv: int(kv[0])))
    target.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {target}: " + ", ".join(f"{data['entries'][e]['label']} ({len(v)} runs)"
                                          for e, v in data["runs"].items()))
