"""research/quickstart-lift/README.md (issue 29, finished): every block of the page is what the committed summaries
give (report.py), each round's pick and verdict follows from its committed rows by its rule (rules.py, recomputed here
where a test can say the rule more plainly), and the quickstart runs the picks whose confirmation held."""
from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "research" / "quickstart-lift"))

import report  # noqa: E402
import rules  # noqa: E402
from rules import ARMS, FIRST, IDLE, TARGET, confirmation, seeds, summary  # noqa: E402

from minitepo.lab.quickstart import WARM_START_RULES, QuickstartConfig, rl_stage  # noqa: E402

STUDY = summary("study.json")
ROUNDS = {n: summary(f"round{n}.json") for n in range(2, 11)}


def at_target(rows: list[dict]) -> int:
    return sum(r["before"] <= 0.40 and r["after"] >= TARGET for r in rows)


# -- the page ------------------------------------------------------------------------------------------------

def test_every_block_of_the_page_is_what_the_committed_summaries_give():
    assert report.main(["--check"]) == 0


def test_the_check_names_the_stale_block_and_leaves_the_page(tmp_path, monkeypatch, capsys):
    page = tmp_path / "README.md"
    stale = report.PAGE.read_text().replace("16 of 20** seeds went", "15 of 20** seeds went", 1)
    page.write_text(stale)
    monkeypatch.setattr(report, "PAGE", page)
    assert report.main(["--check"]) == 1 and "stale blocks: confirmation;" in capsys.readouterr().out
    assert page.read_text() == stale
    assert report.main([]) == 0 and page.read_text() == (ROOT / "research/quickstart-lift/README.md").read_text()


def test_a_block_that_nothing_writes_is_an_error():
    page = report.PAGE.read_text() + "\n<!-- BEGIN orphan -->\n<!-- END orphan -->\n"
    try:
        report.regenerate(page)
    except SystemExit as e:
        assert "orphan" in str(e)
    else:
        raise AssertionError("a block report.py does not write passed")


def test_the_accepted_result_is_the_sixth_rounds_confirmation_as_the_first_paragraph_says():
    """The one pick that held on seeds 0-19 is the sixth round's; its confirmation is the README's seed table."""
    assert rules.held(6) and not any(rules.held(n) for n in (2, 4, 5, 8))
    met, median = rules.ordering(seeds(confirmation(6)))
    first_paragraph = report.PAGE.read_text().split("\n\n")[1]
    assert f"{met} of 20" in first_paragraph and report.pct(median) in first_paragraph and (met, median) == (17, 0.935)
    assert "no more rounds" in first_paragraph


# -- the first round ------------------------------------------------------------------------------------------

def test_the_first_rounds_pick_is_its_rule():
    arms = STUDY["arms"]
    assert all(a["n"] >= 10 and a["n"] == len(STUDY["seeds"]) == len(a["after"]) for a in arms.values())
    for name, runs in STUDY["runs"].items():   # the counts are recomputed from the per-seed rows
        assert at_target(runs) == arms[name]["met"], name
    eligible = [n for n, a in arms.items() if a["time_ratio"] <= 1.15]
    best = max(eligible, key=lambda n: (arms[n]["met"], arms[n]["median_after"]))
    assert STUDY["pick"] == best and (arms[best]["met"], arms[best]["median_after"]) > (
        arms["today"]["met"], arms["today"]["median_after"])


def test_the_quickstart_runs_the_first_rounds_pick():
    assert ARMS[1][STUDY["pick"]] == {"lr": QuickstartConfig().rl_lr} == {"lr": 6e-4}
    assert report.first_lr() == "lr 6e-4"   # what its confirmation says it ran


# -- the second round --------------------------------------------------------------------------------------------

def test_the_second_rounds_pick_is_its_rules():
    result = ROUNDS[2]
    arms = result["arms"]
    assert len(result["seeds"]) >= 8 and all(a["n"] == len(result["seeds"]) for a in arms.values())
    for name, runs in result["runs"].items():   # counts, medians and time ratios recomputed from the per-seed rows
        assert at_target(runs) == arms[name]["met"], name
        assert statistics.median(r["after"] for r in runs) == arms[name]["median_after"], name
    base = result["runs"]["base"]
    for name, runs in result["runs"].items():
        warm = statistics.median(r["warm"]["steps"] for r in runs) / statistics.median(r["warm"]["steps"] for r in base)
        rl = (statistics.median(r["step_seconds"] for r in runs)
              / statistics.median(r["step_seconds"] for r in base))
        assert arms[name]["eligible"] == (round(warm, 3) <= rules.TIME_LIMIT and round(rl, 3) <= rules.TIME_LIMIT)
    eligible = [n for n, a in arms.items() if a["eligible"]]
    best = max(eligible, key=lambda n: (arms[n]["met"], arms[n]["median_after"]))
    beats = (arms[best]["met"], arms[best]["median_after"]) > (arms["base"]["met"], arms["base"]["median_after"])
    assert result["pick"] == (best if beats else "base")


def test_the_quickstart_runs_the_second_rounds_pick_only_if_its_confirmation_held():
    """The pick changes only the warm start's peak lr (3e-3); it stays the default only if its confirmation on seeds
    0-19 is at least as good as the first round's (it was not: the quickstart kept the core's 2e-3)."""
    pick = ROUNDS[2]["pick"]
    assert ARMS[2][pick] == {} and rules.WARM_ARMS[2][pick] == {"lr": 3e-3}
    holds = rules.confirmation_holds(seeds(FIRST), seeds(confirmation(2)))
    assert holds == rules.held(2)
    expected = 3e-3 if holds else WARM_START_RULES["compare"].lr
    assert QuickstartConfig().sft_lr == WARM_START_RULES["quickstart"].lr == expected


# -- the third round, and the cheaper settle check --------------------------------------------------------------

def test_the_third_rounds_pick_is_its_rules():
    result = ROUNDS[3]
    arms, runs = result["arms"], result["runs"]
    assert len(result["seeds"]) >= 10 and all(len(r) == len(result["seeds"]) for r in runs.values())
    for name, rows in runs.items():   # counts, medians and costs recomputed from the per-seed rows
        assert [r["seed"] for r in rows] == result["seeds"], name
        assert at_target(rows) == arms[name]["met"], name
        assert statistics.median(r["after"] for r in rows) == arms[name]["median_after"], name
        cost = statistics.median(r["responses"] for r in rows) / statistics.median(r["responses"] for r in runs["base"])
        assert arms[name]["eligible"] == (round(cost, 3) <= rules.COST_LIMIT), name
    assert all(r["before"] == b["before"] for rows in runs.values() for r, b in zip(rows, runs["base"]))  # same starts
    eligible = [n for n in ARMS[3] if arms[n]["eligible"]]
    best = max(eligible, key=lambda n: (arms[n]["met"], arms[n]["median_after"])) if eligible else "base"
    beats = (arms[best]["met"], arms[best]["median_after"]) > (arms["base"]["met"], arms["base"]["median_after"])
    assert result["pick"] == (best if beats else "base")


def test_the_cheaper_settle_check_is_in_place_only_if_the_idle_run_gave_every_seed_unchanged():
    """The teacher-forced settle check stays only if the README's command then gives every seed of 0-19 exactly as
    the first round's confirmation did (warm-start steps, accuracy before and after)."""
    import minitepo.lab.sft_run as sft_run
    first, idle = seeds(FIRST), seeds(IDLE)
    assert [r["seed"] for r in idle] == list(range(20))
    unchanged = all(a[k] == b[k] for a, b in zip(first, idle) for k in ("warm_steps", "before", "after"))
    assert unchanged == (rules.differing(first, idle) == []) == hasattr(sft_run, "settle_accuracy")


# -- the fourth round and later: the third round's rule ------------------------------------------------------------

def check_the_rule(summary_: dict, new_arms, base_rows: list[dict] | None = None) -> None:
    """The third round's rule, recomputed from a round's per-seed rows (the fourth round's and later): counts,
    medians, eligibility on cost, the same warm starts, the pick. Base's rows are ``base_rows`` (by default the
    third round's)."""
    arms, runs = summary_["arms"], summary_["runs"]
    assert len(summary_["seeds"]) >= 10 and set(runs) == {"base", *new_arms}
    earlier = {r["seed"]: r for r in (base_rows or ROUNDS[3]["runs"]["base"])}
    assert [(r["before"], r["after"]) for r in runs["base"]] == [(earlier[s]["before"], earlier[s]["after"])
                                                                  for s in summary_["seeds"]]
    for name, rows in runs.items():
        assert [r["seed"] for r in rows] == summary_["seeds"], name
        assert at_target(rows) == arms[name]["met"], name
        assert statistics.median(r["after"] for r in rows) == arms[name]["median_after"], name
        cost = statistics.median(r["responses"] for r in rows) / statistics.median(r["responses"] for r in runs["base"])
        assert arms[name]["eligible"] == (round(cost, 3) <= rules.COST_LIMIT), name
        assert all(r["before"] == b["before"] for r, b in zip(rows, runs["base"])), name   # the same warm starts
    eligible = [n for n in new_arms if arms[n]["eligible"]]
    best = max(eligible, key=lambda n: (arms[n]["met"], arms[n]["median_after"])) if eligible else "base"
    beats = (arms[best]["met"], arms[best]["median_after"]) > (arms["base"]["met"], arms["base"]["median_after"])
    assert summary_["pick"] == (best if beats else "base")


def test_the_fourth_rounds_pick_is_its_rules():
    check_the_rule(ROUNDS[4], ARMS[4])


def test_the_quickstart_has_the_kl_to_the_warm_start_only_if_the_fourth_rounds_confirmation_held():
    """The pick (kl0.04) stays only if its confirmation on seeds 0-19 is at least as good as the first round's and
    its median wall time per seed is within 1.10x the idle run's."""
    from minitepo.lab.quickstart import QUICKSTART_BETA
    fourth = seeds(confirmation(4))
    assert ROUNDS[4]["pick"] == "kl0.04" and ARMS[4]["kl0.04"] == {"beta": 0.04}
    assert [r["seed"] for r in fourth] == list(range(20))
    holds = rules.confirmation_holds(seeds(FIRST), fourth, seeds(IDLE))
    assert holds == rules.held(4)
    expected = 0.04 if holds else 0.0
    assert QuickstartConfig().beta == QUICKSTART_BETA == expected
    assert rl_stage(QuickstartConfig(), "somewhere/checkpoint.pt").beta == expected


def test_a_confirmations_time_rule_reads_the_median_wall_time():
    rows = [{"seed": s, "before": 0.3, "after": 0.9, "wall_s": w} for s, w in enumerate((100.0, 110.0, 120.0))]
    slower = [r | {"wall_s": r["wall_s"] * 1.11} for r in rows]
    within = [r | {"wall_s": r["wall_s"] * 1.09} for r in rows]
    assert rules.confirmation_holds(rows, within, rows) and not rules.confirmation_holds(rows, slower, rows)
    worse = [r | {"after": 0.7} if r["seed"] == 0 else r for r in within]
    assert not rules.confirmation_holds(rows, worse, rows)
    assert rules.confirmation_holds(rows, slower)   # without a clock (the second round's rule) time does not count


def test_the_fifth_rounds_pick_is_its_rules():
    check_the_rule(ROUNDS[5], ARMS[5])


def test_the_sign_test_is_the_binomial_tail_counted_by_hand():
    """Against the distribution of n fair coin flips built one flip at a time: the chance of a split at least as
    uneven as the one seen."""
    for up, down in [(18, 2), (2, 18), (15, 5), (10, 10), (3, 0), (0, 0), (7, 4), (11, 9)]:
        n, chances = up + down, [1.0]
        for _ in range(n):   # chances[k]: the chance of k heads so far
            chances = [(chances[k] if k < len(chances) else 0.0) / 2 + (chances[k - 1] if k else 0.0) / 2
                       for k in range(len(chances) + 1)]
        tail = sum(c for k, c in enumerate(chances) if abs(2 * k - n) >= abs(up - down))
        assert math.isclose(rules.sign_test(up, down), min(1.0, tail)), (up, down)
    assert math.isclose(rules.sign_test(18, 2), 0.0004025, rel_tol=1e-3)   # g16's split in the fourth round


def test_the_sixth_rounds_pick_is_its_rules_and_its_g4_rows_are_the_fifth_rounds():
    check_the_rule(ROUNDS[6], ARMS[6])
    fifth = {r["seed"]: r for r in ROUNDS[5]["runs"]["g4"]}
    assert [(r["before"], r["after"], r["responses"]) for r in ROUNDS[6]["runs"]["g4"]] == \
        [(fifth[s]["before"], fifth[s]["after"], fifth[s]["responses"]) for s in ROUNDS[6]["seeds"]]


def test_the_sixth_rounds_arms_are_g4_with_one_change_each():
    g4 = ARMS[5]["g4"]
    assert ARMS[6]["g4"] == g4
    for name in ("g4-i200", "g4-r2"):
        changed = {k: v for k, v in ARMS[6][name].items() if g4.get(k) != v}
        assert len(changed) == 1, (name, changed)


def test_the_quickstarts_rl_settings_are_the_first_rounds_with_each_pick_whose_confirmation_held():
    """The fifth and sixth rounds' picks become the quickstart's only if their confirmation on seeds 0-19 is at least
    as good as the first round's and its median wall time per seed is within 1.10x the idle run's; otherwise the
    quickstart keeps the settings the earlier rounds ran (``rules.AS_RAN``)."""
    expected, held = dict(rules.AS_RAN), []
    for number in (5, 6):
        new = seeds(confirmation(number))
        assert [r["seed"] for r in new] == list(range(20)), number
        holds = rules.confirmation_holds(seeds(FIRST), new, seeds(IDLE))
        assert holds == rules.held(number)
        if holds:
            expected |= ARMS[number][ROUNDS[number]["pick"]]
            held.append(number)
    assert (ROUNDS[5]["pick"], ROUNDS[6]["pick"]) == ("p64", "g4-r2") and held == [6]
    stage = rl_stage(QuickstartConfig(), "somewhere/checkpoint.pt")
    assert {name: getattr(stage, name) for name in expected} == expected, f"rounds whose pick held: {held}"


# -- the seventh round -------------------------------------------------------------------------------------------

def test_the_seventh_rounds_pick_is_its_rules_and_its_base_rows_are_the_sixth_rounds_g4_r2():
    check_the_rule(ROUNDS[7], ARMS[7], base_rows=ROUNDS[6]["runs"]["g4-r2"])
    assert ROUNDS[7]["pick"] == "base"


def test_the_seventh_rounds_arms_are_todays_quickstart_with_one_change_each():
    """Its base is the sixth round's pick, which is what the quickstart runs (the test above ties that to the sixth
    round's confirmation), and each arm changes one RL setting of it."""
    assert rules.BASE == ARMS[6]["g4-r2"]
    today = rl_stage(QuickstartConfig(), "somewhere/checkpoint.pt")
    assert today == rl_stage(QuickstartConfig(**rules.AS_RAN), "somewhere/checkpoint.pt", **rules.BASE)
    for name, arm in ARMS[7].items():
        changed = {k: v for k, v in arm.items() if rules.BASE.get(k) != v}
        assert len(changed) == 1, (name, changed)
        (field, value), = changed.items()
        assert getattr(today, field) != value, name


# -- the eighth and ninth rounds: a warm start's change ------------------------------------------------------------

def warm_start_rounds_pick(summary_: dict, new_arms) -> str:
    """The third round's rule with the eighth's second cost limit (warm-start steps), recomputed from a round's rows,
    after checking that its base rows are the sixth round's g4-r2 runs on the same seeds (rounds 8 and 9)."""
    arms, runs, seeds_ = summary_["arms"], summary_["runs"], summary_["seeds"]
    assert seeds_ == list(range(100, 100 + len(seeds_))) and len(seeds_) >= 10 and set(runs) == {"base", *new_arms}
    sixth = {r["seed"]: r for r in ROUNDS[6]["runs"]["g4-r2"]}
    assert [(r["before"], r["after"]) for r in runs["base"]] == [(sixth[s]["before"], sixth[s]["after"])
                                                                  for s in seeds_]

    def ratio(name, value):
        return round(statistics.median(map(value, runs[name])) / statistics.median(map(value, runs["base"])), 3)
    for name, rows in runs.items():
        assert [r["seed"] for r in rows] == seeds_, name
        assert at_target(rows) == arms[name]["met"], name
        assert statistics.median(r["after"] for r in rows) == arms[name]["median_after"], name
        assert arms[name]["eligible"] == (ratio(name, lambda r: r["responses"]) <= rules.COST_LIMIT
                                          and ratio(name, lambda r: r["warm"]["steps"]) <= rules.WARM_LIMIT), name
    eligible = [n for n in new_arms if arms[n]["eligible"]]
    best = max(eligible, key=lambda n: (arms[n]["met"], arms[n]["median_after"])) if eligible else "base"
    beats = (arms[best]["met"], arms[best]["median_after"]) > (arms["base"]["met"], arms["base"]["median_after"])
    return best if beats else "base"


def test_the_eighth_rounds_pick_is_its_rule_and_its_base_rows_are_the_sixth_rounds_g4_r2():
    assert ROUNDS[8]["pick"] == warm_start_rounds_pick(ROUNDS[8], ARMS[8]) == "settle0.35"


def test_the_eighth_rounds_warm_starts_are_todays_trained_on_until_35_percent():
    """Up to the step that reaches 30% the new warm start is today's: it never stops earlier, and where today's
    already began RL at 35% or more it is the same checkpoint, so the same RL run ends at the same accuracy."""
    runs, same = ROUNDS[8]["runs"], 0
    settle_at = rules.WARM_ARMS[8]["settle0.35"]["settle_at"]
    for today, new in zip(runs["base"], runs["settle0.35"]):
        assert new["warm"]["steps"] >= today["warm"]["steps"], today["seed"]
        if today["before"] >= settle_at:
            assert (new["warm"]["steps"], new["before"], new["after"]) == \
                (today["warm"]["steps"], today["before"], today["after"]), today["seed"]
            same += 1
    assert same >= 3


def test_the_eighth_and_ninth_rounds_arms_run_todays_rl_stage():
    for arms in (ARMS[8], ARMS[9]):
        (arm,) = arms.values()
        assert rl_stage(QuickstartConfig(**rules.AS_RAN), "x", **arm) == rl_stage(QuickstartConfig(), "x")


def test_the_quickstarts_warm_start_stops_at_35_percent_only_if_the_eighth_rounds_confirmation_held():
    """The eighth round's confirmation rule: at least as good as the sixth round's confirmation (today's quickstart
    before it) on seeds at target, then the median, and its median wall time per seed within 1.10x of that same
    run's; otherwise the warm start goes back to the 30% the earlier rounds ran (``rules.WARM_AS_RAN``)."""
    today, new = seeds(confirmation(6)), seeds(confirmation(8))
    assert [r["seed"] for r in new] == list(range(20))
    holds = rules.confirmation_holds(today, new, today)
    assert holds == rules.held(8) and not holds   # 16 of 20 against 17 of 20
    expected = rules.WARM_ARMS[8]["settle0.35"]["settle_at"] if holds else rules.WARM_AS_RAN["settle_at"]
    assert QuickstartConfig().settle_at == WARM_START_RULES["quickstart"].settle_at == expected


def test_the_ninth_rounds_pick_is_the_eighth_rounds_rule_on_its_rows():
    assert ROUNDS[9]["pick"] == warm_start_rounds_pick(ROUNDS[9], ARMS[9])


def test_the_ninth_rounds_warm_starts_were_checked_on_3_digit_prompts_only():
    assert rules.WARM_ARMS[9] == {"sft-l3": {"levels": "3"}}
    for row in ROUNDS[9]["runs"]["sft-l3"]:
        assert set(row["warm"]["accuracy"]) == {"all", "level/3"}
        assert row["warm"]["accuracy"]["level/3"] == row["before"]


def test_the_ninth_rounds_hole_scores_are_the_looks_for_base_and_the_new_warm_starts_own():
    arms, seeds_ = ROUNDS[9]["arms"], ROUNDS[9]["seeds"]
    looked = {r["seed"]: r["hole_score"] for r in summary("holes.json")["rows"]}
    assert arms["base"]["hole_scores"] == [looked[s] for s in seeds_]
    assert arms["sft-l3"]["hole_scores"] == [r["warm"]["hole_score"] for r in ROUNDS[9]["runs"]["sft-l3"]]
    for a in arms.values():
        assert a["warm_starts_with_a_hole"] == sum(v < rules.HOLE for v in a["hole_scores"])


# -- the look at the warm starts' hole scores ---------------------------------------------------------------------

def test_the_auc_counts_failing_runs_scored_below_passing_ones_by_hand():
    assert rules.auc([0.1], [0.5, 0.6]) == 1.0
    assert rules.auc([0.7], [0.5, 0.6]) == 0.0
    assert rules.auc([0.1, 0.55], [0.5, 0.6]) == 0.75   # 0.1 below both, 0.55 below 0.6 only: 3 of 4 pairs
    assert rules.auc([0.5], [0.5, 0.6]) == 0.75          # a tie counts half


def test_the_auc_p_is_the_exact_permutation_tail():
    # 3 failing of 20, perfectly separated: only one of C(20, 3) = 1140 choices of failing runs does as well
    scores = [i / 20 for i in range(20)]
    assert rules.auc_p(scores, [i < 3 for i in range(20)]) == 1 / 1140
    # the failing runs scored highest: every choice does at least as well
    assert rules.auc_p(scores, [i >= 17 for i in range(20)]) == 1.0


def test_the_hole_score_is_the_lowest_class_with_enough_prompts():
    classes = {"t0": {"p": 0.01, "n": rules.MIN_CLASS - 1}, "t5": {"p": 0.3, "n": 100},
               "h10": {"p": 0.2, "n": rules.MIN_CLASS}}
    assert rules.hole_score(classes) == (0.2, "h10")


def test_the_look_at_the_holes_is_what_its_committed_rows_give():
    result = summary("holes.json")
    for which, seeds_ in rules.HOLE_SETS.items():
        rows = [r for r in result["rows"] if r["set"] == which]
        assert sorted(r["seed"] for r in rows) == seeds_
        assert result["sets"][which] == rules.summarize_holes(rows)
        for r in rows:   # the score is the rows' own classes' lowest, and the outcome the committed run's
            assert (r["hole_score"], r["worst_class"]) == rules.hole_score(r["classes"])
            assert {k: r[k] for k in ("steps", "before", "after")} == rules.committed_outcomes(which)[r["seed"]]
    assert not set(rules.HOLE_SETS["confirm"]) & set(rules.PROMPTED)   # the prompting seeds do not count
    assert sorted(r["seed"] for r in result["prompted_rows"]) == list(rules.PROMPTED)
    for r in result["prompted_rows"]:
        assert (r["hole_score"], r["worst_class"]) == rules.hole_score(r["classes"])
        assert {k: r[k] for k in ("steps", "before", "after")} == rules.committed_outcomes("confirm")[r["seed"]]
    assert result["verdict"] == rules.holes_verdict(result["sets"]) == "contradicted"


# -- where today's failing runs lose their points; what a hole is ---------------------------------------------------

def test_the_failing_digits_rows_are_the_committed_failing_runs():
    rows = {r["seed"]: r for r in summary("failing-digits.json")["rows"]}
    assert sorted(rows) == sorted((*rules.FAILING["confirm"], *rules.FAILING["study"]))
    for seed, r in rows.items():
        assert r["final"] == rules.committed_final(seed) < TARGET
        for digit in r["digits"].values():
            assert all(c["accuracy"] < rules.WEAK and c["n"] >= rules.MIN_CLASS for c in digit["weak_classes"])


def test_the_hole_path_is_what_its_committed_rows_give():
    result = summary("hole-path.json")
    rows = result["rows"]
    assert sorted((r["set"], r["seed"]) for r in rows) == sorted(
        (w, s) for w, seeds_ in rules.READ_SETS.items() for s in seeds_)
    for r in rows:   # each row is its own classes' reading, paired with the committed outcome
        outcome = rules.committed_outcomes(r["set"])[r["seed"]]
        assert rules.warm_row({"set": r["set"], "seed": r["seed"], **outcome, "classes": r["classes"]}) == r
    assert {k: v for k, v in result.items() if k not in ("rows", "paths")} == rules.summarize_reading(rows)
    assert sorted(p["seed"] for p in result["paths"]) == sorted(rules.PATH_SEEDS)
    assert all(p["same_path"] for p in result["paths"])   # the warm starts the committed runs had, up to 30%


# -- the tenth round: a warm start with a flat hole is drawn again ------------------------------------------------

def test_the_tenth_rounds_verdicts_are_what_its_committed_rows_give():
    result = ROUNDS[10]
    assert result["verdict"] == rules.redraw_rule(result["study"]) == "confirm"
    assert rules.redraw_confirmation(result["confirmation"]["probe_seconds"]) == result["confirmation"]
    assert result["confirmation"]["verdict"] == "keep today's"
    assert result["same_run_check"]["same"]


def test_the_tenth_rounds_check_flags_the_readings_flat_holes_and_no_other_warm_start():
    from flat_holes import FLAT_P, FLAT_SPREAD
    reading = summary("hole-path.json")["rows"]
    for which in ("study", "confirm"):
        flat = [r["seed"] for r in reading if r["set"] == which and any(
            c[0] in "th" and v["n"] >= rules.MIN_CLASS and v["p"] < FLAT_P and v["spread"] < FLAT_SPREAD
            for c, v in r["classes"].items())]
        assert sorted(ROUNDS[10]["committed_flags"][which]) == sorted(flat)
