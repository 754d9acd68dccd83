"""Objectives side by side: every algorithm x seed from the same warm start, same prompt budget.

``minitepo compare --algos grpo,dapo,tepo --seeds 3`` trains one RL run per (objective, seed) pair,
all starting from one checkpoint and seeing the same number of prompts per iteration, and writes:

* ``OUT/summary.md`` and ``summary.json``: per objective, iterations and training seconds to reach
  ``--target-accuracy`` on the held-out set (how many seeds got there), final and best accuracy,
  each as mean ± std over seeds;
* ``OUT/curves_step.png`` and ``OUT/curves_seconds.png``: accuracy and entropy of every run.

This is how the project checks claims such as "TEPO converges in about half the time of
GRPO/DAPO". The table reports what the runs measured; nothing is tuned per objective beyond the
spec's defaults. Note that DAPO's dynamic sampling spends extra sampling rounds, which shows up
in seconds, not in iterations.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from pathlib import Path

from minitepo.guards import check_int, check_number, prepare_parent_folder
from minitepo.losses import OBJECTIVES
from minitepo.plotting import plot_runs
from minitepo.quickstart import QuickstartConfig, warm_start
from minitepo.rl import RLConfig, train_rl
from minitepo.runs import read_metrics, write_json


@dataclass
class CompareConfig:
    """Train several objectives from one warm start and compare them."""

    algos: str = "grpo,dapo,tepo"
    """Comma-separated objectives to compare."""
    seeds: int = 3
    """Seeds per objective (0, 1, ...); the table reports mean ± std over them."""
    init: str | None = None
    """Warm-start checkpoint; default: train the quickstart's weak warm start into OUT/warmstart."""
    task: str | None = None
    """Toy task; default: the warm start's (or add at level 3 for a new warm start)."""
    levels: str | None = None
    """Levels, comma-separated; default: the warm start's (3 for the quickstart's warm start)."""
    iterations: int = 300
    """RL iterations per run."""
    prompts: int = 32
    """Prompts per iteration."""
    group_size: int = 8
    """Responses per prompt."""
    minibatches: int = 4
    """Optimizer steps per rollout."""
    lr: float = 2e-4
    """Peak learning rate for every run (cosine decay to ``min_lr_frac`` of it)."""
    min_lr_frac: float = 0.1
    """The learning rate decays to this fraction of ``lr`` by the last iteration."""
    temperature: float = 0.7
    """Sampling temperature (the loss uses the same one)."""
    eval_every: int = 10
    """Held-out evaluation every this many iterations."""
    target_accuracy: float = 0.75
    """Held-out greedy accuracy that counts as "converged" for the time-to-target columns."""
    device: str = "auto"
    """auto, cpu, cuda or mps."""
    out: str = "runs/compare"
    """Output folder: one sub-folder per run, the summary and the plots."""
    overwrite: bool = False
    """Delete runs already in ``out`` and start afresh (without it, runs there are an error, checked before the
    first run starts)."""

    def algo_list(self) -> list[str]:
        names = [a.strip() for a in self.algos.split(",") if a.strip()]
        unknown = [a for a in names if a not in OBJECTIVES]
        if unknown or not names:
            raise ValueError(f"--algos: unknown objective(s) {', '.join(unknown) or '(none given)'}; "
                             f"choose from {', '.join(OBJECTIVES)}")
        return names

    def __post_init__(self):
        """Every value is checked here, before the first of many runs starts: each run's RLConfig is built once
        now, so a value that only RL checks (e.g. --group-size 1) fails at once, not after the warm start."""
        self.algo_list()
        check_int(self, "seeds", 1)
        check_number(self, "target_accuracy", 0, 1, low_open=True, why="an accuracy")
        for algo in self.algo_list():
            self.rl_config(algo, 0, self.init or str(Path(self.out) / "warmstart" / "checkpoint.pt"), self.levels)

    def rl_config(self, algo: str, seed: int, init: str, levels) -> RLConfig:
        """The RL run of ``algo`` with ``seed``: every run sees the same settings but these two."""
        return RLConfig(init=str(init), algo=algo, task=self.task, levels=levels, iterations=self.iterations,
                        prompts=self.prompts, group_size=self.group_size, minibatches=self.minibatches, lr=self.lr,
                        min_lr_frac=self.min_lr_frac, temperature=self.temperature, eval_every=self.eval_every,
                        seed=seed, device=self.device, out=str(Path(self.out) / f"{algo}-seed{seed}"),
                        progress=False, pass_k=0, overwrite=self.overwrite)


def time_to_target(records: list[dict], target: float) -> tuple[int | None, float | None]:
    """(iteration, training seconds) of the first evaluation at or above ``target``; (None, None) if never."""
    for r in records:
        if r.get("eval/greedy_acc/all", -1.0) >= target:
            return r["step"], r.get("time/train_s", 0.0)
    return None, None


def mean_std(values: list[float]) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.3g}"
    return f"{statistics.mean(values):.3g} ± {statistics.stdev(values):.2g}"


def summarize(out: Path, algos: list[str], seeds: int, target: float, prompts: int) -> dict:
    """Read every run's metrics and build the per-objective summary."""
    summary = {}
    for algo in algos:
        rows = []
        for seed in range(seeds):
            records = read_metrics(out / f"{algo}-seed{seed}")
            accs = [r["eval/greedy_acc/all"] for r in records if "eval/greedy_acc/all" in r]
            it, secs = time_to_target(records, target)
            rows.append({"seed": seed, "start": accs[0], "final": accs[-1], "best": max(accs),
                         "iters_to_target": it, "seconds_to_target": secs,
                         "train_seconds": records[-1].get("time/train_s", 0.0),
                         "sampled_prompts": sum(r.get("charts/sample_rounds", 0) for r in records) * prompts})
        summary[algo] = rows
    return summary


def summary_table(summary: dict, target: float, seeds: int) -> str:
    lines = [f"| objective | reached {target:.0%} | iterations to {target:.0%} | seconds to {target:.0%} "
             f"| final acc | best acc | train seconds | prompts sampled |",
             "|---|---|---|---|---|---|---|---|"]
    for algo, rows in summary.items():
        reached = [r for r in rows if r["iters_to_target"] is not None]
        lines.append(
            f"| {algo} | {len(reached)}/{seeds} | {mean_std([r['iters_to_target'] for r in reached])} "
            f"| {mean_std([r['seconds_to_target'] for r in reached])} | {mean_std([r['final'] for r in rows])} "
            f"| {mean_std([r['best'] for r in rows])} | {mean_std([r['train_seconds'] for r in rows])} "
            f"| {mean_std([r['sampled_prompts'] for r in rows])} |")
    return "\n".join(lines)


def run_compare(config: CompareConfig) -> dict:
    out = Path(config.out)
    algos = config.algo_list()
    init, levels = config.init, config.levels
    runs = ([] if init else ["warmstart"]) + [f"{algo}-seed{seed}" for algo in algos for seed in range(config.seeds)]
    if previous := prepare_parent_folder(out, runs, overwrite=config.overwrite):
        print(f"compare: --overwrite: replacing {', '.join(previous)} in {str(out)!r}", flush=True)
    if init is None:  # the quickstart's weak warm start, then RL on its hardest level, as in the quickstart
        quickstart = QuickstartConfig(device=config.device, out=str(out), overwrite=config.overwrite)
        init = warm_start(quickstart)["checkpoint"]
        levels = levels or "3"
    run_dirs = []
    for algo in algos:
        for seed in range(config.seeds):
            run_dir = out / f"{algo}-seed{seed}"
            print(f"compare: {algo} seed {seed} -> {run_dir}", flush=True)
            result = train_rl(config.rl_config(algo, seed, init, levels))
            if result["interrupted"]:  # Ctrl-C: this run is checkpointed; the others are not started
                raise KeyboardInterrupt
            print(f"compare: {algo} seed {seed}: held-out accuracy {result['start_accuracy']:.3f} -> "
                  f"{result['final'].get('eval/greedy_acc/all', float('nan')):.3f} in {result['seconds']:.0f}s", flush=True)
            run_dirs.append(run_dir)
    summary = summarize(out, algos, config.seeds, config.target_accuracy, config.prompts)
    table = summary_table(summary, config.target_accuracy, config.seeds)
    header = (f"# compare: {', '.join(algos)} x {config.seeds} seeds\n\nwarm start `{Path(init).name}`, "
              f"{config.iterations} iterations of {config.prompts} prompts x {config.group_size} responses, "
              f"{config.minibatches} optimizer steps per rollout, lr {config.lr} (cosine to {config.min_lr_frac:g}x), "
              f"temperature {config.temperature}. Mean ± std over seeds; "
              f"time-to-target columns average the seeds that reached it.\n\n")
    (out / "summary.md").write_text(header + table + "\n")
    write_json(out / "summary.json", {"config": dataclasses.asdict(config), "init": str(init), "runs": summary})
    for x in ("step", "seconds"):
        plot_runs(run_dirs, out / f"curves_{x}.png", x=x,
                  keys=("eval/greedy_acc/all", "charts/entropy", "tepo/mask_frac"),
                  title=f"{', '.join(algos)} from one warm start")
    print(table)
    print(f"compare: wrote {out / 'summary.md'}, {out / 'curves_step.png'}, {out / 'curves_seconds.png'}")
    return summary
