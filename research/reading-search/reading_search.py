"""The TEPO reading search (issue 20): its cells, its selection rule, and the entries it confirms, as code.

The protocol is research/reading-search/README.md; this file is that protocol's arithmetic, committed with it before the
first run, so that the selection is mechanical. Every table it prints is computed from ``minitepo compare``
summaries (``summary.json``), which are committed under research/reading-search/data/.

    python3 research/reading-search/reading_search.py cells                 # the 12 phase-1 cells, as one --algos string
    python3 research/reading-search/reading_search.py cells --half a        # or half of them, for one of two processes
    python3 research/reading-search/reading_search.py phase2 S1.json S2.json                  # the two best cells, DS on
    python3 research/reading-search/reading_search.py select S1.json S2.json [S3.json]        # the selection table
    python3 research/reading-search/reading_search.py confirm S1.json S2.json S3.json         # the confirmation entries

(run from the repository root; S*.json are compare summaries.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from minitepo.lab.compare import parse_entry  # noqa: E402

# --------------------------------------------------------------------------- the cells (phase 1)

CLIPS = {  # name -> overrides of the ratio clip
    "s_i 0.2/0.28": "",                                   # today's default: DAPO's range on the sequence ratio
    "s_i 3e-4/4e-4": "eps_low=0.0003+eps_high=0.0004",    # GSPO's range on the same ratio
    "token_log ±0.4": "ratio_clip=token_log",             # GMPO-style: each token's log-ratio, before the mean
}
MASKS = {  # name -> overrides of the mask
    "none": "beta_mask=0",
    "k3 β_M 1": "",                                       # today's default
    "k3 β_M 10": "beta_mask=10",
    "gate": "mask_action=gate",
}
HALVES = {"a": ("none", "k3 β_M 1"), "b": ("k3 β_M 10", "gate")}   # two processes, one per core

VETO_UNSTABLE = 3      # a cell is vetoed if any seed has this many unstable evaluations or more ...
TIE = 0.01             # ... or ends below the warm start; among the rest the best AUC wins, and cells within
                       # TIE of it are ordered by the preferences in ``preference``


def label(clip: str, mask: str, ds: bool = False) -> str:
    parts = [p for p in (CLIPS[clip], MASKS[mask], "dynamic_sampling=true" if ds else "") if p]
    return "tepo" + (":" + "+".join(parts) if parts else "")


def cells(half: str | None = None) -> list[str]:
    masks = HALVES[half] if half else tuple(MASKS)
    return [label(c, m) for c in CLIPS for m in masks]


def describe(text: str) -> dict:
    """The reading of a cell label: clip, mask, dynamic sampling, and its count of non-default switches."""
    o = dict(parse_entry(text).overrides)
    if o.get("ratio_clip") == "token_log":
        clip = "token_log ±0.4"
    elif o.get("eps_low") is not None:
        clip = "s_i 3e-4/4e-4"
    else:
        clip = "s_i 0.2/0.28"
    if o.get("beta_mask") == 0:
        mask = "none"
    elif o.get("mask_action") == "gate":
        mask = "gate"
    else:
        mask = f"k3 β_M {o.get('beta_mask', 1):g}"
    ds = bool(o.get("dynamic_sampling", False))
    switches = (clip != "s_i 0.2/0.28") + (mask != "k3 β_M 1") + ds
    return {"clip": clip, "mask": mask, "ds": ds, "switches": switches, "criterion": o.get("mask_criterion", "measured")}


# --------------------------------------------------------------------------- the rule


def load(paths: list[str]) -> dict:
    """label -> list of per-seed run summaries, merged over several compare summaries."""
    runs: dict = {}
    for path in paths:
        for name, rows in json.loads(Path(path).read_text())["runs"].items():
            if name in runs:
                raise SystemExit(f"{name} appears in two summaries")
            runs[name] = rows
    return runs


def score(rows: list[dict]) -> dict:
    below = sum(r["final"] < r["start"] for r in rows)
    unstable = max(r["unstable_evals"] for r in rows)
    vetoed = below > 0 or unstable >= VETO_UNSTABLE
    return {"auc": sum(r["acc_auc"] for r in rows) / len(rows), "final": sum(r["final"] for r in rows) / len(rows),
            "finals": [r["final"] for r in rows], "below_start": below, "max_unstable": unstable, "vetoed": vetoed,
            "seeds": [r["seed"] for r in rows]}


def preference(text: str) -> tuple:
    """Within TIE of the best AUC: fewer non-default switches, then the measured criterion, then additive KL over the
    gate, then dynamic sampling off."""
    d = describe(text)
    return d["switches"], d["criterion"] != "measured", d["mask"] == "gate", d["ds"]


def rank(runs: dict) -> list[tuple[str, dict]]:
    """Cells in the rule's order: non-vetoed by AUC (ties within TIE of the best broken by ``preference``
    only at the top), then vetoed by AUC."""
    scored = {name: score(rows) for name, rows in runs.items()}
    ok = sorted((n for n in scored if not scored[n]["vetoed"]), key=lambda n: -scored[n]["auc"])
    vetoed = sorted((n for n in scored if scored[n]["vetoed"]), key=lambda n: -scored[n]["auc"])
    if ok:
        best = scored[ok[0]]["auc"]
        near = sorted((n for n in ok if scored[n]["auc"] >= best - TIE), key=lambda n: (preference(n), -scored[n]["auc"]))
        ok = near + [n for n in ok if n not in near]
    return [(n, scored[n]) for n in ok + vetoed]


def selected(runs: dict) -> tuple[str, bool]:
    """(the selected cell, whether it was vetoed: only when every cell was)."""
    name, s = rank(runs)[0]
    return name, s["vetoed"]


def phase2(runs: dict) -> list[str]:
    """The two best phase-1 cells (by the rule's order) with dynamic sampling on."""
    return [_with_ds(name) for name, _ in rank(runs)[:2]]


def _with_ds(name: str) -> str:
    return name + ("+" if ":" in name else ":") + "dynamic_sampling=true"


def _flip_ds(name: str) -> str:
    if "dynamic_sampling=true" in name:
        rest = [p for p in name.partition(":")[2].split("+") if p != "dynamic_sampling=true"]
        return "tepo" + (":" + "+".join(rest) if rest else "")
    return _with_ds(name)


def _flip_mask(name: str) -> str:
    """The selected reading without its mask (beta_mask=0); if it has none, with today's mask (k3, beta_M 1)."""
    parts = [p for p in name.partition(":")[2].split("+") if p]
    if "beta_mask=0" in parts:
        parts = [p for p in parts if p != "beta_mask=0"]
    else:
        parts = [p for p in parts if not p.startswith("beta_mask=") and not p.startswith("mask_action=")] + ["beta_mask=0"]
    return "tepo" + (":" + "+".join(parts) if parts else "")


def confirm(runs: dict) -> list[str]:
    """The confirmation entries: the selected TEPO, it with dynamic sampling flipped, it with its mask flipped,
    today's default TEPO, GRPO, DAPO, and DAPO without dynamic sampling (duplicates dropped, order kept)."""
    best, _ = selected(runs)
    entries = [best, _flip_ds(best), _flip_mask(best), "tepo", "grpo", "dapo", "dapo:dynamic_sampling=false"]
    return list(dict.fromkeys(entries))


def table(runs: dict) -> str:
    lines = ["| rank | cell | clip | mask | dyn. sampling | switches | seeds | AUC (mean eval acc) | final acc (per seed) "
             "| seeds below start | max unstable evals | vetoed |", "|---" * 12 + "|"]
    for k, (name, s) in enumerate(rank(runs), 1):
        d = describe(name)
        finals = ", ".join(f"{f:.3f}" for f in s["finals"])
        lines.append(f"| {k} | `{name}` | {d['clip']} | {d['mask']} | {'on' if d['ds'] else 'off'} | {d['switches']} "
                     f"| {','.join(map(str, s['seeds']))} | {s['auc']:.3f} | {s['final']:.3f} ({finals}) "
                     f"| {s['below_start']} | {s['max_unstable']} | {'yes' if s['vetoed'] else 'no'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("cells", "phase2", "select", "confirm"))
    ap.add_argument("summaries", nargs="*")
    ap.add_argument("--half", choices=tuple(HALVES))
    args = ap.parse_args(argv)
    if args.what == "cells":
        print(",".join(cells(args.half)))
        return 0
    runs = load(args.summaries)
    if args.what == "phase2":
        print(",".join(phase2(runs)))
    elif args.what == "confirm":
        print(",".join(confirm(runs)))
    else:
        print(table(runs))
        name, vetoed = selected(runs)
        print(f"\nselected: `{name}`" + (" (vetoed: every cell was; reported as the best anyway)" if vetoed else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
