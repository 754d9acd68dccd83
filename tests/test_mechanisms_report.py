"""research/mechanisms/README.md: its tables are what research/mechanisms/mechanisms.py computes from the committed summaries, and the
pre-registered tests read their verdicts the way the protocol says."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "research" / "mechanisms"))

import mechanisms as mech  # noqa: E402

from minitepo.lab.compare import parse_entry  # noqa: E402
from minitepo.lab.rl_config import RLConfig  # noqa: E402


def test_the_page_is_what_the_committed_summaries_give():
    assert mech.main(["report", "--check"]) == 0


def test_every_arm_is_a_valid_compare_entry_and_the_arms_of_an_experiment_share_recipe_shaping_and_kl():
    for name, experiment in mech.EXPERIMENTS.items():
        readings = []
        for entry in experiment["arms"].values():
            e = parse_entry(entry)
            readings.append(RLConfig(algo=e.algo, **dict(e.overrides)).resolved_reading())
        for key in ("dynamic_sampling", "overlong_shaping", "kl_ref"):
            assert len({r[key] for r in readings}) == 1, (name, key, readings)
    for test in mech.TESTS:
        assert test[3] in mech.EXPERIMENTS[test[1]]["arms"] and test[4] in mech.EXPERIMENTS[test[1]]["arms"]
    assert set(mech.DROP_ORDER) <= {a for e in mech.EXPERIMENTS.values() for a in e["arms"]}


def test_a_verdict_needs_the_holm_adjusted_p_and_the_predicted_sign():
    up, down = {"diff": 0.1}, {"diff": -0.1}
    assert mech.verdict(+1, up, 0.01) == "supported" and mech.verdict(+1, down, 0.01) == "contradicted"
    assert mech.verdict(+1, up, 0.2) == "not distinguishable"
    assert mech.verdict(0, up, 0.01).startswith("distinguishable") and "not shown" in mech.verdict(0, up, 0.3)


def test_long_form_accuracy_is_the_steps_share_times_the_steps_accuracy_and_tests_are_holm_corrected(tmp_path,
                                                                                                      monkeypatch):
    arms = mech.EXPERIMENTS["aggregation"]["arms"]
    def rows(share, acc, final):
        return [{"seed": s, "final_form_share_steps": share + 0.01 * s, "final_form_acc_steps": acc, "final": final
                 + 0.01 * (s % 3)} for s in range(8)]
    runs = {arms["A1"]: rows(0.8, 0.9, 0.8), arms["A2"]: rows(0.3, 0.9, 0.8), arms["A3"]: rows(0.8, 0.9, 0.81),
            arms["A4"]: rows(0.8, 0.9, 0.8)}
    (tmp_path / "aggregation.json").write_text(json.dumps({"config": {}, "runs": runs}))
    monkeypatch.setattr(mech, "DATA", tmp_path)
    data = mech.load("aggregation")
    assert data["arms"]["A1"][2]["long_right"] == pytest.approx((0.8 + 0.02) * 0.9)
    tests = {r["name"]: r for r in mech.test_rows()}
    assert set(tests) == {"A-H1 token ratio", "A-H1 TEPO ratio", "A-H2 ratio"}   # the mask experiment is not there
    assert tests["A-H1 token ratio"]["verdict"] == "supported"
    assert tests["A-H1 TEPO ratio"]["verdict"] == "not distinguishable"            # identical arms
    assert all(r["adjusted_p"] >= r["test"]["p"] for r in tests.values())
