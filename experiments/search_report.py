"""Every table of docs/reading-search.md and docs/results.md, computed from the committed compare summaries.

    python3 experiments/search_report.py            # rewrite the generated blocks in the two pages
    python3 experiments/search_report.py --check    # exit 1 if a page differs from what the summaries give

(The pages: docs/reading-search.md, docs/results.md and the README's quickstart seed table.)
A generated block sits between ``<!-- BEGIN NAME -->`` and ``<!-- END NAME -->``; nothing between them is
typed by hand. The inputs are ``minitepo compare`` summaries copied unedited into docs/search/:
``select-a.json``, ``select-b.json``, ``select-ds.json`` (the selection on add_cot) and
``confirm-countdown.json``, ``confirm-add.json`` (the confirmation). The claim tests are those the protocol
fixed before the confirmation runs (docs/reading-search.md): Welch t-tests, Holm-corrected across the family.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))

import quickstart_seeds  # noqa: E402
import reading_search as rs  # noqa: E402

from minitepo.stats import format_ci, holm, t_mean_ci, welch_test  # noqa: E402

SEARCH = ROOT / "docs" / "search"
PAGES = (ROOT / "docs" / "reading-search.md", ROOT / "docs" / "results.md", ROOT / "README.md")
TASKS = {"countdown": 0.3, "add": 0.6}      # confirmation tasks and their targets (the protocol's)
CLAIMS = (("speed", "iters_to_target_censored", -1, "iterations to target (censored)"),
          ("stability", "unstable_evals", -1, "unstable evaluations"),
          ("entropy", "entropy_min", +1, "minimum entropy"),
          ("accuracy", "final", +1, "final accuracy"))   # (claim, metric, sign that favours TEPO, words)
ALPHA = 0.05


def selection_runs() -> dict:
    return rs.load([str(SEARCH / f"select-{p}.json") for p in ("a", "b", "ds") if (SEARCH / f"select-{p}.json").is_file()])


def confirmation(task: str) -> dict:
    return json.loads((SEARCH / f"confirm-{task}.json").read_text())["runs"]


def matched_dapo(selected: str) -> str:
    return "dapo" if rs.describe(selected)["ds"] else "dapo:dynamic_sampling=false"


def values(rows: list[dict], key: str) -> list[float]:
    return [r[key] for r in rows if r.get(key) is not None]


def block_selection() -> str:
    runs = selection_runs()
    name, vetoed = rs.selected(runs)
    return (rs.table(runs) + f"\n\n**Selected: `{name}`**" + (" (every cell was vetoed; the best is reported anyway)"
                                                              if vetoed else "") + ".")


def block_selected_summary() -> str:
    runs = selection_runs()
    name, vetoed = rs.selected(runs)
    d, sc = rs.describe(name), rs.score(runs[name])
    return (f"The rule selected **`{name}`**" + (" (every cell was vetoed; the best by AUC is shown)" if vetoed else "")
            + f": ratio clip {d['clip']}, mask {d['mask']} (criterion `{d['criterion']}`), dynamic sampling "
            f"{'on' if d['ds'] else 'off'}. On `add_cot` (seeds {', '.join(map(str, sc['seeds']))}) its mean "
            f"held-out accuracy over the run was {sc['auc']:.3f} and it ended at {sc['final']:.3f}; today's default "
            f"(`tepo`) had {rs.score(runs['tepo'])['auc']:.3f} and {rs.score(runs['tepo'])['final']:.3f}. "
            f"The full selection table is in [`reading-search.md`](reading-search.md#selection-add_cot-seeds-10-12).")


def confirmation_table(task: str) -> str:
    runs = confirmation(task)
    t = f"{TASKS[task]:.0%}"
    cols = (("iters_to_target_censored", f"iterations to {t} (censored)"),
            ("prompts_to_target_censored", f"prompts to {t} (censored)"), ("final", "final acc"),
            ("acc_auc", "mean eval acc"), ("entropy_min", "min entropy"), ("unstable_evals", "unstable evals"))
    lines = ["| entry | reached | " + " | ".join(c for _, c in cols) + " |", "|---" * (len(cols) + 2) + "|"]
    for label, rows in runs.items():
        reached = sum(r["iters_to_target"] is not None for r in rows)
        cells = [format_ci(t_mean_ci(values(rows, key))) for key, _ in cols]
        lines.append(f"| `{label}` | {reached}/{len(rows)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def claim_tests(selected: str) -> list[dict]:
    tests = []
    for task in TASKS:
        runs = confirmation(task)
        for baseline in ("grpo", matched_dapo(selected)):
            for claim, key, sign, words in CLAIMS:
                w = welch_test(values(runs[selected], key), values(runs[baseline], key))
                tests.append({"task": task, "baseline": baseline, "claim": claim, "words": words, "sign": sign,
                              "test": w, "name": f"{task}/{baseline}/{claim}"})
    adjusted = holm({t["name"]: t["test"]["p"] for t in tests if t["test"] is not None})
    for t in tests:
        t["p_holm"] = adjusted.get(t["name"])
        if t["test"] is None or t["p_holm"] > ALPHA:
            t["verdict"] = "not distinguishable"
        else:
            t["verdict"] = "supported" if t["test"]["diff"] * t["sign"] > 0 else "contradicted"
    return tests


def block_claims() -> str:
    selected, _ = rs.selected(selection_runs())
    tests = claim_tests(selected)
    lines = [f"| task | claim | S − baseline, metric | baseline | Δ [95% Welch interval] | p | p (Holm, {len(tests)} tests) "
             "| verdict |", "|---" * 8 + "|"]
    for t in tests:
        w = t["test"]
        diff = "—" if w is None else format_ci((w["diff"], w["low"], w["high"]))
        p = "—" if w is None else f"{w['p']:.2g}"
        ph = "—" if t["p_holm"] is None else f"{t['p_holm']:.2g}"
        lines.append(f"| {t['task']} | {t['claim']} | {t['words']} | `{t['baseline']}` | {diff} | {p} | {ph} | "
                     f"{t['verdict']} |")
    lines += ["", "| claim | supported on | contradicted on | overall |", "|---|---|---|---|"]
    for claim, *_ in CLAIMS:
        sup = [f"{t['task']} vs `{t['baseline']}`" for t in tests if t["claim"] == claim and t["verdict"] == "supported"]
        con = [f"{t['task']} vs `{t['baseline']}`" for t in tests if t["claim"] == claim and t["verdict"] == "contradicted"]
        overall = "contradicted" if con and not sup else "supported" if sup and not con else (
            "mixed" if sup and con else "not distinguishable")
        lines.append(f"| {claim} | {', '.join(sup) or '—'} | {', '.join(con) or '—'} | {overall} |")
    return "\n".join(lines)


def block_descriptive() -> str:
    """S against today's default TEPO and against S with its mask flipped, unadjusted (descriptions)."""
    selected, _ = rs.selected(selection_runs())
    others = [e for e in (rs._flip_mask(selected), "tepo", rs._flip_ds(selected)) if e != selected]
    keys = (("iters_to_target_censored", "iterations to target (censored)"),
            ("prompts_to_target_censored", "prompts to target (censored)"), ("final", "final acc"),
            ("entropy_min", "min entropy"), ("unstable_evals", "unstable evals"))
    lines = ["| task | S − entry | " + " | ".join(f"Δ {w}" for _, w in keys) + " |", "|---" * (len(keys) + 2) + "|"]
    for task in TASKS:
        runs = confirmation(task)
        for other in dict.fromkeys(others):
            cells = []
            for key, _ in keys:
                w = welch_test(values(runs[selected], key), values(runs[other], key))
                cells.append("—" if w is None else format_ci((w["diff"], w["low"], w["high"])) + f" (p {w['p']:.2g})")
            lines.append(f"| {task} | `{other}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def blocks() -> dict:
    out = {}
    if selection_runs():
        out["selection"] = block_selection()
        out["selected-summary"] = block_selected_summary()
    for task in TASKS:
        if (SEARCH / f"confirm-{task}.json").is_file():
            out[f"confirm-{task}"] = confirmation_table(task)
    if (SEARCH / "quickstart-seeds.json").is_file():
        out["quickstart-seeds"] = quickstart_seeds.table(json.loads((SEARCH / "quickstart-seeds.json").read_text())["seeds"])
    if all((SEARCH / f"confirm-{task}.json").is_file() for task in TASKS):
        out["claims"] = block_claims()
        out["descriptive"] = block_descriptive()
    return out


def render(text: str, generated: dict) -> str:
    def fill(match):
        name = match.group(1)
        if name not in generated:   # its summaries are not there yet: leave the block as it is
            return match.group(0)
        return f"<!-- BEGIN {name} -->\n{generated[name]}\n<!-- END {name} -->"
    return re.sub(r"<!-- BEGIN ([\w-]+) -->.*?<!-- END \1 -->", fill, text, flags=re.S)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that the pages match the summaries")
    args = ap.parse_args(argv)
    generated = blocks()
    stale = []
    for page in PAGES:
        if not page.is_file():
            continue
        text = page.read_text()
        new = render(text, generated)
        if new != text:
            stale.append(page.name)
            if not args.check:
                page.write_text(new)
    if args.check and stale:
        print(f"out of date with docs/search/: {', '.join(stale)}; run python3 experiments/search_report.py")
        return 1
    print(("checked: " if args.check else "wrote: ") + ", ".join(p.name for p in PAGES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
