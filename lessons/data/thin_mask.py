"""Make the thinned copy of experiment B's runs (research/mechanisms/README.md: TEPO's mask under 8 optimizer steps per
rollout) that lesson 6 reads.

    python lessons/data/thin_mask.py lessons/data/mechanisms_mask.json runs/mech/mask

The argument after the output file is the ``minitepo compare`` output folder of experiment B: its run folders are
``ENTRY-seedN/metrics.jsonl``, and its ``summary.json`` names each entry, its reading and each run's summary. A run
has 40 iterations, so every row is kept (41 with the evaluation before training); only the keys in ``KEYS`` stay
(a key a row lacks is null: iteration 0 holds only the evaluation, and only every 10th iteration is evaluated),
floats rounded to 5 significant digits. Beside the curves it copies, per entry and seed, the summary numbers the
pre-registered tests compare (``TESTED``), unrounded, so that the lesson can check its own reading of the curves
against the numbers the tests used. Writes

    {"keys": [...], "entries": {ENTRY: {"folder": ..., "label": ...}},
     "runs": {ENTRY: {SEED: {KEY: [value per row]}}}, "summary": {ENTRY: {SEED: {METRIC: value}}}}
"""

import json
import sys
from pathlib import Path

from thin_mechanisms import folder_of, rounded   # the same folder: run as a script, it is on sys.path

KEYS = ("step", "eval/greedy_acc/all", "eval/pass@4", "charts/entropy_sampled", "tepo/mask_frac_later_steps")
TESTED = ("entropy_sampled_last", "pass_at_k_final", "acc_auc", "final")   # B-H1, B-H2, B-H3 and the final accuracy


def label_of(reading: dict) -> str:
    """An entry's label from compare's reading of it; unlike experiment A's labels it names the mask."""
    return f"{reading['algo']}: {reading['ratio']} ratio, {reading['clip']}, {reading['agg']}, mask {reading['mask']}"


def thin_run(metrics: Path) -> dict:
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return {key: [rounded(row.get(key)) for row in rows] for key in KEYS}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    target, folder = Path(sys.argv[1]), Path(sys.argv[2])
    if not (folder / "summary.json").is_file():
        raise SystemExit(f"{folder}: no summary.json here (run compare's last, --resume call first)")
    compared = json.loads((folder / "summary.json").read_text())
    summary = compared["runs"]
    labels = {entry: label_of(compared["readings"][entry]) for entry in summary}
    data = {"keys": list(KEYS), "entries": {}, "runs": {}, "summary": {}}
    for entry, label in labels.items():
        data["entries"][entry] = {"folder": folder_of(entry), "label": label}
        runs = sorted(folder.glob(f"{folder_of(entry)}-seed*/metrics.jsonl"),
                      key=lambda p: int(p.parent.name.rpartition("-seed")[2]))
        if not runs:
            raise SystemExit(f"{folder}: no {folder_of(entry)}-seedN/metrics.jsonl here")
        data["runs"][entry] = {m.parent.name.rpartition("-seed")[2]: thin_run(m) for m in runs}
        data["summary"][entry] = {str(row["seed"]): {k: row[k] for k in TESTED} for row in summary[entry]}
        if set(data["summary"][entry]) != set(data["runs"][entry]):
            raise SystemExit(f"{entry}: summary.json's seeds {sorted(data['summary'][entry])} are not the run folders' "
                             f"{sorted(data['runs'][entry])}")
    target.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {target}: " + ", ".join(f"{data['entries'][e]['label']} ({len(v)} runs)"
                                          for e, v in data["runs"].items()))
