"""Issue 29, descriptive: where today's quickstart's failing runs lose their points, digit by digit.

Written after the look at the warm starts' holes and the ninth round (``research/quickstart-lift/README.md``), which found that a
hole in the tens or hundreds digit explains some failing seeds and not others. This chooses nothing: it reruns the
failing runs of today's quickstart and reads their final models teacher-forced.

    python3 research/quickstart-lift/failing_digits.py run        # the runs (resumable), then research/quickstart-lift/data/failing-digits.json
    python3 research/quickstart-lift/failing_digits.py doc [--check]

The runs: seeds 6, 14 and 17 with the README's command (two threads, into ``runs/failing/seedS``), and study seeds
101, 112 and 115 with the study's RL stage from their committed warm starts (one thread, ``runs/lift/warm`` as the
look made them). Each rerun must end at the committed final accuracy (the sixth round's confirmation, or its
``g4-r2`` runs), or the script stops. Per final model, over the look's 3,000-prompt probe: the share of prompts each
answer digit gets wrong (greedy, teacher-forced), and that digit's classes (the sum of the column below, carry
included; the ones digit by its own column's sum) whose greedy accuracy is below one half.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402
import round02 as round2  # noqa: E402
import round06 as round6  # noqa: E402
import warm_holes as holes  # noqa: E402

RUNS = ROOT / "runs" / "failing"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "failing-digits.json"
CONFIRM_SEEDS, STUDY_SEEDS = (6, 14, 17), (101, 112, 115)
DIGITS = ("ones", "tens", "hundreds", "thousands")   # answer positions 0-3 (the thousands digit: the carry out, or EOS)
WEAK = 0.5


def run_folder(seed: int) -> Path:
    return RUNS / f"seed{seed}"


def make_run(seed: int) -> float:
    """The seed's failing run of today's quickstart, unless it is there; returns its final held-out accuracy."""
    from minitepo.lab.runs import read_metrics
    folder = run_folder(seed)
    if not (folder / "rl" / "checkpoint.pt").is_file():
        if seed in CONFIRM_SEEDS:
            subprocess.run([sys.executable, "-m", "minitepo", "quickstart", "--seed", str(seed), "--out", str(folder)],
                           cwd=ROOT, check=True, capture_output=True)
        else:   # the study's run (round 6's g4-r2: today's RL stage as the study ran it, one thread)
            subprocess.run([sys.executable, __file__, "job", str(seed)], cwd=ROOT, check=True,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
    return [r for r in read_metrics(folder / "rl") if "eval/greedy_acc/all" in r][-1]["eval/greedy_acc/all"]


def job(seed: int) -> None:
    """A study seed's RL run from its warm start, as the sixth round ran ``g4-r2``."""
    round2.rl_row("g4-r2", seed, round1.RUNS / "warm", round6.ARMS["g4-r2"], run_folder(seed))


def committed_final(seed: int) -> float:
    if seed in CONFIRM_SEEDS:
        return {r["seed"]: r["after"] for r in json.loads(round6.CONFIRM.read_text())["seeds"]}[seed]
    return {r["seed"]: r["after"] for r in json.loads(round6.SUMMARY.read_text())["runs"]["g4-r2"]}[seed]


def digit_table(model, tok) -> dict:
    """Per answer digit: the share of probe prompts it gets wrong, and its weak classes (greedy accuracy < WEAK)."""
    from minitepo.sft import IGNORE
    from toy_tasks.base import read_operands
    task, examples, y, logits = holes.probe(model, tok)
    greedy = logits.argmax(-1)
    wrong = defaultdict(int)
    classes = defaultdict(lambda: [0, 0])   # (digit, class) -> [right, n]
    for i, example in enumerate(examples):
        a, b = read_operands(example.prompt, "+", reverse=task.config.reverse_operands)
        positions = (y[i] != IGNORE).nonzero().flatten().tolist()
        carry = below = 0
        for k, name in enumerate(DIGITS):
            column = (a // 10 ** k) % 10 + (b // 10 ** k) % 10
            label = column if k == 0 else below   # the ones digit by its own column's sum, the others by the one below
            below = column + carry
            carry = below // 10
            right = int(greedy[i, positions[k]] == y[i, positions[k]])
            wrong[name] += 1 - right
            entry = classes[(name, label)]
            entry[0] += right
            entry[1] += 1
    weak = defaultdict(list)
    for (name, label), (right, n) in sorted(classes.items(), key=lambda kv: (DIGITS.index(kv[0][0]), kv[0][1])):
        if n >= holes.MIN_CLASS and right / n < WEAK:
            weak[name].append({"sum": label, "accuracy": round(right / n, 3), "n": n})
    return {name: {"wrong": round(wrong[name] / len(examples), 4), "weak_classes": weak[name]} for name in DIGITS}


def run() -> dict:
    rows = []
    for seed in (*CONFIRM_SEEDS, *STUDY_SEEDS):
        final = make_run(seed)
        if final != committed_final(seed):
            raise SystemExit(f"seed {seed}: the rerun ended at {final}, the committed run at {committed_final(seed)}")
        rows.append({"seed": seed, "final": final,
                     "digits": digit_table(*holes.read_model(run_folder(seed) / "rl" / "checkpoint.pt"))})
        print(seed, final, {d: v["wrong"] for d, v in rows[-1]["digits"].items()}, flush=True)
    result = {"probe": holes.PROBE, "weak_below": WEAK, "rows": rows}
    SUMMARY.write_text(json.dumps(result, indent=1) + "\n")
    return result


def markdown(result: dict) -> str:
    pct = round1.pct
    lines = ["| seed | final | prompts with the digit wrong: ones / tens / hundreds / thousands | classes below "
             f"{result['weak_below']:.0%} (digit: sum of the column that decides it, accuracy) |", "|---|---|---|---|"]
    for r in result["rows"]:
        d = r["digits"]
        weak = "; ".join(f"{name}: " + ", ".join(f"{c['sum']} ({pct(c['accuracy'])})" for c in d[name]["weak_classes"])
                         for name in DIGITS if d[name]["weak_classes"]) or "none"
        lines.append(f"| {r['seed']} | {pct(r['final'])} | " + " / ".join(pct(d[n]["wrong"]) for n in DIGITS)
                     + f" | {weak} |")
    return "\n".join(lines)


def doc(check: bool) -> int:
    new = round1.replace_block(round1.PAGE.read_text(), "failing-digits", markdown(json.loads(SUMMARY.read_text())))
    return round1.write_page(new, check, "research/quickstart-lift/failing_digits.py")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="phase", required=True)
    sub.add_parser("run", help=f"the runs (resumable), then {SUMMARY.relative_to(ROOT)}")
    d = sub.add_parser("doc", help="the page's block, from the summary")
    d.add_argument("--check", action="store_true")
    j = sub.add_parser("job", help="job: SEED (internal: a study seed's RL run)")
    j.add_argument("seed", type=int)
    args = p.parse_args(argv)
    if args.phase == "run":
        run()
    elif args.phase == "doc":
        return doc(args.check)
    else:
        job(args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
