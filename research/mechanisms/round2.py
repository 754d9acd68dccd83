"""Mechanisms, round 2 (issue 45): token-level design measured where it can show. The protocol is
research/mechanisms/round2.md; everything it fixes in code is here, committed with it before any run.

    python3 research/mechanisms/round2.py warm CANDIDATE --seed S --out DIR     # a warm start and its sampled profile
    python3 research/mechanisms/round2.py run EXP ARM --warm DIR --seed N --out FILE.json
    python3 research/mechanisms/round2.py pilot-jobs                           # the pilot's commands, one per line
    python3 research/mechanisms/round2.py pilot-summary RUNS_DIR               # the pilot's numbers and the rule's pick

Experiment A asks when token-mean and per-sequence aggregation train differently (a regime where right answers of
very different lengths keep meeting in one group); experiment B asks when TEPO's mask pays (a task with headroom,
under {4, 8, 16} optimizer steps per rollout). Nothing here changes how the library trains: ``Probe`` is a
``Trainer`` that also keeps what this round measures beyond the record (the lengths of right and wrong answers,
the share of tokens whose log-ratio left ±0.4, the mask term's share of the gradient norm).
"""

from __future__ import annotations

import argparse
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
from minitepo.losses import OBJECTIVES  # noqa: E402
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

def length_cv(lengths: torch.Tensor, group_size: int) -> float:
    """Mean over groups of (population sd / mean) of the response lengths in a group (as the record's)."""
    per_group = lengths.float().view(-1, group_size)
    return (per_group.std(1, unbiased=False) / per_group.mean(1).clamp(min=1e-9)).mean().item()


def answer_numbers(rollouts, task, group_size: int) -> dict:
    """Lengths of right and wrong sampled answers (tokens with EOS), the length spread, and for a task of two
    forms each form's share and accuracy and the share of groups holding both forms."""
    lengths = torch.cat([r.lengths for r in rollouts]).float()
    correct = torch.cat([r.correct for r in rollouts])
    mean = lambda x: x.mean().item() if x.numel() else float("nan")  # noqa: E731
    out = {"len_right": mean(lengths[correct]), "len_wrong": mean(lengths[~correct]),
           "len_cv": length_cv(lengths, group_size)}
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
    else:
        summary = pilot_summary(args.runs_dir)
        text = json.dumps(summary, indent=1)
        if args.json:
            Path(args.json).write_text(text + "\n")
        print(text)


if __name__ == "__main__":
    main()
