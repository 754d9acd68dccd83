"""research/mechanisms/round2.py: its measurements against naive loops, its arms change one thing each, and its
Probe measures without changing what the trainer computes."""
from __future__ import annotations

import random
import sys
from dataclasses import asdict, replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "research" / "mechanisms"))

import round2  # noqa: E402
from test_reading_path import CoinTask  # noqa: E402  (a coin-flip verdict: an untrained model's groups are mixed)

from minitepo import GPT, ModelConfig, Tokenizer, Trainer  # noqa: E402
from minitepo.rollout import Rollout  # noqa: E402
from toy_tasks import make_task  # noqa: E402


def rollout_of(lengths, correct, form=None, width=6):
    B = len(lengths)
    mask = torch.tensor([[1.0] * n + [0.0] * (width - n) for n in lengths])
    zeros = torch.zeros(B, width)
    r = Rollout(torch.zeros(B, 1, dtype=torch.long), torch.ones(B, 1, dtype=torch.bool),
                torch.zeros(B, width, dtype=torch.long), mask, zeros, zeros, torch.ones(B, dtype=torch.bool), 2, 1.0)
    r.correct = torch.tensor(correct)
    r.form = None if form is None else torch.tensor(form)
    return r


def test_answer_numbers_match_a_naive_count():
    lengths, correct, form = [1, 5, 2, 2, 6, 3], [True, False, False, True, True, False], [0, 1, 0, 0, 1, 1]
    task = make_task("add_or_cot", levels=(1,))
    got = round2.answer_numbers([rollout_of(lengths[:4], correct[:4], form[:4]), rollout_of(lengths[4:], correct[4:],
                                                                                            form[4:])], task, 2)
    right = [n for n, c in zip(lengths, correct) if c]
    wrong = [n for n, c in zip(lengths, correct) if not c]
    assert abs(got["len_right"] - sum(right) / len(right)) < 1e-6
    assert abs(got["len_wrong"] - sum(wrong) / len(wrong)) < 1e-6
    cvs = []
    for g in range(3):
        a, b = lengths[2 * g], lengths[2 * g + 1]
        mean = (a + b) / 2
        cvs.append((((a - mean) ** 2 + (b - mean) ** 2) / 2) ** 0.5 / mean)
    assert abs(got["len_cv"] - sum(cvs) / 3) < 1e-6
    assert abs(got["share_steps"] - 3 / 6) < 1e-6 and abs(got["acc_steps"] - 1 / 3) < 1e-6
    assert abs(got["acc_direct"] - 2 / 3) < 1e-6
    assert abs(got["both_forms"] - 1 / 3) < 1e-6          # group (0, 1) holds both forms; (2, 3) and (4, 5) one


def test_far_share_counts_real_tokens_beyond_the_clip_only():
    logp = torch.tensor([[0.0, -1.0, -2.0], [-0.5, 0.0, 0.0]])
    old = torch.tensor([[-0.5, -1.0, -2.3], [0.0, 0.0, 5.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])        # the 5-nat gap sits at padding
    assert round2.far_share(logp, old, mask) == 2 / 4                # 0.5 and 0.5 are beyond 0.4; 0 and 0.3 are not
    assert round2.far_share(logp, old, torch.zeros_like(mask)) == 0.0


def test_the_arms_of_an_experiment_differ_in_one_setting():
    def differs(a, b):
        x, y = asdict(a), asdict(b)
        return {k for k in x if x[k] != y[k]}
    a1, a2 = (round2.arm_config("a", arm, 7) for arm in round2.PILOT_ARMS["a"])
    assert differs(a1, a2) == {"objective"} and a1.objective["agg"] != a2.objective["agg"]
    assert a1.objective["beta_mask"] == 0 and a1.uses_dynamic_sampling is False and a1.minibatches * a1.epochs == 4
    for steps in (4, 8, 16):
        on, off = round2.arm_config("b", f"mask-{steps}", 7), round2.arm_config("b", f"nomask-{steps}", 7)
        assert differs(on, off) == {"objective"} and off.objective == {"beta_mask": 0.0}
        assert on.minibatches * on.epochs == steps and on.uses_dynamic_sampling
    assert differs(round2.arm_config("b", "mask-4", 7), round2.arm_config("b", "mask-16", 7)) == {"epochs"}


def test_the_probe_measures_without_changing_what_the_trainer_computes():
    tok = Tokenizer()
    config = round2.arm_config("b", "mask-8", seed=3, iterations=2)
    weights = []
    for cls, extra in ((Trainer, {}), (round2.Probe, {"grad_share_at": (1, 2)})):
        torch.manual_seed(0)
        model = GPT(ModelConfig(vocab_size=tok.vocab_size, n_layer=1, n_embd=32, n_head=2))
        trainer = cls(replace(config, prompts=4), model, tok, CoinTask(make_task("add", levels=(1,))), **extra)
        records = []
        for _ in range(2):
            trainer.steps_log = []                                   # as round2.run does before every iteration
            records.append(trainer.iterate())
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
        if cls is round2.Probe:
            steps = trainer.steps_log                                # the last iteration's steps
            assert len(steps) == 8 and steps[0]["far_share"] == 0.0  # the first step is on-policy
            assert all("g_policy" in s and "g_mask" in s for s in steps)
            assert abs(sum(s["mask_frac"] for s in steps[1:]) / 7 - records[-1]["tepo/mask_frac_later_steps"]) < 1e-6
    assert torch.equal(weights[0], weights[1])


def test_the_pilot_rule_picks_by_the_protocol(tmp_path, monkeypatch):
    import json

    def write(candidate, arm, seed, cvs, rewards, accs):
        its = [{"charts/len_cv_in_group": c, "charts/reward_mean": r} for c, r in zip(cvs, rewards)]
        evals = [{"iteration": 2 * i, "all": a} for i, a in enumerate(accs)]
        path = tmp_path / candidate / f"{arm}-{seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"arm": arm, "seed": seed, "seconds": 1.0, "iterations": its, "evals": evals}))

    rng = random.Random(0)
    for candidate, cv_low, reward in (("a-half-60", 0.6, 0.7), ("a-half-full", 0.9, 0.95), ("a-quarter-full", 0.55,
                                                                                              0.5)):
        for arm in round2.PILOT_ARMS["a"]:
            for seed in round2.PILOT_SEEDS:
                mixed = int(20 * (cv_low + (0.1 if seed == round2.PILOT_SEEDS[1] else 0)))
                write(candidate, arm, seed, [0.7] * mixed + [0.2] * (20 - mixed), [reward] * 20, [0.5])
    for candidate, acc in (("b-countdown4-35", 0.45), ("b-countdown3-35", 0.6)):
        for arm in round2.PILOT_ARMS["b"]:
            for seed in round2.PILOT_SEEDS:
                write(candidate, arm, seed, [0.1] * 20, [0.3] * 20, [0.1] + [acc + rng.uniform(-0.05, 0.05)] * 10)
    summary = round2.pilot_summary(str(tmp_path))
    qualifies = {c: e["qualifies"] for c, e in summary["candidates"].items()}
    # a-half-full is mixed throughout but leaves no room (early reward 0.95 > 0.85); a-quarter-full's worst run is
    # mixed in 55% of iterations (< 75%); the iteration-0 evaluation (0.1) does not count against B's band
    assert qualifies == {"a-half-60": False, "a-half-full": False, "a-quarter-full": False, "b-countdown4-35": True,
                         "b-countdown3-35": True}
    assert summary["pick"] == {"a": None, "b": "b-countdown4-35"}
    for arm in round2.PILOT_ARMS["a"]:                               # a-half-60 mixed in 80% of iterations at worst
        for seed in round2.PILOT_SEEDS:
            write("a-half-60", arm, seed, [0.7] * 16 + [0.2] * 4, [0.7] * 20, [0.5])
    assert round2.pilot_summary(str(tmp_path))["pick"]["a"] == "a-half-60"


def test_the_confirmatory_tests_read_verdicts_as_the_protocol_says():
    rng = random.Random(1)
    rows = []
    for w in round2.CONFIRM_WARM_SEEDS:
        for s in round2.CONFIRM_SEEDS:
            base = {"pass@32_20": 0.78 + rng.gauss(0, 0.01), "acc_auc": 0.34 + rng.gauss(0, 0.01),
                    "entropy_last5": 0.3 + rng.gauss(0, 0.01)}
            for arm in round2.CONFIRM_ARMS:
                mask, dose = arm.split("-")
                row = {k: v + rng.gauss(0, 0.005) for k, v in base.items()}
                if mask == "mask" and dose == "16":
                    row["pass@32_20"] += 0.05                  # a benefit at 16 steps only
                if mask == "mask":
                    row["acc_auc"] += 0.03                     # no early cost: the mask is ahead instead
                rows.append({"arm": arm, "warm_seed": w, "seed": s, "far_share": int(dose) / 100, **row})
    result = round2.analyse(rows)
    verdicts = {t["test"]: t["verdict"] for t in result["tests"]}
    assert verdicts["B-H1 pass@32, 16 steps"] == "supported"
    assert verdicts["B-H1 pass@32, 4 steps"].startswith("not distinguishable; equivalent within")
    assert verdicts["B-H4 dose-response of pass@32"] == "supported"
    assert all(verdicts[f"B-H2 early accuracy, {d} steps"] == "contradicted" for d in round2.DOSES)
    assert all(verdicts[f"B-H3 entropy, {d} steps"].startswith("not distinguishable") for d in round2.DOSES)
    assert all(t["n"] == (24, 24) for t in result["tests"])
    h1 = {t["test"]: t for t in result["tests"] if t["family"] == "pass@32"}
    smallest = min(t["p"] for t in h1.values())                 # Holm within the family: the smallest p times 3
    assert any(abs(t["holm_p"] - min(1.0, 3 * smallest)) < 1e-12 for t in h1.values())
    assert result["checks"]["headroom_holds"] and result["checks"]["pressure_holds"]


def test_the_page_is_what_its_committed_data_give():
    assert round2.write_page(check=True), "research/mechanisms/round2.md drifted: run round2.py report"
