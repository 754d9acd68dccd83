"""The reading search's rule and report (experiments/reading_search.py, experiments/search_report.py) on made-up
summaries whose answer is known, and the committed pages in step with the committed summaries."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "experiments"))

import reading_search as rs  # noqa: E402
import search_report  # noqa: E402


def rows(finals, auc, start=0.26, unstable=0, seeds=(10, 11, 12), **extra):
    return [{"seed": s, "start": start, "final": f, "acc_auc": auc, "unstable_evals": unstable, **extra}
            for s, f in zip(seeds, finals)]


def test_the_rule_vetoes_then_ranks_by_auc_then_prefers_fewer_switches():
    runs = {
        "tepo": rows([0.0, 0.02, 0.4], 0.2),                                           # below start: vetoed
        "tepo:beta_mask=0": rows([0.5, 0.5, 0.5], 0.50, unstable=3),                   # 3 unstable: vetoed
        "tepo:ratio_clip=token_log": rows([0.6, 0.6, 0.6], 0.455),                     # 1 switch, within 0.01
        "tepo:ratio_clip=token_log+beta_mask=10": rows([0.6, 0.6, 0.6], 0.46),         # best AUC, 2 switches
        "tepo:eps_low=0.0003+eps_high=0.0004": rows([0.5, 0.5, 0.5], 0.40),
    }
    order = [name for name, _ in rs.rank(runs)]
    assert order[0] == "tepo:ratio_clip=token_log"          # within TIE of the best and one switch fewer
    assert order[1] == "tepo:ratio_clip=token_log+beta_mask=10"
    assert set(order[-2:]) == {"tepo", "tepo:beta_mask=0"}  # vetoed cells come last
    assert rs.selected(runs) == ("tepo:ratio_clip=token_log", False)
    assert rs.phase2(runs) == ["tepo:ratio_clip=token_log+dynamic_sampling=true",
                               "tepo:ratio_clip=token_log+beta_mask=10+dynamic_sampling=true"]
    runs["tepo:ratio_clip=token_log+dynamic_sampling=true"] = rows([0.7, 0.7, 0.7], 0.50)
    assert rs.selected(runs) == ("tepo:ratio_clip=token_log+dynamic_sampling=true", False)   # beyond TIE: AUC wins
    assert rs.confirm(runs) == ["tepo:ratio_clip=token_log+dynamic_sampling=true", "tepo:ratio_clip=token_log",
                                "tepo:ratio_clip=token_log+dynamic_sampling=true+beta_mask=0", "tepo", "grpo",
                                "dapo", "dapo:dynamic_sampling=false"]


def test_when_every_cell_is_vetoed_the_best_is_reported_as_vetoed():
    runs = {"tepo": rows([0.0, 0.0, 0.0], 0.1), "tepo:beta_mask=10": rows([0.1, 0.0, 0.0], 0.15)}
    assert rs.selected(runs) == ("tepo:beta_mask=10", True)


def test_a_reading_without_a_mask_is_confirmed_against_todays_mask():
    assert rs._flip_mask("tepo:eps_low=0.0003+eps_high=0.0004+beta_mask=0") == "tepo:eps_low=0.0003+eps_high=0.0004"
    assert rs._flip_mask("tepo:mask_action=gate") == "tepo:beta_mask=0"
    assert rs._flip_ds("tepo") == "tepo:dynamic_sampling=true" and rs._flip_ds("tepo:dynamic_sampling=true") == "tepo"


def _confirmation_rows(iters, final, entropy, unstable=0):
    return [{"seed": 20 + k, "iters_to_target": None if i > 100 else i, "iters_to_target_censored": i,
             "prompts_to_target_censored": 32 * i, "final": f, "acc_auc": f / 2, "entropy_min": e,
             "unstable_evals": unstable} for k, (i, f, e) in enumerate(zip(iters, final, entropy))]


def test_the_claim_tests_call_a_clear_win_supported_and_noise_not_distinguishable(tmp_path, monkeypatch):
    selected = "tepo:ratio_clip=token_log"
    for part in ("a", "b", "ds"):
        summary = {"runs": {selected: rows([0.6] * 3, 0.6)} if part == "a" else
                   {"tepo": rows([0.3] * 3, 0.3)} if part == "b" else {}}
        (tmp_path / f"select-{part}.json").write_text(json.dumps(summary))
    fast, slow = [40, 42, 44, 41, 43], [80, 82, 84, 81, 83]
    for task in ("countdown", "add"):
        runs = {selected: _confirmation_rows(fast, [0.7, 0.71, 0.69, 0.7, 0.72], [0.3, 0.31, 0.29, 0.3, 0.3]),
                "grpo": _confirmation_rows(slow, [0.6, 0.61, 0.59, 0.6, 0.62], [0.3, 0.29, 0.31, 0.3, 0.3]),
                "dapo:dynamic_sampling=false": _confirmation_rows(fast[::-1], [0.7, 0.72, 0.69, 0.7, 0.71],
                                                                  [0.31, 0.3, 0.29, 0.3, 0.3])}
        for extra in ("tepo", "tepo:ratio_clip=token_log+beta_mask=0", "tepo:ratio_clip=token_log+dynamic_sampling=true"):
            runs[extra] = runs["grpo"]
        (tmp_path / f"confirm-{task}.json").write_text(json.dumps({"runs": runs}))
    monkeypatch.setattr(search_report, "SEARCH", tmp_path)
    tests = {t["name"]: t for t in search_report.claim_tests(selected)}
    assert len(tests) == 16
    assert tests["add/grpo/speed"]["verdict"] == "supported"            # 40 iterations faster, tiny spread
    assert tests["add/grpo/accuracy"]["verdict"] == "supported"
    assert tests["add/grpo/entropy"]["verdict"] == "not distinguishable"
    assert tests["countdown/dapo:dynamic_sampling=false/speed"]["verdict"] == "not distinguishable"
    assert all(t["p_holm"] >= t["test"]["p"] for t in tests.values() if t["test"] is not None)
    blocks = search_report.blocks()
    assert {"selection", "selected-summary", "confirm-countdown", "confirm-add", "claims", "descriptive"} <= set(blocks)
    assert "| speed | " in blocks["claims"] and "supported" in blocks["claims"]
    page = "a\n<!-- BEGIN claims -->\nold\n<!-- END claims -->\nb\n<!-- BEGIN unknown -->\nkept\n<!-- END unknown -->\n"
    rendered = search_report.render(page, blocks)
    assert blocks["claims"] in rendered and "old" not in rendered and "kept" in rendered   # no data: left alone


def test_the_committed_pages_match_the_committed_summaries():
    assert search_report.main(["--check"]) == 0, "run: python3 experiments/search_report.py"


@pytest.mark.parametrize("bad", ["tepo:nonsense=1", "ppo"])
def test_a_cell_label_that_is_not_an_entry_is_refused(bad):
    with pytest.raises(ValueError):
        rs.describe(bad)
