"""Make the thinned copy of several objectives' runs that lesson 11 reads.

    python lessons/data/thin_compare.py lessons/data/compare_add.json \
        grpo::runs/search/confirm-add/grpo-seed2? dapo::runs/search/confirm-add/dapo-seed2? ...

Each argument after the output file is LABEL::GLOB: the run folders (each with a metrics.jsonl) of one objective,
one per seed. Keeps, per run, the held-out evaluations (iteration, greedy accuracy) and the policy entropy and
prompts sampled at those iterations (at iteration 0, the entropy of the first rollout); floats rounded to 4 significant digits.
"""

import glob
import json
import sys
from pathlib import Path


def thin_run(folder: Path, prompts_per_round: int = 32) -> dict:
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if line.strip()]
    out = {"step": [], "acc": [], "entropy": [], "prompts": []}
    prompts, entropy = 0, None
    for row in rows:
        prompts += row.get("charts/sample_rounds", 0) * prompts_per_round
        entropy = row.get("charts/entropy", entropy)
        if "eval/greedy_acc/all" in row:
            out["step"].append(row["step"])
            out["acc"].append(float(f"{row['eval/greedy_acc/all']:.4g}"))
            out["entropy"].append(None if entropy is None else float(f"{entropy:.4g}"))
            out["prompts"].append(prompts)
    if out["entropy"] and out["entropy"][0] is None:   # iteration 0 has no rollout yet: use the first one's
        first = next(row["charts/entropy"] for row in rows if "charts/entropy" in row)
        out["entropy"][0] = float(f"{first:.4g}")
    return out


if __name__ == "__main__":
    target, pairs = Path(sys.argv[1]), sys.argv[2:]
    data = {}
    for pair in pairs:
        label, _, pattern = pair.partition("::")
        folders = sorted(glob.glob(pattern))
        if not folders:
            raise SystemExit(f"{pair}: no run folder matches")
        data[label] = {Path(f).name.rsplit("-seed", 1)[-1]: thin_run(Path(f)) for f in folders}
    target.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {target}: " + ", ".join(f"{k} ({len(v)} runs)" for k, v in data.items()))
