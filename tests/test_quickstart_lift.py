"""docs/quickstart-lift.md (issue 29): its results block is what the committed summary gives, the summary's pick is
the one its selection rule names, and the quickstart runs the picked setting."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

import quickstart_lift as lift  # noqa: E402

from minitepo.lab.quickstart import QuickstartConfig  # noqa: E402

SUMMARY = json.loads(lift.SUMMARY.read_text())


def test_the_page_is_what_the_committed_summary_gives():
    assert lift.main(["doc", "--check"]) == 0


def test_the_pick_is_the_rules():
    arms = SUMMARY["arms"]
    assert all(a["n"] >= 10 and a["n"] == len(SUMMARY["seeds"]) for a in arms.values())
    for a in arms.values():  # the counts are recomputed from the per-seed rows
        assert a["n"] == len(a["after"])
    for name, runs in SUMMARY["runs"].items():
        met = sum(r["before"] <= 0.40 and r["after"] >= lift.TARGET for r in runs)
        assert met == arms[name]["met"], name
    eligible = [n for n, a in arms.items() if a["time_ratio"] <= 1.15]
    best = max(eligible, key=lambda n: (arms[n]["met"], arms[n]["median_after"]))
    assert SUMMARY["pick"] == best and (arms[best]["met"], arms[best]["median_after"]) > (
        arms["today"]["met"], arms["today"]["median_after"])


def test_the_quickstart_runs_the_picked_setting():
    assert lift.ARMS[SUMMARY["pick"]] == {"lr": QuickstartConfig().rl_lr} == {"lr": lift.QUICKSTART_LR}
