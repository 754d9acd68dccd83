"""research/quickstart-lift/README.md (issue 29), both rounds: each results block is what its committed summary gives, each
summary's pick is the one its selection rule names, and the quickstart runs the picked settings."""
from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "research" / "quickstart-lift"))

import round01 as lift  # noqa: E402
import round02 as lift2  # noqa: E402

from minitepo.lab.quickstart import WARM_START_RULES, QuickstartConfig  # noqa: E402

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


# -- the second round (research/quickstart-lift/README.md, "Second round") --------------------------------------------------

ROUND2 = json.loads(lift2.SUMMARY.read_text())


def test_the_second_rounds_blocks_are_what_its_committed_summaries_give():
    assert lift2.main(["doc", "--check"]) == 0


def test_the_second_rounds_pick_is_its_rules():
    arms = ROUND2["arms"]
    assert len(ROUND2["seeds"]) >= 8 and all(a["n"] == len(ROUND2["seeds"]) for a in arms.values())
    for name, runs in ROUND2["runs"].items():   # counts, medians and time ratios recomputed from the per-seed rows
        assert sum(r["before"] <= 0.40 and r["after"] >= lift2.TARGET for r in runs) == arms[name]["met"], name
        assert statistics.median(r["after"] for r in runs) == arms[name]["median_after"], name
    base = ROUND2["runs"]["base"]
    for name, runs in ROUND2["runs"].items():
        warm = statistics.median(r["warm"]["steps"] for r in runs) / statistics.median(r["warm"]["steps"] for r in base)
        rl = (statistics.median(r["step_seconds"] for r in runs)
              / statistics.median(r["step_seconds"] for r in base))
        assert arms[name]["eligible"] == (round(warm, 3) <= lift2.TIME_LIMIT and round(rl, 3) <= lift2.TIME_LIMIT)
    eligible = [n for n, a in arms.items() if a["eligible"]]
    best = max(eligible, key=lambda n: (arms[n]["met"], arms[n]["median_after"]))
    beats = (arms[best]["met"], arms[best]["median_after"]) > (arms["base"]["met"], arms["base"]["median_after"])
    assert ROUND2["pick"] == (best if beats else "base")


def test_the_quickstart_runs_the_second_rounds_pick_only_if_its_confirmation_held():
    """The pick changes only the warm start's peak lr (3e-3); it stays the default only if its confirmation on seeds
    0-19 is at least as good as the first round's (it was not: the quickstart kept the core's 2e-3)."""
    kind, rl_overrides = lift2.ARMS[ROUND2["pick"]]
    assert rl_overrides == {} and lift2.WARM[kind]["sft"] == {"lr": 3e-3}
    first = json.loads(lift.CONFIRM.read_text())["seeds"]
    second = json.loads(lift2.CONFIRM.read_text())["seeds"]
    expected = 3e-3 if lift2.pick_holds(first, second) else WARM_START_RULES["compare"].lr
    assert QuickstartConfig().sft_lr == WARM_START_RULES["quickstart"].lr == expected


# -- the third round (research/quickstart-lift/README.md, "Third round") ----------------------------------------------------

import round03 as lift3  # noqa: E402

ROUND3 = json.loads(lift3.SUMMARY.read_text())


def test_the_third_rounds_blocks_are_what_its_committed_records_give():
    assert lift3.main(["doc", "--check"]) == 0


def test_the_third_rounds_pick_is_its_rules():
    arms, runs = ROUND3["arms"], ROUND3["runs"]
    assert len(ROUND3["seeds"]) >= 10 and all(len(r) == len(ROUND3["seeds"]) for r in runs.values())
    for name, rows in runs.items():   # counts, medians and costs recomputed from the per-seed rows
        assert [r["seed"] for r in rows] == ROUND3["seeds"], name
        assert sum(r["before"] <= 0.40 and r["after"] >= lift3.TARGET for r in rows) == arms[name]["met"], name
        assert statistics.median(r["after"] for r in rows) == arms[name]["median_after"], name
        cost = statistics.median(r["responses"] for r in rows) / statistics.median(r["responses"] for r in runs["base"])
        assert arms[name]["eligible"] == (round(cost, 3) <= lift3.COST_LIMIT), name
    assert all(r["before"] == b["before"] for rows in runs.values() for r, b in zip(rows, runs["base"]))  # same starts
    eligible = [n for n in lift3.ARMS if arms[n]["eligible"]]
    best = max(eligible, key=lambda n: (arms[n]["met"], arms[n]["median_after"])) if eligible else "base"
    beats = (arms[best]["met"], arms[best]["median_after"]) > (arms["base"]["met"], arms["base"]["median_after"])
    assert ROUND3["pick"] == (best if beats else "base")


def test_the_cheaper_settle_check_is_in_place_only_if_the_idle_run_gave_every_seed_unchanged():
    """research/quickstart-lift/README.md: the teacher-forced settle check stays only if the README's command then gives every
    seed of 0-19 exactly as the first round's confirmation did (warm-start steps, accuracy before and after)."""
    import minitepo.lab.sft_run as sft_run
    first = json.loads(lift.CONFIRM.read_text())["seeds"]
    idle = json.loads(lift3.IDLE.read_text())["seeds"]
    assert [r["seed"] for r in idle] == list(range(20))
    assert hasattr(sft_run, "settle_accuracy") == (lift3.differing(first, idle) == [])


# -- the fourth round (research/quickstart-lift/README.md, "Fourth round") ---------------------------------------------------

import round04 as lift4  # noqa: E402

ROUND4 = json.loads(lift4.SUMMARY.read_text())


def test_the_fourth_rounds_blocks_are_what_its_committed_records_give():
    assert lift4.main(["doc", "--check"]) == 0


def check_the_rule(summary: dict, new_arms: dict, base_rows: list[dict] | None = None) -> None:
    """The third round's rule, recomputed from a round's per-seed rows (the fourth round's and later): counts,
    medians, eligibility on cost, the same warm starts, the pick. Base's rows are ``base_rows`` (by default the
    third round's)."""
    arms, runs = summary["arms"], summary["runs"]
    assert len(summary["seeds"]) >= 10 and set(runs) == {"base", *new_arms}
    earlier = {r["seed"]: r for r in (base_rows or ROUND3["runs"]["base"])}
    assert [(r["before"], r["after"]) for r in runs["base"]] == [(earlier[s]["before"], earlier[s]["after"])
                                                                  for s in summary["seeds"]]
    for name, rows in runs.items():
        assert [r["seed"] for r in rows] == summary["seeds"], name
        assert sum(r["before"] <= 0.40 and r["after"] >= lift.TARGET for r in rows) == arms[name]["met"], name
        assert statistics.median(r["after"] for r in rows) == arms[name]["median_after"], name
        cost = statistics.median(r["responses"] for r in rows) / statistics.median(r["responses"] for r in runs["base"])
        assert arms[name]["eligible"] == (round(cost, 3) <= lift3.COST_LIMIT), name
        assert all(r["before"] == b["before"] for r, b in zip(rows, runs["base"])), name   # the same warm starts
    eligible = [n for n in new_arms if arms[n]["eligible"]]
    best = max(eligible, key=lambda n: (arms[n]["met"], arms[n]["median_after"])) if eligible else "base"
    beats = (arms[best]["met"], arms[best]["median_after"]) > (arms["base"]["met"], arms["base"]["median_after"])
    assert summary["pick"] == (best if beats else "base")


def test_the_fourth_rounds_pick_is_its_rules():
    check_the_rule(ROUND4, lift4.ARMS)


def test_a_runs_share_of_groups_trained_is_of_the_groups_it_asked_for(tmp_path):
    """g16 asks for 16 groups, the others for 32: the description divides by the run's own prompts."""
    (tmp_path / "rl").mkdir()
    (tmp_path / "rl" / "config.json").write_text(json.dumps({"prompts": 16}))
    rows = [{"step": i, "charts/groups_trained": 12, "charts/entropy_sampled": 0.5, "charts/responses_sampled": 256}
            for i in range(1, 101)]
    (tmp_path / "rl" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert lift4.mechanism(tmp_path) == {"responses": 25600, "entropy_51_100": 0.5, "groups_share_last50": 0.75}


def test_the_quickstart_has_the_kl_to_the_warm_start_only_if_the_fourth_rounds_confirmation_held():
    """research/quickstart-lift/README.md, fourth round: the pick (kl0.04) stays only if its confirmation on seeds 0-19 is at
    least as good as the first round's and its median wall time per seed is within 1.10x the idle run's."""
    from minitepo.lab.quickstart import QUICKSTART_BETA, rl_stage
    first = json.loads(lift.CONFIRM.read_text())["seeds"]
    fourth = json.loads(lift4.CONFIRM.read_text())["seeds"]
    idle = json.loads(lift3.IDLE.read_text())["seeds"]
    assert ROUND4["pick"] == "kl0.04" and lift4.ARMS["kl0.04"] == {"beta": 0.04}
    assert [r["seed"] for r in fourth] == list(range(20))
    expected = 0.04 if lift4.pick_holds(first, fourth, idle) else 0.0
    assert QuickstartConfig().beta == QUICKSTART_BETA == expected
    assert rl_stage(QuickstartConfig(), "somewhere/checkpoint.pt").beta == expected


def test_the_fourth_rounds_time_rule_reads_the_median_wall_time():
    rows = [{"seed": s, "before": 0.3, "after": 0.9, "wall_s": w} for s, w in enumerate((100.0, 110.0, 120.0))]
    slower = [r | {"wall_s": r["wall_s"] * 1.11} for r in rows]
    within = [r | {"wall_s": r["wall_s"] * 1.09} for r in rows]
    assert lift4.pick_holds(rows, within, rows) and not lift4.pick_holds(rows, slower, rows)
    worse = [r | {"after": 0.7} if r["seed"] == 0 else r for r in within]
    assert not lift4.pick_holds(rows, worse, rows)


# -- the fifth round (research/quickstart-lift/README.md, "Fifth round") -----------------------------------------------------

import round05 as lift5  # noqa: E402

ROUND5 = json.loads(lift5.SUMMARY.read_text())


def test_the_fifth_rounds_blocks_are_what_its_committed_records_give():
    assert lift5.main(["doc", "--check"]) == 0


def test_the_fifth_rounds_pick_is_its_rules():
    check_the_rule(ROUND5, lift5.ARMS)


def test_the_sign_test_is_the_binomial_tail_counted_by_hand():
    """Against the distribution of n fair coin flips built one flip at a time: the chance of a split at least as
    uneven as the one seen."""
    for up, down in [(18, 2), (2, 18), (15, 5), (10, 10), (3, 0), (0, 0), (7, 4), (11, 9)]:
        n, chances = up + down, [1.0]
        for _ in range(n):   # chances[k]: the chance of k heads so far
            chances = [(chances[k] if k < len(chances) else 0.0) / 2 + (chances[k - 1] if k else 0.0) / 2
                       for k in range(len(chances) + 1)]
        tail = sum(c for k, c in enumerate(chances) if abs(2 * k - n) >= abs(up - down))
        assert math.isclose(lift5.sign_test(up, down), min(1.0, tail)), (up, down)
    assert math.isclose(lift5.sign_test(18, 2), 0.0004025, rel_tol=1e-3)   # g16's split in the fourth round


def test_the_fifth_rounds_description_reads_the_same_share_of_every_run(tmp_path):
    """p64 runs 125 iterations of 64 groups: its window is iterations 26-50 and its last fifth 25 iterations."""
    for iterations, prompts, window in ((250, 32, range(51, 101)), (125, 64, range(26, 51))):
        folder = tmp_path / str(iterations)
        (folder / "rl").mkdir(parents=True)
        (folder / "rl" / "config.json").write_text(json.dumps({"iterations": iterations, "prompts": prompts}))
        rows = [{"step": i, "charts/groups_trained": prompts if i <= 0.8 * iterations else prompts // 2,
                 "charts/entropy_sampled": 0.5 if i in window else 0.1, "charts/responses_sampled": 256}
                for i in range(1, iterations + 1)]
        (folder / "rl" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert lift5.mechanism(folder) == {"responses": 256 * iterations, "entropy_20_40": 0.5,
                                           "groups_share_last_fifth": 0.5}


# -- the sixth round (research/quickstart-lift/README.md, "Sixth round") -----------------------------------------------------

import round06 as lift6  # noqa: E402

ROUND6 = json.loads(lift6.SUMMARY.read_text())


def test_the_sixth_rounds_blocks_are_what_its_committed_records_give():
    assert lift6.main(["doc", "--check"]) == 0


def test_the_sixth_rounds_pick_is_its_rules_and_its_g4_rows_are_the_fifth_rounds():
    check_the_rule(ROUND6, lift6.ARMS)
    fifth = {r["seed"]: r for r in ROUND5["runs"]["g4"]}
    assert [(r["before"], r["after"], r["responses"]) for r in ROUND6["runs"]["g4"]] == \
        [(fifth[s]["before"], fifth[s]["after"], fifth[s]["responses"]) for s in ROUND6["seeds"]]


def test_the_sixth_rounds_arms_are_g4_with_one_change_each():
    g4 = lift5.ARMS["g4"]
    assert lift6.ARMS["g4"] == g4
    for name in ("g4-i200", "g4-r2"):
        changed = {k: v for k, v in lift6.ARMS[name].items() if g4.get(k) != v}
        assert len(changed) == 1, (name, changed)


# -- what the quickstart runs --------------------------------------------------------------------------------------

def test_the_quickstarts_rl_settings_are_the_first_rounds_with_each_pick_whose_confirmation_held():
    """research/quickstart-lift/README.md, fifth and sixth rounds: a round's pick becomes the quickstart's only if its
    confirmation on seeds 0-19 is at least as good as the first round's and its median wall time per seed is within
    1.10x the idle run's (``pick_holds``); otherwise the quickstart keeps the settings the earlier rounds ran
    (``quickstart_lift.AS_RAN``)."""
    from minitepo.lab.quickstart import rl_stage
    first = json.loads(lift.CONFIRM.read_text())["seeds"]
    idle = json.loads(lift3.IDLE.read_text())["seeds"]
    expected, held = dict(lift.AS_RAN), []
    rounds = ((5, ROUND5, lift5.ARMS, lift5.CONFIRM), (6, ROUND6, lift6.ARMS, lift6.CONFIRM))
    for number, summary, arms, confirm in rounds:
        seeds = json.loads(confirm.read_text())["seeds"]
        assert [r["seed"] for r in seeds] == list(range(20)), number
        if lift4.pick_holds(first, seeds, idle):
            expected |= arms[summary["pick"]]
            held.append(number)
    assert (ROUND5["pick"], ROUND6["pick"]) == ("p64", "g4-r2") and 5 not in held
    stage = rl_stage(QuickstartConfig(), "somewhere/checkpoint.pt")
    assert {name: getattr(stage, name) for name in expected} == expected, f"rounds whose pick held: {held}"


# -- the seventh round (research/quickstart-lift/README.md, "Seventh round") -------------------------------------------------

import round07 as lift7  # noqa: E402

ROUND7 = json.loads(lift7.SUMMARY.read_text())


def test_the_seventh_rounds_block_is_what_its_committed_records_give():
    assert lift7.main(["doc", "--check"]) == 0


def test_the_seventh_rounds_pick_is_its_rules_and_its_base_rows_are_the_sixth_rounds_g4_r2():
    check_the_rule(ROUND7, lift7.ARMS, base_rows=ROUND6["runs"]["g4-r2"])
    assert ROUND7["pick"] == "base"


def test_the_seventh_rounds_arms_are_todays_quickstart_with_one_change_each():
    """Its base is the sixth round's pick, which is what the quickstart runs (the test above ties that to the sixth
    round's confirmation), and each arm changes one RL setting of it."""
    from minitepo.lab.quickstart import rl_stage
    assert lift7.BASE == lift6.ARMS["g4-r2"]
    today = rl_stage(QuickstartConfig(), "somewhere/checkpoint.pt")
    as_base = rl_stage(QuickstartConfig(**lift.AS_RAN), "somewhere/checkpoint.pt", **lift7.BASE)
    assert today == as_base
    for name, arm in lift7.ARMS.items():
        changed = {k: v for k, v in arm.items() if lift7.BASE.get(k) != v}
        assert len(changed) == 1, (name, changed)
        (field, value), = changed.items()
        assert getattr(today, field) != value, name


# -- the eighth round (research/quickstart-lift/README.md, "Eighth round") ---------------------------------------------------

import round08 as lift8  # noqa: E402

ROUND8 = json.loads(lift8.SUMMARY.read_text())


def test_the_eighth_rounds_blocks_are_what_its_committed_records_give():
    assert lift8.main(["doc", "--check"]) == 0


def warm_start_rounds_pick(summary: dict, new_arms) -> str:
    """The third round's rule with the eighth's second cost limit (warm-start steps), recomputed from a round's rows,
    after checking that its base rows are the sixth round's g4-r2 runs on the same seeds (rounds 8 and 9)."""
    arms, runs, seeds = summary["arms"], summary["runs"], summary["seeds"]
    assert seeds == list(range(100, 100 + len(seeds))) and len(seeds) >= 10 and set(runs) == {"base", *new_arms}
    sixth = {r["seed"]: r for r in ROUND6["runs"]["g4-r2"]}
    assert [(r["before"], r["after"]) for r in runs["base"]] == [(sixth[s]["before"], sixth[s]["after"]) for s in seeds]

    def ratio(name, value):
        return round(statistics.median(map(value, runs[name])) / statistics.median(map(value, runs["base"])), 3)
    for name, rows in runs.items():
        assert [r["seed"] for r in rows] == seeds, name
        assert sum(r["before"] <= 0.40 and r["after"] >= lift.TARGET for r in rows) == arms[name]["met"], name
        assert statistics.median(r["after"] for r in rows) == arms[name]["median_after"], name
        assert arms[name]["eligible"] == (ratio(name, lambda r: r["responses"]) <= lift3.COST_LIMIT
                                          and ratio(name, lambda r: r["warm"]["steps"]) <= lift8.WARM_LIMIT), name
    eligible = [n for n in new_arms if arms[n]["eligible"]]
    best = max(eligible, key=lambda n: (arms[n]["met"], arms[n]["median_after"])) if eligible else "base"
    beats = (arms[best]["met"], arms[best]["median_after"]) > (arms["base"]["met"], arms["base"]["median_after"])
    return best if beats else "base"


def test_the_eighth_rounds_pick_is_its_rule_and_its_base_rows_are_the_sixth_rounds_g4_r2():
    assert ROUND8["pick"] == warm_start_rounds_pick(ROUND8, lift8.ARMS) == "settle0.35"


def test_the_eighth_rounds_warm_starts_are_todays_trained_on_until_35_percent():
    """Up to the step that reaches 30% the new warm start is today's: it never stops earlier, and where today's
    already began RL at 35% or more it is the same checkpoint, so the same RL run ends at the same accuracy."""
    runs, same = ROUND8["runs"], 0
    for today, new in zip(runs["base"], runs["settle0.35"]):
        assert new["warm"]["steps"] >= today["warm"]["steps"], today["seed"]
        if today["before"] >= lift8.SETTLE_AT:
            assert (new["warm"]["steps"], new["before"], new["after"]) == \
                (today["warm"]["steps"], today["before"], today["after"]), today["seed"]
            same += 1
    assert same >= 3


def test_the_eighth_rounds_arm_runs_todays_rl_stage():
    from minitepo.lab.quickstart import rl_stage
    as_ran = rl_stage(QuickstartConfig(**lift.AS_RAN), "somewhere/checkpoint.pt", **lift8.ARMS["settle0.35"])
    assert as_ran == rl_stage(QuickstartConfig(), "somewhere/checkpoint.pt")


def test_the_quickstarts_warm_start_stops_at_35_percent_only_if_the_eighth_rounds_confirmation_held():
    """The eighth round's confirmation rule: at least as good as the sixth round's confirmation (today's quickstart
    before it) on seeds at target, then the median, and its median wall time per seed within 1.10x; otherwise the
    warm start goes back to the 30% the earlier rounds ran (``quickstart_lift.WARM_AS_RAN``)."""
    today, new = (json.loads(path.read_text())["seeds"] for path in (lift6.CONFIRM, lift8.CONFIRM))
    assert [r["seed"] for r in new] == list(range(20))
    expected = lift8.SETTLE_AT if lift8.pick_holds(today, new) else lift.WARM_AS_RAN["settle_at"]
    assert QuickstartConfig().settle_at == WARM_START_RULES["quickstart"].settle_at == expected
    assert not lift8.pick_holds(today, new)   # 16 of 20 against 17 of 20


# -- the look at the warm starts' hole scores (research/quickstart-lift/warm_holes.py) ------------------------------------

import warm_holes as holes  # noqa: E402


def test_the_auc_counts_failing_runs_scored_below_passing_ones_by_hand():
    assert holes.auc([0.1], [0.5, 0.6]) == 1.0
    assert holes.auc([0.7], [0.5, 0.6]) == 0.0
    assert holes.auc([0.1, 0.55], [0.5, 0.6]) == 0.75   # 0.1 below both, 0.55 below 0.6 only: 3 of 4 pairs
    assert holes.auc([0.5], [0.5, 0.6]) == 0.75          # a tie counts half


def test_the_auc_p_is_the_exact_permutation_tail():
    # 3 failing of 20, perfectly separated: only one of C(20, 3) = 1140 choices of failing runs does as well
    scores = [i / 20 for i in range(20)]
    failed = [i < 3 for i in range(20)]
    assert holes.auc_p(scores, failed) == 1 / 1140
    # the failing runs scored highest: every choice does at least as well
    assert holes.auc_p(scores, [i >= 17 for i in range(20)]) == 1.0


def test_the_hole_score_is_the_lowest_class_with_enough_prompts():
    classes = {"t0": {"p": 0.01, "n": holes.MIN_CLASS - 1}, "t5": {"p": 0.3, "n": 100}, "h10": {"p": 0.2, "n": holes.MIN_CLASS}}
    assert holes.hole_score(classes) == (0.2, "h10")


def test_the_look_at_the_holes_is_what_its_committed_rows_give():
    summary = json.loads(holes.SUMMARY.read_text())
    for which, seeds in holes.SETS.items():
        rows = [r for r in summary["rows"] if r["set"] == which]
        assert sorted(r["seed"] for r in rows) == seeds
        assert summary["sets"][which] == holes.summarize(rows)
        for r in rows:   # the score is the rows' own classes' lowest, and the outcome the committed run's
            assert (r["hole_score"], r["worst_class"]) == holes.hole_score(r["classes"])
            assert {k: r[k] for k in ("steps", "before", "after")} == holes.outcomes(which)[r["seed"]]
    assert not set(holes.SETS["confirm"]) & set(holes.PROMPTED)   # the seeds that prompted the question do not count
    assert sorted(r["seed"] for r in summary["prompted_rows"]) == list(holes.PROMPTED)
    for r in summary["prompted_rows"]:
        assert (r["hole_score"], r["worst_class"]) == holes.hole_score(r["classes"])
        assert {k: r[k] for k in ("steps", "before", "after")} == holes.outcomes("confirm")[r["seed"]]
    assert summary["verdict"] == holes.verdict(summary["sets"])
    assert holes.main(["doc", "--check"]) == 0


# -- the ninth round: a warm start on 3-digit sums only ----------------------------------------------------

import round09 as lift9  # noqa: E402

ROUND9 = json.loads(lift9.SUMMARY.read_text())


def test_the_ninth_rounds_block_is_what_its_committed_record_gives():
    assert lift9.main(["doc", "--check"]) == 0


def test_the_ninth_rounds_pick_is_the_eighth_rounds_rule_on_its_rows():
    assert ROUND9["pick"] == warm_start_rounds_pick(ROUND9, lift9.ARMS)


def test_the_ninth_rounds_arm_is_todays_rl_stage_from_warm_starts_on_level_3_only():
    from minitepo.lab.quickstart import rl_stage
    assert lift9.ARMS == {"sft-l3": lift8.BASE}
    assert rl_stage(QuickstartConfig(**lift.AS_RAN), "x", **lift9.ARMS["sft-l3"]) == rl_stage(QuickstartConfig(), "x")
    for row in ROUND9["runs"]["sft-l3"]:   # the warm start was checked on 3-digit prompts only
        assert set(row["warm"]["accuracy"]) == {"all", "level/3"} and row["warm"]["accuracy"]["level/3"] == row["before"]


def test_the_ninth_rounds_hole_scores_are_the_looks_for_base_and_the_new_warm_starts_own():
    arms, seeds = ROUND9["arms"], ROUND9["seeds"]
    looked = {r["seed"]: r["hole_score"] for r in json.loads(holes.SUMMARY.read_text())["rows"]}
    assert arms["base"]["hole_scores"] == [looked[s] for s in seeds]
    assert arms["sft-l3"]["hole_scores"] == [r["warm"]["hole_score"] for r in ROUND9["runs"]["sft-l3"]]
    for a in arms.values():
        assert a["warm_starts_with_a_hole"] == sum(v < holes.HOLE for v in a["hole_scores"])


# -- where today's failing runs lose their points (research/quickstart-lift/failing_digits.py, descriptive) ------------------

import failing_digits  # noqa: E402


def test_the_failing_digits_block_is_its_summarys_and_its_runs_are_the_committed_ones():
    summary = json.loads(failing_digits.SUMMARY.read_text())
    rows = {r["seed"]: r for r in summary["rows"]}
    assert sorted(rows) == sorted((*failing_digits.CONFIRM_SEEDS, *failing_digits.STUDY_SEEDS))
    for seed, r in rows.items():
        assert r["final"] == failing_digits.committed_final(seed) < lift.TARGET
        for digit in r["digits"].values():
            assert all(c["accuracy"] < failing_digits.WEAK and c["n"] >= holes.MIN_CLASS for c in digit["weak_classes"])
    assert failing_digits.main(["doc", "--check"]) == 0


# -- what a hole is, and whether it closes before 40% (research/quickstart-lift/hole_path.py, descriptive) --------------------

import hole_path  # noqa: E402


def test_the_spread_is_the_mean_total_variation_distance_from_the_classes_mean():
    import torch
    from flat_holes import tv_spread
    same = torch.tensor([[0.1] * 10, [0.1] * 10])
    assert tv_spread(same) == 0.0                       # the same distribution whatever the prompt
    one_hot = torch.eye(10)[:2]                                   # two prompts, each sure of another digit
    # naive: the mean is 0.5 on digits 0 and 1; each row is 0.5 away from it in total variation
    mean = [sum(row[d] for row in one_hot.tolist()) / 2 for d in range(10)]
    naive = sum(0.5 * sum(abs(row[d] - mean[d]) for d in range(10)) for row in one_hot.tolist()) / 2
    assert tv_spread(one_hot) == pytest.approx(naive) == pytest.approx(0.5)


def test_the_hole_path_block_is_what_its_committed_rows_give():
    summary = json.loads(hole_path.SUMMARY.read_text())
    rows = summary["rows"]
    assert sorted((r["set"], r["seed"]) for r in rows) == sorted(
        (w, s) for w, seeds in hole_path.READ_SETS.items() for s in seeds)
    for r in rows:   # each row is its own classes' reading, paired with the committed outcome
        outcome = holes.outcomes(r["set"])[r["seed"]]
        assert hole_path.warm_row({"set": r["set"], "seed": r["seed"], **outcome, "classes": r["classes"]}) == r
    assert {k: v for k, v in summary.items() if k not in ("rows", "paths")} == hole_path.summarize(rows)
    assert sorted(p["seed"] for p in summary["paths"]) == sorted(hole_path.PATH_SEEDS)
    assert all(p["same_path"] for p in summary["paths"])   # the warm starts the committed runs had, up to 30%
    assert hole_path.main(["doc", "--check"]) == 0


# -- the tenth round: a warm start with a flat hole is drawn again ------------------------------------------------

import round10 as lift10  # noqa: E402

ROUND10 = json.loads(lift10.SUMMARY.read_text())


def test_the_tenth_rounds_block_and_verdicts_are_what_its_committed_rows_give():
    assert ROUND10["verdict"] == lift10.rule(ROUND10["study"])
    if "confirmation" in ROUND10:
        assert lift10.confirmation(ROUND10["confirmation"]["probe_seconds"]) == ROUND10["confirmation"]
    assert lift10.main(["doc", "--check"]) == 0


def test_the_quickstarts_check_flags_the_readings_flat_holes_and_no_other_warm_start():
    from flat_holes import FLAT_P, FLAT_SPREAD
    reading = json.loads(hole_path.SUMMARY.read_text())["rows"]
    for which in ("study", "confirm"):
        flat = [r["seed"] for r in reading if r["set"] == which and any(
            c[0] in "th" and v["n"] >= holes.MIN_CLASS and v["p"] < FLAT_P and v["spread"] < FLAT_SPREAD
            for c, v in r["classes"].items())]
        assert sorted(ROUND10["committed_flags"][which]) == sorted(flat)
    assert ROUND10["same_run_check"]["same"]
