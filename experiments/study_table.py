"""One markdown table over every recipe run by warmstart_study.py (runs/study/*/summary.json).

    PYTHONPATH=. python3 experiments/study_table.py [runs/study]
"""
import json
import statistics
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/study")
print("| recipe | seeds run | reached 90% (level 3) | reached 25% | median step to 25% | median step to 90% "
      "| seconds per run (median) | per seed: step to 90% (or final level-3 acc) |")
print("|---|---|---|---|---|---|---|---|")
for path in sorted(root.glob("*/summary.json")):
    s = json.loads(path.read_text())
    if "runs" not in s or "reached_target" not in s:
        continue
    runs = s["runs"]
    per = ", ".join(f"s{r['seed']}: {r['step_target'] if r['step_target'] else r['final'].get('level/3')}" for r in runs)
    secs = statistics.median(r["seconds"] for r in runs)
    print(f"| {s['name']} | {len(runs)} | {s['reached_target']}/{len(runs)} | {s['reached_25']}/{len(runs)} | "
          f"{s['median_step_25']} | {s['median_step_target']} | {secs:.0f} | {per} |")
