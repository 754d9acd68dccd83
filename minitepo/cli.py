"""The ``minitepo`` command line: one subcommand per job.

    minitepo quickstart              warm start + TEPO RL on 3-digit add, before/after accuracy, a plot
    minitepo sft ...                 supervised warm start
    minitepo eval CHECKPOINT ...     held-out accuracy per level
    minitepo rl ...                  RL with any objective
    minitepo compare ...             several objectives x seeds from one warm start, a table and plots
    minitepo plot RUN_DIR ...        draw runs' metrics
    minitepo bench                   speed benchmark (ratios measured side by side)
    minitepo tasks                   list the toy tasks

Every flag is documented in ``minitepo SUBCOMMAND --help``. Invalid input stops with one line that
says what is wrong (exit status 2), before any work starts.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import textwrap

from minitepo.bench import BenchConfig
from minitepo.bench import run as run_bench
from minitepo.checkpoint import CheckpointError
from minitepo.compare import CompareConfig, run_compare
from minitepo.config import add_flags, from_args
from minitepo.device import make_generator, pick_device, set_cpu_threads
from minitepo.evaluate import greedy_accuracy, pass_at_k
from minitepo.model import load_model
from minitepo.plotting import plot_runs
from minitepo.quickstart import QuickstartConfig, run_quickstart
from minitepo.rl import RLConfig, TrainingError, train_rl
from minitepo.sft import SFTConfig, train_sft
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


def _sft(args) -> int:
    result = train_sft(from_args(SFTConfig, args))
    acc = result["accuracy"]
    levels = "  ".join(f"{k}={v:.3f}" for k, v in acc.items() if k != "all")
    print(f"sft: {result['steps']} steps in {result['seconds']:.0f}s; held-out greedy accuracy {acc.get('all', 0):.3f}"
          f" ({levels}); checkpoint {result['checkpoint']}")
    return 0


def _eval(args) -> int:
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
    result = train_rl(from_args(RLConfig, args))
    final = result["final"].get("eval/greedy_acc/all")
    start = result["start_accuracy"]
    print(f"rl: {result['iterations']} iterations in {result['seconds']:.0f}s"
          + (f"; held-out greedy accuracy {start:.3f} -> {final:.3f}" if start is not None and final is not None else "")
          + ("  (interrupted; resume with --resume)" if result["interrupted"] else "")
          + f"; checkpoint {result['checkpoint']}")
    return 0


def _compare(args) -> int:
    run_compare(from_args(CompareConfig, args))
    return 0


def _plot(args) -> int:
    path = plot_runs(args.runs, args.out, x=args.x)
    print(f"wrote {path}")
    return 0


def _bench(args) -> int:
    run_bench(from_args(BenchConfig, args))
    return 0



def _quickstart(args) -> int:
    run_quickstart(from_args(QuickstartConfig, args))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minitepo", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default: 1; the tiny models gain little from more, a busy machine "
                             "makes more much slower, and seeded results then match across machines)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("quickstart", help="warm start + TEPO RL on 3-digit add; prints accuracy before/after")
    add_flags(p, QuickstartConfig)
    p.set_defaults(func=_quickstart)

    p = sub.add_parser("sft", help="supervised warm start on a toy task")
    add_flags(p, SFTConfig)
    p.set_defaults(func=_sft)

    p = sub.add_parser("eval", help="held-out greedy accuracy of a checkpoint, per difficulty level")
    p.add_argument("checkpoint", help="a checkpoint file, or a run folder holding checkpoint.pt")
    p.add_argument("--task", default=None, help="toy task (default: the checkpoint's)")
    p.add_argument("--levels", default=None, help="levels, comma-separated (default: the checkpoint's)")
    p.add_argument("--pass-k", type=int, default=0, help="also report sampled pass@k (default: 0, off)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or mps (default: auto)")
    p.set_defaults(func=_eval)

    p = sub.add_parser("rl", help="RL from a warm start with any objective")
    add_flags(p, RLConfig)
    p.set_defaults(func=_rl)

    p = sub.add_parser("compare", help="several objectives x seeds from the same warm start: table and curves")
    add_flags(p, CompareConfig)
    p.set_defaults(func=_compare)

    p = sub.add_parser("plot", help="draw runs' metrics to a PNG")
    p.add_argument("runs", nargs="+", help="run folders (each holding metrics.jsonl)")
    p.add_argument("--out", default="runs/plot.png", help="output PNG (default: runs/plot.png)")
    p.add_argument("--x", default="step", choices=("step", "seconds"), help="x axis (default: step)")
    p.set_defaults(func=_plot)

    p = sub.add_parser("bench", help="speed benchmark: KV cache vs recompute, SFT tokens/s, FLOP/s, one RL step")
    add_flags(p, BenchConfig)
    p.set_defaults(func=_bench)

    p = sub.add_parser("tasks", help="list the toy tasks")
    p.set_defaults(func=_tasks)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        set_cpu_threads(args.threads)
        return args.func(args)
    except (ValueError, CheckpointError, FileNotFoundError) as e:
        print(f"minitepo {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"minitepo {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # TrainingError and friends: say what happened without a wall of torch internals

        if isinstance(e, (TrainingError, FloatingPointError)):
            print(f"minitepo {args.command}: stopped: {e}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
