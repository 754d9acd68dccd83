"""The reading search's rule and report (research/reading-search/reading_search.py, research/reading-search/search_report.py) on made-up
summaries whose answer is known, and the committed pages in step with the committed summaries."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "research" / "reading-search"))
sys.path.insert(0, str(ROOT / "research" / "quickstart-lift"))

import reading_search as rs  # noqa: E402
import search_report  # noqa: E402

from minitepo.lab.stats import min_detectable_effect, min_detectable_effect_of, t_sf, welch_df  # noqa: E402


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
    return [{"seed": 20 + k, "start": 0.2, "iters_to_target": None if i > 100 else i, "iters_to_target_censored": i,
             "prompts_to_target_censored": 32 * i, "final": f, "acc_auc": f / 2, "entropy_start": e + 0.3 + k / 100,
             "entropy_min": e, "unstable_evals": unstable} for k, (i, f, e) in enumerate(zip(iters, final, entropy))]


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
    assert {"selection", "selected-summary", "confirm-countdown", "confirm-add", "claims", "descriptive", "labels",
            "prompts", "entropy-rows", "entropy-verdicts", "speed-mde", "commands-today"} <= set(blocks)
    assert "vacuous" in blocks["claims"]                                   # every run 0 unstable evaluations
    assert "| speed | " in blocks["claims"] and "supported" in blocks["claims"]
    page = "a\n<!-- BEGIN claims -->\nold\n<!-- END claims -->\nb\n<!-- BEGIN unknown -->\nkept\n<!-- END unknown -->\n"
    rendered = search_report.render(page, blocks)
    assert blocks["claims"] in rendered and "old" not in rendered and "kept" in rendered   # no data: left alone


def test_the_committed_pages_match_the_committed_summaries():
    assert search_report.main(["--check"]) == 0, "run: python3 research/reading-search/search_report.py"


@pytest.mark.parametrize("bad", ["tepo:nonsense=1", "ppo"])
def test_a_cell_label_that_is_not_an_entry_is_refused(bad):
    with pytest.raises(ValueError):
        rs.describe(bad)


# --------------------------------------------------------------------------- what each recorded label ran

# Written out by hand from the defaults of the time (tepo: sequence clip 0.2/0.28 on s_i, k3 mask beta_M 1, no
# dynamic sampling; grpo: KL 0.04 to the warm start, seq-mean-token-mean; dapo: dynamic sampling and overlong
# shaping) and today's (tepo: token_log +-0.4 with dynamic sampling): recorded label -> (what ran, today's entry).
EXPECTED = {
    "tepo": ("TEPO, s_i 0.2/0.28, mask k3 β_M 1, DS off", "tepo:ratio_clip=sequence+dynamic_sampling=false"),
    "tepo:ratio_clip=token_log": ("TEPO, token_log ±0.4, mask k3 β_M 1, DS off", "tepo:dynamic_sampling=false"),
    "tepo:ratio_clip=token_log+dynamic_sampling=true": ("TEPO, token_log ±0.4, mask k3 β_M 1, DS on", "tepo"),
    "tepo:ratio_clip=token_log+dynamic_sampling=true+beta_mask=0": ("TEPO, token_log ±0.4, no mask, DS on",
                                                                    "tepo:beta_mask=0"),
    "tepo:eps_low=0.0003+eps_high=0.0004+beta_mask=0+dynamic_sampling=true": (
        "TEPO, s_i 3e-4/4e-4, no mask, DS on", "tepo:ratio_clip=sequence+eps_low=0.0003+eps_high=0.0004+beta_mask=0"),
    "tepo:mask_action=gate": ("TEPO, s_i 0.2/0.28, gate mask, DS off",
                              "tepo:ratio_clip=sequence+mask_action=gate+dynamic_sampling=false"),
    "grpo": ("GRPO, token ratio 0.2/0.2, KL β 0.04 (k3) to the warm start, seq-mean-token-mean, DS off", "grpo"),
    "dapo": ("DAPO, token ratio 0.2/0.28, DS on, overlong shaping", "dapo"),
    "dapo:dynamic_sampling=false": ("DAPO, token ratio 0.2/0.28, DS off, overlong shaping", "dapo:dynamic_sampling=false"),
}


@pytest.mark.parametrize("label", sorted(EXPECTED))
def test_a_recorded_label_is_named_by_what_ran_and_rewritten_for_todays_defaults(label):
    ran, today = EXPECTED[label]
    assert search_report.ran_label(label) == ran, (label, search_report.ran_label(label), ran)
    assert search_report.today_entry(label) == today, (label, search_report.today_entry(label), today)


def test_every_committed_label_resolves_and_today_entry_runs_the_same_settings():
    labels = search_report.recorded_labels()
    assert len(labels) == 18                                   # 14 selection cells + grpo, dapo, dapo without DS + tepo
    for label in labels:
        ran = search_report.what_ran(label)
        if ran["algo"] == "tepo":                              # the rule's own reading of the label agrees
            d = rs.describe(label)
            assert (d["clip"], d["mask"], d["ds"]) == (search_report._clip(ran), search_report._mask(ran),
                                                       ran["dynamic_sampling"]), label
        today = search_report.today_settings(search_report.today_entry(label))
        for key in search_report._relevant(ran):
            assert today[key] == ran[key], f"{label}: {key} runs {today[key]!r} today, ran {ran[key]!r}"
    names = [search_report.ran_label(label) for label in labels]
    assert len(set(names)) == len(names), "two recorded labels would read the same"


def test_a_label_with_a_setting_the_record_does_not_know_is_refused():
    with pytest.raises(ValueError, match="not among the recorded settings"):
        search_report.what_ran("tepo:lr=0.1")
    with pytest.raises(ValueError, match="no recorded defaults"):
        search_report.what_ran("gspo")


def test_the_today_command_translates_a_list():
    assert search_report.main(["today", "tepo,grpo"]) == 0


# --------------------------------------------------------------------------- the minimum detectable effect


def test_the_mde_matches_a_hand_computed_case():
    # n = 5 and 5 with equal SDs of 1: Welch df = 8 exactly; t_{0.975, 8} = 2.306004, t_{0.80, 8} = 0.888890
    # (tables), so MDE = 3.194894 * sqrt(1/5 + 1/5) = 2.020625
    got = min_detectable_effect(1.0, 5, 1.0, 5, alpha=0.05)
    assert abs(got - 2.020625) < 1e-4, f"MDE {got} against 2.020625 by hand"
    assert abs(welch_df(1.0, 5, 1.0, 5) - 8.0) < 1e-12
    assert min_detectable_effect(0.0, 5, 0.0, 5) is None                    # no spread: nothing to detect with
    assert min_detectable_effect_of([1, 2, 3], [1, 2, 3]) == min_detectable_effect(1.0, 3, 1.0, 3)
    with pytest.raises(ValueError):
        min_detectable_effect(1.0, 1, 1.0, 5)


def _welch_power(effect, sd_a, sd_b, n, alpha, draws, seed):
    """The share of simulated experiments whose two-sided Welch p is <= alpha, by direct sampling."""
    import random
    rng = random.Random(seed)
    hits = 0
    for _ in range(draws):
        a = [rng.gauss(effect, sd_a) for _ in range(n)]
        b = [rng.gauss(0.0, sd_b) for _ in range(n)]
        ma, mb = sum(a) / n, sum(b) / n
        va = sum((x - ma) ** 2 for x in a) / (n - 1) / n
        vb = sum((x - mb) ** 2 for x in b) / (n - 1) / n
        df = (va + vb) ** 2 / (va ** 2 / (n - 1) + vb ** 2 / (n - 1))
        hits += 2.0 * t_sf(abs(ma - mb) / (va + vb) ** 0.5, df) <= alpha
    return hits / draws


def test_at_the_mde_a_simulated_welch_test_has_about_80_percent_power():
    # 30 runs a side at alpha 0.05: the approximation holds (simulated power 0.80 +- 0.03)
    effect = min_detectable_effect(1.0, 30, 2.0, 30, alpha=0.05)
    got = _welch_power(effect, 1.0, 2.0, 30, 0.05, draws=3000, seed=1)
    assert abs(got - 0.80) < 0.03, f"simulated power at the MDE {got:.3f}, expected 0.80"
    # five a side at alpha / 16 (the claim tests): the approximation is optimistic, so the MDE is a lower bound
    effect = min_detectable_effect(1.0, 5, 2.0, 5, alpha=0.05 / 16)
    got = _welch_power(effect, 1.0, 2.0, 5, 0.05 / 16, draws=3000, seed=2)
    assert 0.6 < got < 0.8, f"simulated power at the five-seed MDE {got:.3f}, expected a little under 0.80"


# --------------------------------------------------------------------------- the review's numbers, from the summaries


def test_the_reviews_numbers_follow_from_the_committed_summaries():
    selected, _ = rs.selected(search_report.selection_runs())
    entropy = {(e["task"], e["baseline"]): e for e in search_report.entropy_rows(selected)}
    add, countdown = entropy["add", "grpo"], entropy["countdown", "grpo"]
    assert round(add["offset"], 3) == -0.047 and round(add["gap"], 3) == -0.036
    assert (round(add["drop_s"], 3), round(add["drop_b"], 3)) == (0.130, 0.141)
    assert round(countdown["gap"], 2) == -0.21 and round(countdown["offset"], 3) == -0.031
    prompts = {(t["task"], t["baseline"]): t for t in search_report.prompt_tests(selected)}
    for (task, diff, p) in (("countdown", 2016, 0.014), ("add", 1670, 0.004)):
        w = prompts[task, "grpo"]["test"]
        assert (round(w["diff"]), round(w["p"], 3)) == (diff, p), (task, w)
    tests = search_report.claim_tests(selected)
    assert all(t["note"].startswith("vacuous") for t in tests if t["claim"] == "stability")
    notes = {t["name"]: t["note"] for t in tests if t["claim"] == "entropy" and t["baseline"] == "grpo"}
    assert notes["add/grpo/entropy"].startswith("trained-rows artifact")
    assert not notes["countdown/grpo/entropy"].startswith("trained-rows artifact")


def test_every_generated_block_is_on_a_page():
    pages = "".join(page.read_text() for page in search_report.PAGES if page.is_file())
    missing = [name for name in search_report.blocks() if f"<!-- BEGIN {name} -->" not in pages]
    assert not missing, f"generated but on no page: {missing}"
