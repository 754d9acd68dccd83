"""The ``minitepo`` command line: one subcommand per job.

    minitepo quickstart              warm start + TEPO RL on 3-digit add, before/after accuracy, a plot
    minitepo sft ...                 supervised warm start
    minitepo eval CHECKPOINT ...     held-out accuracy per level
    minitepo rl ...                  RL with any objective
    minitepo compare ...             several objectives x seeds from one warm start, a table and plots
    minitepo plot RUN_DIR ...        draw runs' metrics
    minitepo bench                   speed benchmark (ratios measured side by side)
    minitepo tasks                   list the toy tasks
    minitepo check-loss MOD:FN --like dapo   property-test any loss against spec §8's invariants

Every flag is documented in ``minitepo SUBCOMMAND --help``. Invalid input stops with one line that
says what is wrong (exit status 2), before any file is written or any evaluation runs. A run that
stops (non-finite weights, a full disk) says why in one line (exit status 1); Ctrl-C exits with 130
after the run is checkpointed. ``--resume`` takes every flag left out from the run's config.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import re
import sys
import textwrap
from pathlib import Path

from minitepo.device import default_threads, make_generator, pick_device, set_cpu_threads
from minitepo.evaluate import greedy_accuracy, pass_at_k
from minitepo.lab.bench import BenchConfig
from minitepo.lab.bench import run as run_bench
from minitepo.lab.checkpoint import CheckpointError, CheckpointWriteError, load_model
from minitepo.lab.compare import CompareConfig, run_compare
from minitepo.lab.config import add_flags, from_args
from minitepo.lab.guards import check_device
from minitepo.lab.plotting import plot_runs
from minitepo.lab.quickstart import QuickstartConfig, run_quickstart
from minitepo.lab.rl_config import RLConfig
from minitepo.lab.rl_run import train_rl
from minitepo.lab.sft_run import SFTConfig, train_sft
from minitepo.optim import TrainingError
from toy_tasks import TASK_NAMES, make_task, resolve_task


def _tasks(args) -> int:
    for name in TASK_NAMES:
        task = make_task(name)
        example = task.sample(random.Random(0))
        print(f"{name}  (levels {','.join(map(str, task.levels))}; e.g. {example.prompt!r} -> {example.answer!r})")
        print(textwrap.indent(plain_text(sys.modules[type(task).__module__].__doc__ or ""), "    "))
        print()
    return 0


def plain_text(doc: str) -> str:
    """A docstring as a reader wants it on a terminal: ``code`` and *emphasis* markup removed."""
    doc = textwrap.dedent(doc).strip()
    doc = re.sub(r"``([^`]*)``", r"\1", doc)
    return re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\1", doc)


def run_config(cls, args):
    """The config of a training command. With ``--resume``, flags left out are the run's own (from its
    config.json), so ``minitepo rl --resume --out runs/tepo --iterations 400`` needs nothing else; flags given
    must match the run's (the trainer checks that against the checkpoint)."""
    names = {f.name for f in dataclasses.fields(cls)}
    given = {k: v for k, v in vars(args).items() if k in names}
    if given.get("resume"):
        saved = Path(given.get("out", next(f.default for f in dataclasses.fields(cls) if f.name == "out")))
        try:
            run = json.loads((saved / "config.json").read_text())
        except (OSError, ValueError):
            run = {}  # no readable config.json: the defaults stand, and the checkpoint's check names any difference
        given = {**{k: v for k, v in run.items() if k in names and k not in ("resume", "overwrite")}, **given}
    return cls(**given)


def _sft(args) -> int:
    result = train_sft(run_config(SFTConfig, args))
    acc = result["accuracy"]
    levels = "  ".join(f"{k}={v:.3f}" for k, v in acc.items() if k != "all")
    print(f"sft: {result['steps']} steps in {result['seconds']:.0f}s; held-out greedy accuracy {acc.get('all', 0):.3f}"
          f" ({levels}); checkpoint {result['checkpoint']}")
    return 0


def _eval(args) -> int:
    if args.pass_k < 0:  # checked before the (slow) greedy evaluation, not after it
        raise ValueError(f"--pass-k must be an integer >= 0 (0 disables pass@k), got {args.pass_k}")
    check_device(args)
    device = pick_device(args.device)
    model, tokenizer, data = load_model(args.checkpoint, device)
    task = resolve_task(args.task, args.levels, trained_name=data.get("task"), trained_levels=data.get("levels"))
    acc = greedy_accuracy(model, tokenizer, task)
    print(f"task {task.name}, {len(task.eval_set())} held-out prompts, greedy exact match:")
    for key, value in acc.items():
        print(f"  {key:10s} {value:.3f}")
    if args.pass_k:
        value = pass_at_k(model, tokenizer, task, k=args.pass_k, generator=make_generator(device, 0))
        print(f"  pass@{args.pass_k}     {value:.3f} (temperature 1)")
    return 0


def _rl(args) -> int:
    result = train_rl(run_config(RLConfig, args))
    final = result["final"].get("eval/greedy_acc/all")
    start = result["start_accuracy"]
    print(f"rl: {result['iterations']} iterations in {result['seconds']:.0f}s"
          + (f"; held-out greedy accuracy {start:.3f} -> {final:.3f}" if start is not None and final is not None else "")
          + ("  (interrupted; resume with --resume)" if result["interrupted"] else "")
          + f"; checkpoint {result['checkpoint']}")
    return 130 if result["interrupted"] else 0  # the exit status of a Ctrl-C, as when the second one aborts


def _compare(args) -> int:
    run_compare(from_args(CompareConfig, args))
    return 0


def _plot(args) -> int:
    if Path(args.out).suffix.lower() != ".png" or Path(args.out).is_dir():
        raise ValueError(f"--out must name a .png file (it is overwritten if it exists), got {args.out!r}")
    path = plot_runs(args.runs, args.out, x=args.x)
    print(f"wrote {path}")
    return 0


def _bench(args) -> int:
    run_bench(from_args(BenchConfig, args))
    return 0


def _quickstart(args) -> int:
    run_quickstart(from_args(QuickstartConfig, args))
    return 0


def _check_loss(args) -> int:
    from minitepo.lab.check_loss import run_check_loss   # needs hypothesis (the test extra): imported on use
    return run_check_loss(args)


def _check_loss_flags(p: argparse.ArgumentParser) -> None:
    from minitepo.lab.check_loss import add_flags as add_check_loss_flags
    add_check_loss_flags(p)


def _eval_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkpoint", help="a checkpoint file, or a run folder holding checkpoint.pt")
    p.add_argument("--task", default=None, help="toy task (default: the checkpoint's)")
    p.add_argument("--levels", default=None, help="levels, comma-separated (default: the checkpoint's)")
    p.add_argument("--pass-k", type=int, default=0, help="also report sampled pass@k (default: 0, off)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or mps (default: auto)")


def _plot_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", help="run folders (each holding metrics.jsonl)")
    p.add_argument("--out", default="runs/plot.png", help="output PNG (default: runs/plot.png)")
    p.add_argument("--x", default="step", choices=("step", "seconds"), help="x axis (default: step)")


COMMANDS = (  # name, what it does, its flags (a config dataclass, or a function that adds them), what runs it
    ("quickstart", "warm start + TEPO RL on 3-digit add; prints accuracy before/after", QuickstartConfig, _quickstart),
    ("sft", "supervised warm start on a toy task", SFTConfig, _sft),
    ("eval", "held-out greedy accuracy of a checkpoint, per difficulty level", _eval_flags, _eval),
    ("rl", "RL from a warm start with any objective", RLConfig, _rl),
    ("compare", "several objectives x seeds from the same warm start: table and curves", CompareConfig, _compare),
    ("plot", "draw runs' metrics to a PNG", _plot_flags, _plot),
    ("bench", "speed benchmark: KV cache vs recompute, SFT tokens/s, FLOP/s, one RL step", BenchConfig, _bench),
    ("tasks", "list the toy tasks", None, _tasks),
    ("check-loss", "property-test a loss (MODULE:FUNCTION, verl:MODE or trl:TYPE) against spec §8's invariants",
     _check_loss_flags, _check_loss),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minitepo", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: 2, or 1 on a 1-core machine, for quickstart, whose steps "
                             "on an idle 2-core CPU run about 1.3x faster with both; 1 for every other command: a "
                             "busy machine makes more much slower, and a fixed count keeps seeded results equal "
                             "across machines)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    for name, help_text, flags, func in COMMANDS:
        p = sub.add_parser(name, help=help_text)
        if dataclasses.is_dataclass(flags):
            add_flags(p, flags)
        elif flags is not None:
            flags(p)
        p.set_defaults(func=func)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        threads = args.threads if args.threads is not None else default_threads(args.command)
        set_cpu_threads(threads, deterministic=threads > 1 and pick_device(getattr(args, "device", "auto")).type == "cpu")
        return args.func(args)
    except (ValueError, CheckpointError, FileNotFoundError) as e:  # bad input: nothing was started
        print(f"minitepo {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"minitepo {args.command}: interrupted", file=sys.stderr)
        return 130
    except (TrainingError, FloatingPointError, CheckpointWriteError) as e:  # the run stopped; its checkpoint is kept
        print(f"minitepo {args.command}: stopped: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a file-system fault mid-run (disk full, ...): the path and the cause, no traceback
        where = f"{e.filename!r}: " if e.filename else ""
        print(f"minitepo {args.command}: stopped: {where}{e.strerror or e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
