"""The quickstart: the whole story in one command, on a CPU, in a few minutes.

1. **Warm start.** Supervised training on ``add`` (levels 1-3) until 3-digit held-out accuracy
   first reaches ``settle_at``; then the learning rate decays linearly to 0 over ``settle_steps``
   and training stops. The result is a *settled* weak checkpoint — lr decayed, accuracy no longer
   jumping — rather than a lucky one caught mid-oscillation. It writes 1- and 2-digit sums well
   but gets only a minority of 3-digit sums right.
2. **TEPO RL** on 3-digit ``add`` from that checkpoint, with only the verifier's 0/1 reward.
3. Held-out greedy accuracy before and after, and a plot of the run.

An honest note, repeated in the README: on ``add`` the labels are available, and supervised
training on them is the faster teacher. RL earns its place where only a verifier exists
(``countdown``: many answers are right, and no single reference is "the" label).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from minitepo.guards import check_choice, check_device, check_int, check_number, prepare_parent_folder
from minitepo.losses import OBJECTIVES
from minitepo.plotting import plot_runs
from minitepo.rl import RLConfig, train_rl
from minitepo.sft import SFTConfig, train_sft
from toy_tasks import make_task


@dataclass
class QuickstartConfig:
    """Warm start + TEPO RL on 3-digit addition."""

    settle_at: float = 0.25
    """The warm start begins to settle (lr decays to 0 over ``settle_steps``) once 3-digit accuracy reaches this."""
    settle_steps: int = 5
    """Length of the warm start's settling decay."""
    sft_lr: float = 2e-3
    """Peak learning rate of the warm start."""
    algo: str = "tepo"
    """Objective for the RL stage."""
    iterations: int = 300
    """RL iterations (each: 32 prompts x 8 responses, 4 optimizer steps). 150 were measured and are not enough:
    seed 1 went 36% -> 71% (docs/warmstart-study.md)."""
    rl_lr: float = 2e-4
    """Peak RL learning rate; it decays (cosine) to a tenth over the run, so the final policy is not caught mid-swing."""
    temperature: float = 0.7
    """Sampling temperature of the RL stage (and of its loss). At 1.0 the weak warm start's samples are rarely
    right (~6% reward vs ~25% greedy), so most groups carry no signal."""
    eval_every: int = 10
    """Held-out evaluation every this many RL iterations."""
    seed: int = 1
    """Seed for both stages. The README's seed table says what each measured seed gives. (Before ``add``
    wrote its operands ones-first, seed 2's warm start never "got" 3-digit addition and RL learned nothing.)"""
    device: str = "auto"
    """auto, cpu, cuda or mps."""
    precision: str = "auto"
    """fp32, or bf16 (autocast, on CUDA or CPU); auto: bf16 on CUDA, fp32 elsewhere."""
    out: str = "runs/quickstart"
    """Output folder: warmstart/, rl/ and quickstart.png."""
    overwrite: bool = True
    """Replace a previous quickstart in ``out`` (a seeded demo: a re-run gives the same result), saying so;
    ``--no-overwrite`` refuses instead. A folder that is itself a run folder is never used."""

    def __post_init__(self):
        """Every value is checked here, before the warm start trains for minutes."""
        check_number(self, "settle_at", 0, 1, low_open=True, why="an accuracy")
        for name in ("settle_steps", "iterations", "eval_every"):
            check_int(self, name, 1)
        for name in ("sft_lr", "rl_lr"):
            check_number(self, name, 0, low_open=True)
        check_number(self, "temperature", 0, low_open=True, why="sampling must be stochastic")
        check_choice(self, "algo", OBJECTIVES)
        check_int(self, "seed", 0)
        check_device(self)


def warm_start(config: QuickstartConfig, task: str = "add") -> dict:
    """The supervised stage on ``task`` (all its default levels), settling once its hardest level reaches
    ``settle_at``; returns train_sft's summary (its checkpoint is OUT/warmstart/checkpoint.pt). The quickstart
    uses add (levels 1-3, settling on level 3); ``minitepo compare`` uses the same recipe for any task."""
    levels = make_task(task).levels
    sft = SFTConfig(task=task, levels=",".join(map(str, levels)), lr=config.sft_lr, eval_every=50,
                    settle_at=config.settle_at, settle_metric=f"level/{max(levels)}", settle_steps=config.settle_steps,
                    seed=config.seed, device=config.device, precision=config.precision,
                    out=str(Path(config.out) / "warmstart"), progress=False)
    sft.overwrite = config.overwrite  # run_quickstart (or compare) has checked what OUT holds
    return train_sft(sft)


def run_quickstart(config: QuickstartConfig) -> dict:
    t0 = time.perf_counter()
    out = Path(config.out)
    if previous := prepare_parent_folder(out, ("warmstart", "rl"), overwrite=config.overwrite):
        print(f"quickstart: replacing the previous quickstart in {str(out)!r} ({', '.join(previous)}); "
              f"pass another --out to keep it, or --no-overwrite to refuse", flush=True)
    print(f"[1/3] supervised warm start on add (levels 1-3), settling once 3-digit accuracy reaches {config.settle_at:.0%}",
          flush=True)
    sft = warm_start(config)
    print(f"      warm start: {sft['steps']} steps in {sft['seconds']:.0f}s; held-out accuracy per level: "
          + ", ".join(f"{k} {v:.3f}" for k, v in sft["accuracy"].items()), flush=True)
    if not sft["settled"]:
        print(f"      warning: 3-digit accuracy never reached {config.settle_at:.0%} in {sft['steps']} supervised steps; "
              f"with almost no correct samples RL has little to learn from (try another --seed)", flush=True)

    print(f"[2/3] {config.algo.upper()} RL on 3-digit add: {config.iterations} iterations of 32 prompts x 8 responses, "
          f"temperature {config.temperature}, reward = verifier's 0/1", flush=True)
    rl = RLConfig(init=sft["checkpoint"], algo=config.algo, task="add", levels="3", iterations=config.iterations,
                  lr=config.rl_lr, min_lr_frac=0.1, temperature=config.temperature, eval_every=config.eval_every,
                  pass_k=0, seed=config.seed, device=config.device, precision=config.precision, out=str(out / "rl"),
                  progress=False)  # pass_k=0: sampled pass@k at every evaluation cost ~3x the greedy check, unprinted
    rl.overwrite = config.overwrite
    result = train_rl(rl)
    if result["interrupted"]:  # Ctrl-C: the RL run is checkpointed; no plot of half a run
        raise KeyboardInterrupt

    plot = plot_runs([out / "rl"], out / "quickstart.png", title=f"{config.algo.upper()} on 3-digit add")
    before, after = result["start_accuracy"], result["final"]["eval/greedy_acc/all"]
    total = time.perf_counter() - t0
    print(f"[3/3] plot: {plot}")
    print(f"\n3-digit add, held-out greedy accuracy: {before:.1%} after the warm start -> {after:.1%} after "
          f"{config.algo.upper()} ({result['iterations']} iterations); total {total / 60:.1f} min", flush=True)
    return {"before": before, "after": after, "seconds": total, "plot": str(plot)}
