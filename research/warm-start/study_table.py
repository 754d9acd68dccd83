"""One markdown table over every recipe run by warmstart_study.py (runs/study/*/summary.json).

Summaries with the same overrides and patches (one recipe run in several batches of seeds) are merged.

    PYTHONPATH=. python3 research/warm-start/study_table.py [runs/study]
"""
import json
import statistics
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/study")
recipes: dict[str, dict] = {}
for path in sorted(root.glob("*/summary.json"), key=lambda p: p.stat().st_mtime):
    s = json.loads(path.read_text())
    if "runs" not in s or "reached_target" not in s:
        continue
    key = json.dumps([s["overrides"], s["patch"]], sort_keys=True)
    r = recipes.setdefault(key, {"names": [], "runs": [], "overrides": s["overrides"], "patch": s["patch"]})
    r["names"].append(s["name"])
    r["runs"].extend(s["runs"])


def med(xs):
    return statistics.median(xs) if xs else "-"


print("| recipe (changes from today's defaults) | seeds run | reached 90% (3-digit) | reached 25% | median step to 25% "
      "| median step to 90% | median seconds per run | per seed: step to 90%, else final 3-digit acc |")
print("|---|---|---|---|---|---|---|---|")
for r in recipes.values():
    runs = r["runs"]
    change = ", ".join(f"{k}={v}" for k, v in {**r["overrides"], **r["patch"]}.items()) or "none (baseline)"
    hit = [x["step_target"] for x in runs if x["step_target"]]
    hit25 = [x["step_25"] for x in runs if x["step_25"]]
    per = ", ".join(f"s{x['seed']}: {x['step_target'] or format(x['final'].get('level/3'), '.1%')}" for x in runs)
    print(f"| {change} | {len(runs)} | {len(hit)}/{len(runs)} | {len(hit25)}/{len(runs)} | {med(hit25)} | {med(hit)} | "
          f"{med([x['seconds'] for x in runs]):.0f} | {per} |")
