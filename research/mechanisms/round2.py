"""Mechanisms, round 2 (issue 45): token-level design measured where it can show. The protocol is
research/mechanisms/round2.md; everything it fixes in code is here, committed with it before any run.

    python3 research/mechanisms/round2.py warm CANDIDATE --seed S --out DIR     # a warm start and its sampled profile
    python3 research/mechanisms/round2.py run EXP ARM --warm DIR --seed N --out FILE.json
    python3 research/mechanisms/round2.py pilot-jobs                           # the pilot's commands, one per line
    python3 research/mechanisms/round2.py pilot-summary RUNS_DIR [--json F]    # the pilot's numbers and the rule's pick
    python3 research/mechanisms/round2.py confirm-jobs                         # the confirmatory round's commands
    python3 research/mechanisms/round2.py collect RUNS_DIR b --json F          # every finished run, summarised
    python3 research/mechanisms/round2.py report [--check]                     # write (or check) round2.md's tables

Experiment A asks when token-mean and per-sequence aggregation train differently (a regime where right answers of
very different lengths keep meeting in one group); experiment B asks when TEPO's mask pays (a task with headroom,
under {4, 8, 16} optimizer steps per rollout). Nothing here changes how the library trains: ``Probe`` is a
``Trainer`` that also keeps what this round measures beyond the record (the lengths of right and wrong answers,
the share of tokens whose log-ratio left ±0.4, the mask term's share of the gradient norm).
"""

from __future__ import annotations

import argparse
import re
import json
import math
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from minitepo import Trainer, TrainerConfig  # noqa: E402
from minitepo.evaluate import greedy_accuracy, pass_at_k_estimate, verdicts  # noqa: E402
from minitepo.lab.checkpoint import load_model  # noqa: E402
from minitepo.lab.sft_run import SFTConfig, train_sft  # noqa: E402
from minitepo.lab.stats import (format_ci, holm, min_detectable_effect, min_detectable_effect_of, t_mean_ci,  # noqa: E402
                                 welch_test)
from minitepo.rl import length_cv_in_groups  # noqa: E402
from minitepo.rollout import collect_rollout  # noqa: E402
from toy_tasks import make_task  # noqa: E402

FAR = 0.4
"""A token is "far" from the policy that sampled it when |log pi_theta - log pi_old| > 0.4 nats (TEPO's clip)."""
CV_MIXED = 0.5
"""The manipulation check's threshold on the within-group coefficient of variation of response lengths."""
PASS_KS, PASS_SAMPLES, PASS_TEMPERATURE = (1, 8, 32), 32, 1.0

# Warm-start candidates: a task (with options), a level, and the supervised recipe (1,500 steps at the core's
# supervised settings, or an early stop at a greedy accuracy on the level's held-out prompts).
CANDIDATES = {
    # experiment A: add_or_cot, both forms trained further than round 1's (which settled at 37%, its direct form 33%
    # right when sampled against 84% for steps), so that the two forms are closer in accuracy
    "a-half-60": dict(task="add_or_cot", level=3, options={"steps_share": 0.5}, settle_at=0.6),
    "a-half-full": dict(task="add_or_cot", level=3, options={"steps_share": 0.5}, settle_at=None),
    "a-quarter-full": dict(task="add_or_cot", level=3, options={"steps_share": 0.25}, settle_at=None),
    # experiment B: countdown, a task where round 1's studies saw accuracy stay at 20-35% for 100 iterations
    "b-countdown4-35": dict(task="countdown", level=4, options={}, settle_at=0.35),
    "b-countdown3-35": dict(task="countdown", level=3, options={}, settle_at=0.35),
}
EVAL_PROMPTS = {"a": 1000, "b": 500}
"""Held-out prompts per experiment (one level each): the same set for the warm start's checks and for RL."""

SHARED = replace(TrainerConfig(), prompts=32, group_size=8, temperature=0.7, lr=2e-4, min_lr_frac=0.1)
"""Round 1's shared RL settings (research/mechanisms/README.md): 32 prompts x 8 answers at temperature 0.7, lr 2e-4
with a cosine decay to 2e-5, no KL to a reference, no overlong shaping, no format bonus."""
ITERATIONS = 20
EVAL_EVERY = 2
PASS_AT = (0, 10, 20)
"""Experiment B's iterations at which pass@{1,8,32} is measured (32 samples per prompt at temperature 1.0)."""
GRAD_SHARE_AT = (5, 10, 15, 20)
"""Experiment B's iterations at which every optimizer step also measures the mask term's gradient norm."""


def arm_config(experiment: str, arm: str, seed: int, iterations: int = ITERATIONS) -> TrainerConfig:
    """The TrainerConfig of one arm. A: TEPO without its mask and without dynamic sampling (round 1's A3/A4), one
    pass of 4 optimizer steps per rollout, token-mean or per-sequence mean. B: TEPO as shipped (dynamic sampling on)
    with or without the mask, ``steps`` optimizer steps per rollout as passes of 4 mini-batches ("mask-16")."""
    base = replace(SHARED, iterations=iterations, seed=seed, algo="tepo")
    if experiment == "a":
        agg = {"token-mean": "token-mean", "seq-mean": "seq-mean-token-mean"}[arm]
        return replace(base, objective={"beta_mask": 0.0, "agg": agg}, dynamic_sampling=False, minibatches=4, epochs=1)
    mask, steps = arm.split("-")
    objective = {"mask": {}, "nomask": {"beta_mask": 0.0}}[mask]
    return replace(base, objective=objective, minibatches=4, epochs=int(steps) // 4)


def build_task(candidate: str):
    c = CANDIDATES[candidate]
    return make_task(c["task"], levels=(c["level"],), eval_per_level=EVAL_PROMPTS[candidate[0]], **c["options"])


# -- the warm start ---------------------------------------------------------------------------------------------

def warm(candidate: str, seed: int, out: str) -> dict:
    """Train a candidate's warm start into ``out`` and write its profile (``profile.json``) beside the checkpoint."""
    c, task = CANDIDATES[candidate], build_task(candidate)
    settle = dict(settle_at=c["settle_at"], settle_metric=f"level/{c['level']}", settle_steps=0,
                  settle_check_near=0.5) if c["settle_at"] else {}
    t0 = time.perf_counter()
    summary = train_sft(SFTConfig(task=c["task"], levels=str(c["level"]), seed=seed, out=out, overwrite=True,
                                  progress=False, **settle), task=task)
    model, tokenizer, _ = load_model(Path(out) / "checkpoint.pt")
    profile = {"candidate": candidate, "seed": seed, "sft_steps": summary["steps"], "settled": summary.get("settled"),
               "sft_seconds": time.perf_counter() - t0, "greedy": greedy_accuracy(model, tokenizer, task, precision="fp32"),
               "sampled": sampled_profile(model, tokenizer, task, seed)}
    (Path(out) / "profile.json").write_text(json.dumps(profile, indent=1))
    return profile


def sampled_profile(model, tokenizer, task, seed: int, prompts: int = 64) -> dict:
    """What RL would first sample: 64 training prompts x 8 answers at the RL temperature."""
    rng = random.Random(seed)
    rollout = collect_rollout(model, tokenizer, task, [task.sample(rng) for _ in range(prompts)], group_size=8,
                              temperature=SHARED.temperature, generator=torch.Generator().manual_seed(seed),
                              precision="fp32")
    return {"reward": rollout.correct.float().mean().item(), **answer_numbers([rollout], task, 8)}


# -- what this round measures beyond the trainer's record --------------------------------------------------------

def answer_numbers(rollouts, task, group_size: int) -> dict:
    """Lengths of right and wrong sampled answers (tokens with EOS), the length spread, and for a task of two
    forms each form's share and accuracy and the share of groups holding both forms."""
    lengths = torch.cat([r.lengths for r in rollouts]).float()
    correct = torch.cat([r.correct for r in rollouts])
    mean = lambda x: x.mean().item() if x.numel() else float("nan")  # noqa: E731
    out = {"len_right": mean(lengths[correct]), "len_wrong": mean(lengths[~correct]),
           "len_cv": length_cv_in_groups(lengths, group_size)}
    forms = getattr(task, "FORMS", ())
    if forms:
        form = torch.cat([r.form for r in rollouts])
        for index, name in enumerate(forms):
            share = form == index
            out[f"share_{name}"] = share.float().mean().item()
            out[f"acc_{name}"] = mean(correct[share].float())
        per_group = form.view(-1, group_size)
        out["both_forms"] = (per_group.min(1).values != per_group.max(1).values).float().mean().item()
    return out


def far_share(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor) -> float:
    """Share of real tokens whose log-ratio to the sampling policy is beyond ±FAR."""
    m = mask.bool()
    return ((logp.detach() - old_logp).abs() > FAR)[m].float().mean().item() if m.any() else 0.0


def grad_norm(loss: torch.Tensor, params: list[torch.Tensor]) -> float:
    grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    return math.sqrt(sum(float(g.square().sum()) for g in grads if g is not None))


class Probe(Trainer):
    """A Trainer that also logs, per optimizer step, the far-token share (and at ``grad_share_at`` iterations the
    gradient norms of the policy term and of the mask term), and keeps each iteration's sampled rollouts."""

    def __init__(self, *args, grad_share_at=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.grad_share_at, self.steps_log, self.sampled = set(grad_share_at), [], []
        objective, masked = self.objective, (self.config.objective_setting("beta_mask") or 0) > 0

        def observed(**kw):
            loss, stats = objective(**kw)
            step = {"far_share": far_share(kw["logp"], kw["old_logp"], kw["mask"]),
                    "mask_frac": float(stats.get("mask_frac", float("nan")))}
            if masked and self.iteration + 1 in self.grad_share_at:
                params = [p for p in self.model.parameters() if p.requires_grad]
                policy_only, _ = objective(**{**kw, "beta_mask": 0.0})
                g_policy = grad_norm(policy_only, params)
                step.update(g_policy=g_policy, g_mask=grad_norm(loss - policy_only, params))
            self.steps_log.append(step)
            return loss, stats

        self.objective = observed

    def sample_rollout(self):
        rollout, sampled = super().sample_rollout()
        self.sampled = sampled
        return rollout, sampled


# -- one run ------------------------------------------------------------------------------------------------------

RECORD_KEYS = ("charts/reward_mean", "charts/len_cv_in_group", "charts/entropy_sampled", "charts/sample_rounds",
               "charts/tokens_sampled", "charts/groups_trained", "tepo/mask_frac_later_steps",
               "losses/approx_kl_old_later_steps", "losses/clip_frac_later_steps")


def run(experiment: str, arm: str, warm_dir: str, seed: int, out: str, iterations: int = ITERATIONS) -> dict:
    """One RL run from a warm start; writes ``out`` (JSON: the config, every iteration's numbers, the evaluations)."""
    profile = json.loads((Path(warm_dir) / "profile.json").read_text())
    task = build_task(profile["candidate"])
    model, tokenizer, _ = load_model(Path(warm_dir) / "checkpoint.pt")
    torch.manual_seed(seed)
    config = arm_config(experiment, arm, seed, iterations)
    trainer = Probe(config, model, tokenizer, task, grad_share_at=GRAD_SHARE_AT if experiment == "b" else ())
    t0, iterations_log, evals = time.perf_counter(), [], []

    def evaluate(it):
        entry = {"iteration": it, **{k: v for k, v in greedy_accuracy(model, tokenizer, task, precision="fp32").items()}}
        if experiment == "b" and it in PASS_AT:
            correct = verdicts(model, tokenizer, task, task.eval_set(), group_size=PASS_SAMPLES,
                               temperature=PASS_TEMPERATURE, generator=torch.Generator().manual_seed(seed * 1000 + it),
                               precision="fp32")
            counts = [sum(correct[i:i + PASS_SAMPLES]) for i in range(0, len(correct), PASS_SAMPLES)]
            entry.update({f"pass@{k}": statistics.fmean(pass_at_k_estimate(PASS_SAMPLES, c, k) for c in counts)
                          for k in PASS_KS})
        evals.append(entry)

    evaluate(0)
    for it in range(1, iterations + 1):
        trainer.steps_log = []
        record = trainer.iterate()
        entry = {"iteration": it, **{k: record[k] for k in RECORD_KEYS if k in record},
                 **answer_numbers(trainer.sampled, task, config.group_size), "steps": trainer.steps_log}
        iterations_log.append(entry)
        if it % EVAL_EVERY == 0:
            evaluate(it)
    result = {"experiment": experiment, "arm": arm, "seed": seed, "warm": profile, "config": repr(config),
              "seconds": time.perf_counter() - t0, "iterations": iterations_log, "evals": evals}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(str(out) + ".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(out)   # a run's file appears whole or not at all
    return result


# -- the pilot ------------------------------------------------------------------------------------------------------

PILOT_WARM_SEED = 2001
PILOT_SEEDS = (2100, 2101)
"""The pilot's seeds (the warm starts' and RL's); never used again."""
PILOT_ARMS = {"a": ("token-mean", "seq-mean"), "b": ("mask-16", "nomask-16")}


def pilot_jobs(runs: str = "runs/mech2/pilot") -> list[str]:
    """The pilot's commands: the warm starts first (one line each), then the runs (one line each)."""
    me = "python3 research/mechanisms/round2.py"
    warms = [f"{me} warm {c} --seed {PILOT_WARM_SEED} --out {runs}/warm/{c}" for c in CANDIDATES]
    rl = [f"{me} run {c[0]} {arm} --warm {runs}/warm/{c} --seed {s} --out {runs}/{c}/{arm}-{s}.json"
          for c in CANDIDATES for arm in PILOT_ARMS[c[0]] for s in PILOT_SEEDS]
    return warms + rl


def cv_fraction(result: dict) -> float:
    """Share of a run's iterations whose within-group length CV is at least CV_MIXED (the manipulation check)."""
    its = result["iterations"]
    return sum(i["charts/len_cv_in_group"] >= CV_MIXED for i in its) / len(its)


def early_reward(result: dict, last: int = 10) -> float:
    """Mean sampled reward over iterations 1..last (experiment A's primary outcome)."""
    return statistics.fmean(i["charts/reward_mean"] for i in result["iterations"][:last])


def eval_accuracies(result: dict, first: int = 2) -> list[float]:
    return [e["all"] for e in result["evals"] if e["iteration"] >= first]


def pilot_summary(runs_dir: str) -> dict:
    """Every candidate's pilot numbers and the rule's pick per experiment (round2.md, "The pilot")."""
    out = {"candidates": {}, "pick": {}}
    for candidate in CANDIDATES:
        files = sorted(Path(runs_dir, candidate).glob("*.json"))
        results = [json.loads(f.read_text()) for f in files]
        profile_file = Path(runs_dir, "warm", candidate, "profile.json")
        entry = {"profile": json.loads(profile_file.read_text()) if profile_file.exists() else None,
                 "runs": len(results)}
        if results:
            entry["seconds_per_run"] = statistics.fmean(r["seconds"] for r in results)
        if results and candidate[0] == "a":
            entry["cv_fraction"] = {f"{r['arm']}-{r['seed']}": cv_fraction(r) for r in results}
            entry["early_reward"] = {f"{r['arm']}-{r['seed']}": early_reward(r) for r in results}
            entry["qualifies"] = (len(results) == 4 and min(entry["cv_fraction"].values()) >= 0.75
                                  and statistics.fmean(entry["early_reward"].values()) <= 0.85)
        if results and candidate[0] == "b":
            entry["eval_acc"] = {f"{r['arm']}-{r['seed']}": eval_accuracies(r) for r in results}
            entry["mean_eval_acc"] = {k: statistics.fmean(v) for k, v in entry["eval_acc"].items()}
            every = [a for v in entry["eval_acc"].values() for a in v]
            entry["qualifies"] = (len(results) == 4 and all(0.25 <= a <= 0.75 for a in every)
                                  and 0.30 <= statistics.median(entry["mean_eval_acc"].values()) <= 0.70)
        out["candidates"][candidate] = entry
    for experiment in ("a", "b"):
        ok = {c: e for c, e in out["candidates"].items() if c[0] == experiment and e.get("qualifies")}
        if experiment == "a":
            key = lambda c: (-min(ok[c]["cv_fraction"].values()), statistics.fmean(ok[c]["early_reward"].values()))  # noqa: E731
        else:
            key = lambda c: abs(statistics.fmean(ok[c]["mean_eval_acc"].values()) - 0.5)  # noqa: E731
        out["pick"][experiment] = min(ok, key=key) if ok else None
    return out


# -- the confirmatory round: experiment B only (experiment A had no regime in the pilot) -------------------------

CONFIRM_CANDIDATE = "b-countdown3-35"
"""The pilot's pick for experiment B (``pilot_summary``; research/mechanisms/data/round2-pilot.json)."""
CONFIRM_WARM_SEEDS = (3001, 3002, 3003)
CONFIRM_SEEDS = tuple(range(3100, 3108))
"""Three warm starts of the picked recipe, 8 RL seeds on each: 24 runs per arm, every arm on the same 24 (warm
start, seed) pairs. None of these seeds was used before."""
DOSES = (4, 8, 16)
CONFIRM_ARMS = tuple(f"{mask}-{dose}" for dose in DOSES for mask in ("mask", "nomask"))
ALPHA, POWER = 0.05, 0.8
TOST_MARGIN = 0.03
"""An equivalence claim ("no difference larger than 3 points") needs the 90% Welch interval inside ±0.03."""
COLLAPSE_ENTROPY_FRACTION, COLLAPSE_ACCURACY_DROP = 0.25, 0.15


def confirm_jobs(runs: str = "runs/mech2/confirm") -> list[str]:
    """The confirmatory round's commands: the warm starts first, then the runs (the largest dose first)."""
    me = "python3 research/mechanisms/round2.py"
    warms = [f"{me} warm {CONFIRM_CANDIDATE} --seed {w} --out {runs}/warm/w{w}" for w in CONFIRM_WARM_SEEDS]
    order = sorted(CONFIRM_ARMS, key=lambda arm: -int(arm.split("-")[1]))
    rl = [f"{me} run b {arm} --warm {runs}/warm/w{w} --seed {s} --out {runs}/{arm}/w{w}-{s}.json"
          for w in CONFIRM_WARM_SEEDS for s in CONFIRM_SEEDS for arm in order]
    return warms + rl


def collapsed(result: dict) -> bool:
    """A run collapses when its sampled entropy falls below a quarter of its first iteration's, or a greedy
    evaluation falls 0.15 or more below the best evaluation before it."""
    entropy = [i["charts/entropy_sampled"] for i in result["iterations"]]
    accuracy = [e["all"] for e in result["evals"]]
    fell = any(a <= max(accuracy[:k]) - COLLAPSE_ACCURACY_DROP for k, a in enumerate(accuracy) if k)
    return min(entropy) < COLLAPSE_ENTROPY_FRACTION * entropy[0] or fell


def run_summary(result: dict) -> dict:
    """One experiment-B run's numbers, as the tests read them (later steps: every optimizer step of a rollout but
    its first, which is on-policy)."""
    its, evals = result["iterations"], result["evals"]
    at = {e["iteration"]: e for e in evals}
    later = [step for it in its for step in it["steps"][1:]]
    shares = [s["g_mask"] / s["g_policy"] for s in later if "g_mask" in s and s["g_policy"] > 0]
    summary = {"arm": result["arm"], "warm_seed": result["warm"]["seed"], "seed": result["seed"],
               "seconds": result["seconds"], "acc_auc": statistics.fmean(eval_accuracies(result)),
               "final": evals[-1]["all"], "entropy_last5": statistics.fmean(i["charts/entropy_sampled"] for i in its[-5:]),
               "far_share": statistics.median(s["far_share"] for s in later) if later else 0.0,
               "mask_frac": statistics.median(s["mask_frac"] for s in later) if later else 0.0,
               "grad_share": statistics.median(shares) if shares else None,
               "grad_share_above_1": sum(x > 1 for x in shares) / len(shares) if shares else None,
               "collapsed": collapsed(result)}
    for it in PASS_AT:
        summary.update({f"pass@{k}_{it}": at[it][f"pass@{k}"] for k in PASS_KS})
    summary["curve"] = {"iteration": [e["iteration"] for e in evals], "greedy": [round(e["all"], 4) for e in evals],
                        "entropy": [round(i["charts/entropy_sampled"], 5) for i in its]}
    return summary


# (name, metric, dose or None, sign the prediction gives mask - nomask (+1, -1, or 0: two-sided), family)
TESTS = [(f"B-H1 pass@32, {d} steps", "pass@32_20", d, +1, "pass@32") for d in DOSES] + \
        [(f"B-H2 early accuracy, {d} steps", "acc_auc", d, -1, "early") for d in DOSES] + \
        [(f"B-H3 entropy, {d} steps", "entropy_last5", d, +1, "entropy") for d in DOSES] + \
        [("B-H4 dose-response of pass@32", "pass@32_20", None, +1, "dose")]


def by_pair(rows: list[dict], arm: str, metric: str) -> dict:
    return {(r["warm_seed"], r["seed"]): r[metric] for r in rows if r["arm"] == arm}


def test_values(rows: list[dict], metric: str, dose: int | None) -> tuple[list[float], list[float]]:
    """The two groups a test compares: mask and no-mask runs at ``dose``; for the dose-response test, the per-pair
    mask - no-mask differences at 16 steps and at 4."""
    if dose is not None:
        return list(by_pair(rows, f"mask-{dose}", metric).values()), list(by_pair(rows, f"nomask-{dose}", metric).values())
    diff = {}
    for d in (DOSES[-1], DOSES[0]):
        on, off = by_pair(rows, f"mask-{d}", metric), by_pair(rows, f"nomask-{d}", metric)
        diff[d] = [on[k] - off[k] for k in sorted(on) if k in off]
    return diff[DOSES[-1]], diff[DOSES[0]]


def analyse(rows: list[dict]) -> dict:
    """The manipulation checks and every pre-registered test (Welch, Holm within its family), with the smallest
    difference each test detects at 80% power at its family's first Holm level, and TOST where one is named."""
    med = lambda arm, key: statistics.median(r[key] for r in rows if r["arm"] == arm)  # noqa: E731
    checks = {"headroom": {arm: med(arm, "acc_auc") for arm in CONFIRM_ARMS},
              "pressure": {d: med(f"nomask-{d}", "far_share") for d in DOSES}}
    checks["headroom_holds"] = all(0.30 <= v <= 0.70 for v in checks["headroom"].values())
    pressure = [checks["pressure"][d] for d in DOSES]
    checks["pressure_holds"] = all(a < b for a, b in zip(pressure, pressure[1:]))
    results, pvalues = [], {}
    for name, metric, dose, sign, family in TESTS:
        a, b = test_values(rows, metric, dose)
        w = welch_test(a, b)
        m = sum(1 for t in TESTS if t[4] == family)
        equivalence = welch_test(a, b, level=1 - 2 * ALPHA)
        compares = (f"mask-{dose} − nomask-{dose}" if dose is not None else
                    f"(mask-{DOSES[-1]} − nomask-{DOSES[-1]}) − (mask-{DOSES[0]} − nomask-{DOSES[0]}), per pair")
        results.append({"test": name, "metric": metric, "compares": compares, "family": family, "sign": sign,
                        "n": (len(a), len(b)),
                        **w, "mde": min_detectable_effect_of(a, b, alpha=ALPHA / m, power=POWER),
                        "within_margin": -TOST_MARGIN < equivalence["low"] and equivalence["high"] < TOST_MARGIN})
        pvalues.setdefault(family, {})[name] = w["p"]
    adjusted = {name: p for family in pvalues.values() for name, p in holm(family).items()}
    for r in results:
        r["holm_p"] = adjusted[r["test"]]
        r["verdict"] = verdict(r)
    return {"checks": checks, "tests": results}


def verdict(r: dict) -> str:
    if r["holm_p"] <= ALPHA:
        if r["sign"] == 0:
            return "different"
        return "supported" if r["diff"] * r["sign"] > 0 else "contradicted"
    if r["within_margin"]:
        return f"not distinguishable; equivalent within ±{TOST_MARGIN} (TOST)"
    return "not distinguishable"


def power_table(pilot_rows: list[dict], seeds=(16, 20, 24)) -> list[dict]:
    """The smallest difference each confirmatory test detects (80% power, Welch, its family's first Holm level),
    for a planning sd of twice the pilot's pooled sd (2 seeds per arm on one warm start: a rough, likely low
    estimate, where the confirmatory round has three warm starts)."""
    rows = []
    for metric in ("pass@32_20", "acc_auc", "entropy_last5"):
        on = [r[metric] for r in pilot_rows if r["arm"] == "mask-16"]
        off = [r[metric] for r in pilot_rows if r["arm"] == "nomask-16"]
        pooled = math.sqrt((statistics.variance(on) + statistics.variance(off)) / 2)
        m = sum(1 for t in TESTS if t[1] == metric and t[2] is not None)
        rows.append({"metric": metric, "pilot_sd": pooled, "planning_sd": 2 * pooled,
                     **{f"mde_{n}": min_detectable_effect(2 * pooled, n, 2 * pooled, n, alpha=ALPHA / m, power=POWER)
                        for n in seeds}})
    return rows


def collect(runs_dir: str, experiment: str) -> list[dict]:
    """Every finished run under ``runs_dir`` (one sub-folder per arm or candidate), summarised."""
    rows = []
    for path in sorted(Path(runs_dir).glob("*/*.json")):
        result = json.loads(path.read_text())
        if result.get("experiment") == experiment:
            rows.append(run_summary(result) if experiment == "b" else
                        {"arm": result["arm"], "seed": result["seed"], "candidate": result["warm"]["candidate"],
                         "cv_fraction": cv_fraction(result), "early_reward": early_reward(result),
                         "curve": {k: [round(i[key], 4) for i in result["iterations"]] for k, key in
                                   (("len_cv", "charts/len_cv_in_group"), ("steps_share", "share_steps"),
                                    ("reward", "charts/reward_mean"))}})
            if experiment == "b":
                rows[-1]["candidate"] = result["warm"]["candidate"]
    return rows


# -- the page's generated blocks -----------------------------------------------------------------------------------

PAGE = ROOT / "research" / "mechanisms" / "round2.md"
DATA = ROOT / "research" / "mechanisms" / "data"
g = lambda x: "—" if x is None else f"{x:.3g}"  # noqa: E731


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def mean_ci(values) -> str:
    return format_ci(t_mean_ci(list(values)))


def blocks() -> dict[str, str]:
    pilot = json.loads((DATA / "round2-pilot.json").read_text())
    out = {}
    rows = []
    for c, e in pilot["summary"]["candidates"].items():
        p = e["profile"]
        if c[0] != "a":
            continue
        s = p["sampled"]
        rows.append([f"`{c}`", p["sft_steps"], g(p["greedy"]["all"]), f"{g(s['share_steps'])} / {g(s['acc_direct'])} / "
                     f"{g(s['acc_steps'])}", g(s["len_cv"]), g(min(e["cv_fraction"].values())),
                     g(statistics.fmean(e["early_reward"].values())), "yes" if e["qualifies"] else "no"])
    out["round2-pilot-a"] = table(["candidate", "supervised steps", "greedy held-out", "sampled at the start: steps "
                                   "share / direct right / steps right", "length CV at the start",
                                   "share of iterations with CV ≥ 0.5 (worst of 4 runs)", "sampled reward, iterations "
                                   "1-10", "qualifies"], rows)
    steps_share = {}
    for r in pilot["a"]:
        steps_share.setdefault(r["candidate"], []).append(r["curve"]["steps_share"])
    out["round2-pilot-a-forms"] = table(
        ["candidate", "runs", "sampled steps share at iterations 1 / 2 / 3 / 4 / 5 / 10 / 20 (mean of runs)"],
        [[f"`{c}`", len(v), " / ".join(g(statistics.fmean(run[i - 1] for run in v)) for i in (1, 2, 3, 4, 5, 10, 20))]
         for c, v in steps_share.items()])
    rows = []
    for c, e in pilot["summary"]["candidates"].items():
        if c[0] != "b":
            continue
        p = e["profile"]
        accs = [a for v in e["eval_acc"].values() for a in v]
        rows.append([f"`{c}`", p["sft_steps"], g(p["greedy"]["all"]), g(p["sampled"]["reward"]),
                     f"{g(min(accs))}-{g(max(accs))}", g(statistics.median(e["mean_eval_acc"].values())),
                     "yes" if e["qualifies"] else "no"])
    out["round2-pilot-b"] = table(["candidate", "supervised steps", "greedy held-out", "sampled reward at the start",
                                   "greedy evaluations, iterations 2-20 (range over 4 runs)",
                                   "mean evaluation accuracy (median of runs)", "qualifies"], rows)
    picked = [r for r in pilot["b"] if r["candidate"] == CONFIRM_CANDIDATE]
    out["round2-power"] = table(["metric", "pilot sd (pooled, 2+2 runs)", "planning sd (2x)",
                                 "smallest detectable, 16 per arm", "20 per arm", "24 per arm"],
                                [[r["metric"], g(r["pilot_sd"]), g(r["planning_sd"]), g(r["mde_16"]), g(r["mde_20"]),
                                  g(r["mde_24"])] for r in power_table(picked)])
    confirm_file = DATA / "round2-confirm.json"
    if confirm_file.exists():
        out.update(confirm_blocks(json.loads(confirm_file.read_text())["runs"]))
    return out


def confirm_blocks(rows: list[dict]) -> dict[str, str]:
    result = analyse(rows)
    c = result["checks"]
    out = {"round2-checks": table(
        ["check", "pre-registered condition", "measured", "holds"],
        [["headroom", "every arm's median mean evaluation accuracy (iterations 2-20) in [0.30, 0.70]",
          ", ".join(f"{a} {g(v)}" for a, v in c["headroom"].items()), "yes" if c["headroom_holds"] else "**no**"],
         ["pressure", "the no-mask arms' median far-token share on later steps rises with the dose",
          ", ".join(f"{d} steps {g(v)}" for d, v in c["pressure"].items()), "yes" if c["pressure_holds"] else "**no**"]])}
    arms = []
    for arm in CONFIRM_ARMS:
        a = [r for r in rows if r["arm"] == arm]
        shares = [r["grad_share"] for r in a if r["grad_share"] is not None]
        arms.append([arm, len(a), mean_ci(r["pass@32_20"] for r in a), mean_ci(r["pass@8_20"] for r in a),
                     mean_ci(r["pass@1_20"] for r in a), mean_ci(r["acc_auc"] for r in a), mean_ci(r["final"] for r in a),
                     mean_ci(r["entropy_last5"] for r in a), g(statistics.median(r["far_share"] for r in a)),
                     g(statistics.median(r["mask_frac"] for r in a)),
                     g(statistics.median(shares)) if shares else "—", sum(r["collapsed"] for r in a)])
    out["round2-arms"] = table(["arm", "n", "pass@32, it. 20", "pass@8, it. 20", "pass@1, it. 20",
                                "mean greedy accuracy, it. 2-20", "final greedy", "entropy, all samples, it. 16-20",
                                "far-token share, later steps (median of runs)", "mask fraction, later steps (median)",
                                "mask / policy gradient norm (median of runs' medians)", "collapsed runs"], arms)
    out["round2-tests"] = table(
        ["test", "metric", "compares", "difference [95% Welch]", "p", "Holm p",
         "smallest detectable (80%, Holm level)", "verdict"],
        [[t["test"], t["metric"], t["compares"], f"{g(t['diff'])} [{g(t['low'])}, {g(t['high'])}]", g(t["p"]),
          g(t["holm_p"]),
          g(t["mde"]), f"**{t['verdict']}**"] for t in result["tests"]])
    return out


def write_page(check: bool) -> bool:
    text = PAGE.read_text()
    new = text
    for name, body in blocks().items():
        pattern = re.compile(rf"(<!-- BEGIN {name} -->\n).*?(<!-- END {name} -->)", re.S)
        if not pattern.search(new):
            raise SystemExit(f"{PAGE.name} has no block {name}")
        new = pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), new)
    if check:
        return new == text
    PAGE.write_text(new)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("warm")
    w.add_argument("candidate", choices=sorted(CANDIDATES))
    w.add_argument("--seed", type=int, required=True)
    w.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("experiment", choices=("a", "b"))
    r.add_argument("arm")
    r.add_argument("--warm", required=True)
    r.add_argument("--seed", type=int, required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--iterations", type=int, default=ITERATIONS)
    sub.add_parser("pilot-jobs")
    sub.add_parser("confirm-jobs")
    c = sub.add_parser("collect")
    c.add_argument("runs_dir")
    c.add_argument("experiment", choices=("a", "b"))
    c.add_argument("--json", required=True)
    p = sub.add_parser("report")
    p.add_argument("--check", action="store_true")
    s = sub.add_parser("pilot-summary")
    s.add_argument("runs_dir")
    s.add_argument("--json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.command == "warm":
        print(json.dumps(warm(args.candidate, args.seed, args.out), indent=1))
    elif args.command == "run":
        if Path(args.out).exists():
            print(f"{args.out} exists: skipped")
            return
        result = run(args.experiment, args.arm, args.warm, args.seed, args.out, args.iterations)
        print(f"{args.out}: {result['seconds']:.0f} s, final greedy {result['evals'][-1]['all']:.3f}")
    elif args.command == "pilot-jobs":
        print("\n".join(pilot_jobs()))
    elif args.command == "confirm-jobs":
        print("\n".join(confirm_jobs()))
    elif args.command == "collect":
        rows = collect(args.runs_dir, args.experiment)
        Path(args.json).write_text(json.dumps({"runs": rows}, indent=None) + "\n")
        print(f"{len(rows)} runs -> {args.json}")
    elif args.command == "report":
        if not write_page(args.check):
            raise SystemExit(f"{PAGE} differs from what its data give: run round2.py report")
        print("round2.md: " + ("matches its data" if args.check else "written"))
    else:
        summary = pilot_summary(args.runs_dir)
        print(json.dumps(summary["pick"]))
        if args.json:   # the rule's numbers and pick, and every pilot run summarised
            data = {"summary": summary, "a": collect(args.runs_dir, "a"), "b": collect(args.runs_dir, "b")}
            Path(args.json).write_text(json.dumps(data, indent=None) + "\n")


if __name__ == "__main__":
    main()
