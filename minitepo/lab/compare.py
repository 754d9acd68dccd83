"""Objectives side by side: every objective x seed from the same warm start, same prompt budget.

``minitepo compare --algos grpo,dapo,tepo --seeds 5`` trains one RL run per (objective, seed) pair,
all starting from one checkpoint and seeing the same number of prompts per iteration. An entry of
``--algos`` may carry overrides, which is how ablations are written:
``tepo:beta_mask=0`` (mask off), ``tepo:mask_criterion=positive``, ``tepo:mask_criterion=predicted``,
``gspo:eps_low=0.2+eps_high=0.28`` (several overrides joined by ``+``). It writes:

* ``OUT/summary.md`` and ``summary.json``: per entry, what ran (its reading with every default resolved:
  ``RLConfig.resolved_reading``, so a label cannot drift when a default changes), then iterations, sampled
  prompts, sampled responses, sampled response tokens and training seconds to reach ``--target-accuracy`` on
  the held-out set (how many seeds got there), final and best accuracy, pass@k (with ``--pass-k``), the policy
  entropy over all samples and over the trained rows (the mean of the last 10 iterations; the trained rows'
  minimum and the iteration where it first halved), and the number of unstable evaluations (a drop of more than
  10 points below the best so far), each as a mean with a 95% Student-t interval over seeds
  (``minitepo.lab.stats``; runs that never reached the target are counted at the censoring point in the
  "censored" columns); and, against the first entry, differences with Welch's interval and p-value, marked
  distinguishable only when its interval excludes 0, beside the smallest difference those seeds could detect;
* ``OUT/curves_step.png``, ``OUT/curves_seconds.png``: accuracy and entropy of every run;
  ``OUT/bands_step.png``, ``OUT/bands_prompts.png``, ``OUT/bands_tokens.png``: one colour per entry, the mean over
  seeds with a shaded band (min to max), against iterations, sampled prompts and sampled response tokens;
  ``OUT/ablations.png``: small multiples, each entry against the first.

``--task`` picks the toy task; without ``--init`` a weak warm start for it is trained first (the
quickstart's recipe, settling once its hardest level reaches ``--settle-at``). ``--resume`` skips
finished runs and continues unfinished ones, so a long comparison can be stopped and picked up.

This is how the project checks claims such as "TEPO converges in about half the time of
GRPO/DAPO". The table reports what the runs measured; nothing is tuned per objective beyond the
spec's defaults. Note that DAPO's dynamic sampling spends extra sampling rounds, which shows up
in seconds, not in iterations.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, replace
from pathlib import Path

from minitepo.lab.guards import check_number, check_resume_or_overwrite, prepare_parent_folder
from minitepo.lab.plotting import plot_ablations, plot_bands, plot_runs
from minitepo.lab.quickstart import WARM_START_RULES, QuickstartConfig, warm_start
from minitepo.lab.rl_config import RLConfig, reading_label
from minitepo.lab.rl_run import train_rl
from minitepo.lab.runs import read_metrics, write_json
from minitepo.lab.stats import format_ci, min_detectable_effect_of, run_summary, t_mean_ci, welch_test
from minitepo.losses import OBJECTIVES
from minitepo.rl import TrainerConfig
from toy_tasks import make_task, parse_levels

COMPARE = replace(
    TrainerConfig(),
    iterations=300,     # long enough for GRPO and DAPO to reach 75% on 3-digit add from the weak warm start
    lr=2e-4,            # the quickstart's rate before dynamic sampling (4e-4 there collapsed seed 3): most entries of
    min_lr_frac=0.1,    # a comparison train without it; a cosine decay to a tenth, so no run ends mid-swing
    temperature=0.7,    # at 1.0 a weak warm start's samples are rarely right, and most groups carry no signal
    scoring="shared_prompt",  # each distinct prompt read once: faster, and the committed comparisons ran with it
)
"""A comparison's RL recipe: the core's defaults with these changes, the same for every entry."""


@dataclass(frozen=True)
class Entry:
    """One column of a comparison: an objective and the RLConfig overrides of an ablation."""

    label: str        # as written in --algos, e.g. "tepo:beta_mask=0"
    algo: str
    overrides: tuple  # ((field, value), ...)

    @property
    def folder(self) -> str:
        """A file-system-safe name for the entry's runs."""
        return re.sub(r"[^A-Za-z0-9_.=-]+", "_", self.label.replace(":", "-"))


def parse_entry(text: str) -> Entry:
    """``"tepo"`` or ``"tepo:beta_mask=0+mask_kl=k2"`` -> Entry. Values are read as numbers, true/false/none, or text."""
    algo, _, rest = text.strip().partition(":")
    if algo not in OBJECTIVES:
        raise ValueError(f"--algos: unknown objective {algo!r} in {text!r}; choose from {', '.join(OBJECTIVES)}")
    fields = {f.name for f in dataclasses.fields(RLConfig)}
    overrides = []
    for item in filter(None, rest.split("+")):
        key, eq, raw = item.partition("=")
        if not eq or key not in fields:
            raise ValueError(f"--algos: {item!r} in {text!r} must be FIELD=VALUE with FIELD an option of "
                             f"minitepo rl (e.g. beta_mask=0, mask_criterion=positive, eps_low=3e-4)")
        overrides.append((key, _value(raw)))
    return Entry(text.strip(), algo, tuple(overrides))


def _value(raw: str):
    lowered = raw.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw.strip()


MAX_SEEDS = 1000
"""The most seeds one comparison runs (each is a whole RL run per entry)."""


def parse_seed_list(seeds: str | int) -> list[int]:
    """``3`` or ``"3"`` -> [0, 1, 2] (a count); ``"20,21,22"`` -> [20, 21, 22]; ``"20-24"`` -> [20, ..., 24];
    parts may be mixed (``"20-22,30"``). A ValueError says what is allowed."""
    allowed = ('allowed: a count N >= 1 (seeds 0..N-1), or seeds >= 0 listed with commas and ranges, '
               f'e.g. "20,21,22", "20-24", "20-20" for seed 20 alone; {MAX_SEEDS} seeds at most')
    if isinstance(seeds, bool) or not isinstance(seeds, (int, str)):
        raise ValueError(f"--seeds {seeds!r}: {allowed}")
    text = str(seeds).strip()
    if text.isdigit():
        if not 1 <= int(text) <= MAX_SEEDS:
            raise ValueError(f"--seeds {seeds!r}: {allowed}")
        return list(range(int(text)))
    out: list[int] = []
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        if not lo.strip().isdigit() or (dash and not hi.strip().isdigit()):
            raise ValueError(f"--seeds {seeds!r}: {part.strip()!r} is not a seed or a range; {allowed}")
        first, last = int(lo), int(hi) if dash else int(lo)
        if last < first:
            raise ValueError(f"--seeds {seeds!r}: the range {part.strip()!r} runs backwards; {allowed}")
        if last - first + 1 + len(out) > MAX_SEEDS:
            raise ValueError(f"--seeds {seeds!r}: more than {MAX_SEEDS} seeds; {allowed}")
        out.extend(range(first, last + 1))
    if len(set(out)) != len(out):
        raise ValueError(f"--seeds {seeds!r} lists a seed twice; {allowed}")
    return out


def format_seeds(seeds: list[int]) -> str:
    """[20, 21, 22, 30] -> "20-22, 30"; [20] -> "20-20" (a lone "20" would read as a count); parses back."""
    if len(seeds) == 1:
        return f"{seeds[0]}-{seeds[0]}"
    parts, start = [], 0
    for k in range(1, len(seeds) + 1):
        if k == len(seeds) or seeds[k] != seeds[k - 1] + 1:
            parts.append(str(seeds[start]) if k - 1 == start else f"{seeds[start]}-{seeds[k - 1]}")
            start = k
    return ", ".join(parts)


@dataclass
class CompareConfig:
    """Train several objectives (and ablations) from one warm start and compare them."""

    algos: str = "grpo,dapo,tepo"
    """Comma-separated entries: an objective, optionally with overrides ("tepo:beta_mask=0", "gspo:eps_low=0.2+eps_high=0.28")."""
    seeds: str | int = 3
    """RL seeds per entry: a count N (seeds 0 .. N-1), or an explicit list such as "20,21,22" or "20-24" (one seed:
    "20-20"), so that the seeds that choose a setting are never the seeds that confirm it. The table reports means
    with 95% intervals over them."""
    init: str | None = None
    """Warm-start checkpoint; default: train a weak warm start (the quickstart's recipe) into OUT/warmstart."""
    task: str | None = None
    """Toy task; default: the warm start's (add for a new warm start)."""
    levels: str | None = None
    """RL levels, comma-separated; default: the warm start's hardest level for a new warm start, else its levels."""
    settle_at: float = WARM_START_RULES["compare"].settle_at
    """A new warm start settles (lr to 0) once its hardest level's held-out accuracy first reaches this."""
    iterations: int = COMPARE.iterations
    """RL iterations per run."""
    prompts: int = COMPARE.prompts
    """Prompts per iteration."""
    group_size: int = COMPARE.group_size
    """Responses per prompt."""
    minibatches: int = COMPARE.minibatches
    """Optimizer steps per pass over a rollout."""
    epochs: int = COMPARE.epochs
    """Passes over each rollout: epochs x minibatches optimizer steps per rollout (more: more off-policy pressure)."""
    lr: float = COMPARE.lr
    """Peak learning rate for every run (> 0; cosine decay to ``min_lr_frac`` of it); the default's reason is at
    ``COMPARE``."""
    min_lr_frac: float = COMPARE.min_lr_frac
    """The learning rate decays to this fraction of ``lr`` by the last iteration."""
    temperature: float = COMPARE.temperature
    """Sampling temperature (the loss uses the same one)."""
    eval_every: int = 10
    """Held-out evaluation every this many iterations."""
    pass_k: int = 0
    """Also measure sampled pass@k on the held-out set at each evaluation (0: off, which saves the sampling)."""
    target_accuracy: float = 0.75
    """Held-out greedy accuracy that counts as "converged" for the time-to-target columns."""
    device: str = "auto"
    """auto, cpu, cuda or mps."""
    out: str = "runs/compare"
    """Output folder: one sub-folder per run, the summary and the plots."""
    overwrite: bool = False
    """Delete runs already in ``out`` and start afresh (without it, runs there are an error, checked before the
    first run starts)."""
    resume: bool = False
    """Keep what ``out`` holds: skip finished runs, continue unfinished ones, reuse its warm start."""

    def entries(self) -> list[Entry]:
        entries = [parse_entry(a) for a in self.algos.split(",") if a.strip()]
        if not entries:
            raise ValueError(f"--algos: no objective given; choose from {', '.join(OBJECTIVES)}")
        if len({e.folder for e in entries}) != len(entries):
            raise ValueError("--algos: an entry is listed twice")
        return entries

    def seed_list(self) -> list[int]:
        """The RL seeds: ``parse_seed_list(self.seeds)``."""
        return parse_seed_list(self.seeds)

    def algo_list(self) -> list[str]:
        return [e.label for e in self.entries()]

    def __post_init__(self):
        """Every value is checked here, before the first of many runs starts: each run's RLConfig is built once
        now, so a value that only RL checks (e.g. --group-size 1) fails at once, not after the warm start."""
        self.seed_list()  # a bad --seeds fails here, before any run
        check_number(self, "target_accuracy", 0, 1, low_open=True, why="an accuracy")
        check_number(self, "settle_at", 0, 1, low_open=True, why="an accuracy")
        check_resume_or_overwrite(self.resume, self.overwrite)
        if self.task is not None:
            make_task(self.task, levels=parse_levels(self.levels))
        for entry in self.entries():
            self.rl_config(entry, 0, self.init or str(Path(self.out) / "warmstart" / "checkpoint.pt"), self.levels)

    def rl_config(self, entry: Entry, seed: int, init: str, levels, resume: bool = False) -> RLConfig:
        """The RL run of ``entry`` with ``seed``: every run sees the same settings but these."""
        settings = dict(init=str(init), algo=entry.algo, task=self.task, levels=levels, iterations=self.iterations,
                        prompts=self.prompts, group_size=self.group_size, minibatches=self.minibatches, epochs=self.epochs, lr=self.lr,
                        min_lr_frac=self.min_lr_frac, temperature=self.temperature, eval_every=self.eval_every,
                        scoring=COMPARE.scoring, seed=seed, device=self.device, out=str(Path(self.out) / f"{entry.folder}-seed{seed}"),
                        progress=False, pass_k=self.pass_k, overwrite=self.overwrite, resume=resume)
        settings.update(dict(entry.overrides))
        return RLConfig(**settings)


def weak_warm_start(config: CompareConfig) -> tuple[str, str]:
    """Train (or, with --resume, reuse) a weak warm start on the task: the quickstart's supervised recipe
    (``quickstart.warm_start``), settling once the hardest level first reaches ``settle_at`` (checked every 5
    steps, then the learning rate decays to 0 over 5 more: ``WARM_START_RULES["compare"]``). Returns (checkpoint,
    RL levels)."""
    task = make_task(config.task or "add")
    hardest = max(task.levels)
    checkpoint = Path(config.out) / "warmstart" / "checkpoint.pt"
    if not (config.resume and checkpoint.is_file()):
        rule = WARM_START_RULES["compare"]
        recipe = QuickstartConfig(sft_lr=rule.lr, settle_at=config.settle_at, settle_steps=rule.settle_steps,
                                  settle_check_near=rule.settle_check_near, settle_cap=rule.settle_cap,
                                  device=config.device, out=config.out, overwrite=config.overwrite)
        if not warm_start(recipe, task.name)["settled"]:
            print(f"compare: warning: the warm start never reached {config.settle_at:.0%} on level {hardest}", flush=True)
    return str(checkpoint), str(hardest)


def finished(run_dir: Path, iterations: int) -> bool:
    """Whether ``run_dir`` holds a run that logged its last iteration."""
    try:
        return read_metrics(run_dir)[-1].get("step") == iterations and (run_dir / "checkpoint.pt").is_file()
    except ValueError:
        return False


def summarize(out: Path, entries: list[Entry], seeds: list[int], target: float, prompts: int) -> dict:
    """Every run's numbers (``stats.run_summary``), per entry."""
    return {e.label: [{"seed": seed, **run_summary(read_metrics(out / f"{e.folder}-seed{seed}"), target=target,
                                                   prompts_per_round=prompts)}
                      for seed in seeds] for e in entries}


COLUMNS = (("iters_to_target_censored", "iterations to {t} (not reached: censored)"),
           ("prompts_to_target_censored", "prompts to {t} (censored)"),
           ("responses_to_target_censored", "responses sampled to {t} (censored)"),
           ("tokens_to_target_censored", "tokens sampled to {t} (censored)"), ("iters_to_target", "iterations to {t} (reached)"),
           ("seconds_to_target", "seconds to {t} (reached)"), ("final", "final acc"), ("acc_auc", "mean eval acc"),
           ("best", "best acc"), ("pass_at_k_final", "final pass@k"),
           ("entropy_sampled_last", "entropy, all samples (last 10 its)"),
           ("entropy_last", "entropy, trained rows (last 10 its)"), ("entropy_min", "min entropy, trained rows"),
           ("entropy_halved_at", "trained-rows entropy halved at"), ("unstable_evals", "unstable evals"))


def summary_table(summary: dict, target: float, readings: dict | None = None) -> str:
    """One row per entry: its label, what ran (``reading_label`` of its resolved reading, when known) and every
    column of ``COLUMNS`` that some run recorded, as mean [95% interval] over seeds."""
    t = f"{target:.0%}"
    columns = [(key, title) for key, title in COLUMNS if any(r.get(key) is not None for rows in summary.values()
                                                             for r in rows)]
    names = [title.format(t=t) for _, title in columns]
    lines = ["| entry | what ran | reached " + t + " | " + " | ".join(names) + " |", "|---" * (len(names) + 3) + "|"]
    for label, rows in summary.items():
        reached = sum(r["iters_to_target"] is not None for r in rows)
        ran = reading_label(readings[label]) if readings and label in readings else "—"
        cells = [format_ci(t_mean_ci([r[key] for r in rows if r.get(key) is not None])) for key, _ in columns]
        lines.append(f"| {label} | {ran} | {reached}/{len(rows)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


DIFFERENCES = (("iters_to_target_censored", "iterations to {t} (censored)"),
               ("tokens_to_target_censored", "tokens sampled to {t} (censored)"), ("final", "final acc"),
               ("acc_auc", "mean eval acc"), ("entropy_sampled_last", "entropy, all samples"),
               ("entropy_min", "min entropy, trained rows"))


def difference_table(summary: dict, target: float, baseline: str | None = None,
                     labels: list[str] | None = None) -> str:
    """Each entry (``labels``; default: all but the baseline) against ``baseline`` (default: the first entry):
    the difference of means with its 95% Welch interval and p-value, called distinguishable from seed noise only
    when the interval excludes 0 (one test alone, no correction for the many in a table), and the smallest
    difference these seeds could detect (``min_detectable_effect``: 80% power, two-sided 5%, from the measured
    spreads). Iterations to target count a run that never reached it at the censoring point."""
    baseline = baseline or next(iter(summary))
    labels = [label for label in (labels or summary) if label != baseline]
    base = summary[baseline]
    t = f"{target:.0%}"
    head = " | ".join(f"Δ {title.format(t=t)} | p | distinguishable? | smallest detectable" for _, title in DIFFERENCES)
    lines = [f"| entry − {baseline} | {head} |", "|---" * (4 * len(DIFFERENCES) + 1) + "|"]
    for label in labels:
        cells = []
        for key, _ in DIFFERENCES:
            a = [r[key] for r in summary[label] if r.get(key) is not None]
            b = [r[key] for r in base if r.get(key) is not None]
            test = welch_test(a, b)
            if test is None:
                cells += ["—", "—", "—", "—"]
                continue
            verdict = "yes" if test["low"] > 0 or test["high"] < 0 else "no"
            mde = min_detectable_effect_of(a, b)
            cells += [format_ci((test["diff"], test["low"], test["high"])), f"{test['p']:.2g}", verdict,
                      "—" if mde is None else f"{mde:.3g}"]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ablation_groups(entries: list[Entry]) -> list[tuple[Entry, list[Entry]]]:
    """Each objective run both with defaults and with overrides, as (its defaults, its ablations): e.g. ``tepo``
    with every ``tepo:...`` entry. The question an ablation asks is its difference from those defaults."""
    groups = []
    for default in (e for e in entries if not e.overrides):
        ablations = [e for e in entries if e.algo == default.algo and e.overrides]
        if ablations:
            groups.append((default, ablations))
    return groups


def ablation_tables(entries: list[Entry], summary: dict, target: float) -> list[str]:
    """Each objective's ablations against its defaults, except where the first table already says it (the
    defaults are the first entry and every other entry is one of their ablations)."""
    return [difference_table(summary, target, baseline=default.label, labels=[e.label for e in ablations])
            for default, ablations in ablation_groups(entries)
            if not (default is entries[0] and len(ablations) == len(entries) - 1)]


def run_compare(config: CompareConfig) -> dict:
    out = Path(config.out)
    entries = config.entries()
    init, levels = config.init, config.levels
    seeds = config.seed_list()
    runs = [f"{e.folder}-seed{seed}" for e in entries for seed in seeds]
    if not config.resume:
        if previous := prepare_parent_folder(out, ([] if init else ["warmstart"]) + runs, overwrite=config.overwrite):
            print(f"compare: --overwrite: replacing {', '.join(previous)} in {str(out)!r}", flush=True)
    if init is None:
        init, new_levels = weak_warm_start(config)
        levels = levels or new_levels
    run_dirs = []
    for entry in entries:
        for seed in seeds:
            run_dir = out / f"{entry.folder}-seed{seed}"
            run_dirs.append(run_dir)
            if config.resume and finished(run_dir, config.iterations):
                print(f"compare: {entry.label} seed {seed}: finished already, kept", flush=True)
                continue
            resume = config.resume and (run_dir / "checkpoint.pt").is_file()
            print(f"compare: {entry.label} seed {seed} -> {run_dir}" + (" (resumed)" if resume else ""), flush=True)
            result = train_rl(config.rl_config(entry, seed, init, levels, resume=resume))
            if result["interrupted"]:  # Ctrl-C: this run is checkpointed; --resume picks it up
                raise KeyboardInterrupt
            start = result["start_accuracy"]
            print(f"compare: {entry.label} seed {seed}: held-out accuracy "
                  f"{'(resumed)' if start is None else f'{start:.3f}'} -> "
                  f"{result['final'].get('eval/greedy_acc/all', float('nan')):.3f} in {result['seconds']:.0f}s",
                  flush=True)
    summary = summarize(out, entries, seeds, config.target_accuracy, config.prompts)
    readings = {e.label: config.rl_config(e, seeds[0], init, levels).resolved_reading() for e in entries}
    table = summary_table(summary, config.target_accuracy, readings)
    differences = "\n\n".join(([difference_table(summary, config.target_accuracy)] if len(entries) > 1 else [])
                              + ablation_tables(entries, summary, config.target_accuracy))
    header = (f"# compare: {', '.join(e.label for e in entries)} x seeds {format_seeds(seeds)}\n\n"
              f"warm start `{init}`, task {config.task or 'of the warm start'}, levels {levels or 'of the warm start'}; "
              f"{config.iterations} iterations of {config.prompts} prompts x {config.group_size} responses, "
              f"{config.epochs} x {config.minibatches} optimizer steps per rollout, lr {config.lr} (cosine to {config.min_lr_frac:g}x), "
              f"temperature {config.temperature}. Each cell: mean [95% Student-t interval] over seeds; "
              f"'censored' columns count a run that never reached the target at the censoring point (one evaluation "
              f"interval past the last), 'reached' columns average only the seeds that reached it.\n\n")
    (out / "summary.md").write_text(header + table + "\n\n" + differences + "\n")
    write_json(out / "summary.json", {"config": dataclasses.asdict(config), "init": str(init), "readings": readings,
                                      "runs": summary})
    keys = ("eval/greedy_acc/all", "charts/entropy_sampled", "tepo/mask_frac")
    title = f"{', '.join(e.label for e in entries)} from one warm start"
    for x in ("step", "seconds"):
        plot_runs(run_dirs, out / f"curves_{x}.png", x=x, keys=keys, title=title)
    groups = {e.label: [out / f"{e.folder}-seed{seed}" for seed in seeds] for e in entries}
    for x in ("step", "prompts", "tokens"):
        plot_bands(groups, out / f"bands_{x}.png", x=x, prompts_per_round=config.prompts, title=title)
    if len(entries) > 1:
        plot_ablations(groups, out / "ablations.png", title=f"each entry against {entries[0].label}")
    for default, ablations in ablation_groups(entries):   # an objective's ablations against its defaults
        panels = {e.label: groups[e.label] for e in [default, *ablations]}
        for key, name, what in (("eval/greedy_acc/all", "accuracy", "held-out greedy accuracy"),
                                ("charts/entropy_sampled", "entropy", "policy entropy, all samples")):
            plot_ablations(panels, out / f"ablations_{default.folder}_{name}.png", key=key,
                           title=f"{default.label}'s ablations: {what}")
    print(table)
    if differences:
        print(differences)
    print(f"compare: wrote {out / 'summary.md'} and the figures in {out}")
    return summary
