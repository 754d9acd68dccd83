"""Issue 29, descriptive, after the ninth round: what the weak classes of a warm start look like, and whether they
close between 30% and 40% 3-digit accuracy, the two ends the issue allows a warm start. It chooses nothing.

Two readings, both on the look's fixed probe (``warm_holes.probe``: 3,000 3-digit prompts, read teacher-forced), per
answer position and class: the mean probability of the right token at T 0.7 (``p``), and how much the written
digit's distribution depends on the prompt within the class (``spread``). A class is the sum of the column the digit
comes from for the ones digit (``o<sum>``), and the sum of the column below with its carry for the tens (``t``),
hundreds (``h``) and the fourth position (the carry digit or the end, ``k``). Classes with fewer than
``warm_holes.MIN_CLASS`` probe prompts are not counted.

1. **The committed warm starts** of the look (seeds 0-19 as the README's command makes them, 100-119 as the study
   did), each paired with its committed outcome under today's quickstart.
2. **Paths** (study seeds that fail today only): the same warm start (one thread, as the study ran it) goes on past
   its stop to 45% 3-digit accuracy, nothing else changed, so its weights up to the usual stop are the usual ones
   (the row says whether the first check at or above 30% is the committed run's step). From 25% on, every 5th
   checked step and the first checks at or above 30%, 35% and 40% are read.

    python3 research/quickstart-lift/hole_path.py run --jobs 2      # runs/hole_path (resumable)
    python3 research/quickstart-lift/hole_path.py report            # research/quickstart-lift/data/hole-path.json
    python3 research/quickstart-lift/hole_path.py doc [--check]     # the page's block, from that JSON
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402
import round02 as round2  # noqa: E402
import warm_holes  # noqa: E402

RUNS = ROOT / "runs" / "hole_path"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "hole-path.json"
READ_SETS = {"study": list(range(100, 120)), "confirm": list(range(20))}
PATH_SEEDS = (112, 101, 115)   # the study's failing seeds under today's quickstart
UNTIL = 0.45          # the warm start runs until its 3-digit accuracy reaches this
READ_FROM = 0.25      # checks at or above this accuracy are read on the probe (every 5th step, and the crossings)
CROSSINGS = (0.30, 0.35, 0.40)


def row_path(seed: int) -> Path:
    return RUNS / f"seed{seed}.json"


def all_classes(model, tok) -> dict[str, dict]:
    """Per class of every answer position (see the module's docstring): the mean probability of the right token at
    warm_holes.TEMPERATURE (``p``), the count (``n``), and how much the written digit depends on the prompt within
    the class (``spread``: the mean total-variation distance of each prompt's distribution over the ten digits from
    the class's mean distribution; 0 when every prompt of the class gets the same distribution, whatever its
    operands)."""
    import torch
    from flat_holes import tv_spread
    from minitepo.sft import IGNORE
    from toy_tasks.base import read_operands
    task, examples, y, logits = warm_holes.probe(model, tok)
    probs = torch.softmax(logits / warm_holes.TEMPERATURE, -1)
    digits = [tok.encode(str(d))[0] for d in range(10)]
    right = defaultdict(list)     # class -> probability of the right token, per prompt
    spread = defaultdict(list)    # class -> distribution over the ten digits, per prompt
    for i, example in enumerate(examples):
        a, b = read_operands(example.prompt, "+", reverse=task.config.reverse_operands)
        answer = (y[i] != IGNORE).nonzero().flatten().tolist()   # the answer's digits (ones first), then EOS
        carry = 0
        for k, name in enumerate("othk"):
            if k == 0:
                cls = f"o{a % 10 + b % 10}"
            else:
                below = (a // 10 ** (k - 1)) % 10 + (b // 10 ** (k - 1)) % 10 + carry
                carry = below // 10
                cls = f"{name}{below}"
            right[cls].append(probs[i, answer[k], y[i, answer[k]]].item())
            spread[cls].append(probs[i, answer[k], digits])
    return {cls: {"p": round(sum(right[cls]) / len(right[cls]), 4), "n": len(right[cls]),
                  "spread": round(tv_spread(torch.stack(spread[cls])), 4)} for cls in sorted(right)}


def weakest(classes: dict[str, dict]) -> tuple[float, str]:
    counted = {c: v["p"] for c, v in classes.items() if v["n"] >= warm_holes.MIN_CLASS}
    worst = min(counted, key=counted.get)
    return counted[worst], worst


def job(seed: int) -> None:
    """One seed's warm start to UNTIL, read along the way."""
    round1.one_thread()
    import minitepo.lab.sft_run as sft_run
    from minitepo.lab.quickstart import QuickstartConfig, warm_start
    original = sft_run.settle_accuracy
    reads: list[dict] = []
    state = {"crossed": set()}

    def reading(model, tokenizer, task, examples, precision):
        # The settle check's own number, unchanged; the probe is read with the model in eval mode, then restored.
        accuracy = original(model, tokenizer, task, examples, precision)
        crossing = [c for c in CROSSINGS if accuracy >= c and c not in state["crossed"]]
        state["crossed"].update(crossing)
        state["pending"] = (accuracy, bool(crossing))
        if accuracy >= READ_FROM:
            was = model.training
            model.eval()
            state["classes"] = all_classes(model, tokenizer)
            model.train(was)
        else:
            state["classes"] = None
        return accuracy

    def on_check(step, accuracy):
        classes = state.pop("classes", None)
        _, crossing = state.pop("pending")
        if classes is not None and (step % 5 == 0 or crossing):
            score, worst = weakest(classes)
            reads.append({"step": step, "accuracy": accuracy, "weakest": score, "class": worst, "classes": classes})

    # train_sft looks settle_accuracy up in its module at call time; on_settle_check (called right after it, with
    # the step) is a train_sft argument that warm_start does not pass, so the quickstart's train_sft is wrapped.
    import minitepo.lab.quickstart as quickstart

    def train_with_check(config, *args, **kwargs):
        return sft_run.train_sft(config, *args, on_settle_check=on_check, **kwargs)

    sft_run.settle_accuracy, quickstart.train_sft = reading, train_with_check
    try:
        out = RUNS / "warm" / f"seed{seed}"
        sft = warm_start(QuickstartConfig(seed=seed, device="cpu", out=str(out), settle_at=UNTIL, settle_cap=None))
    finally:
        sft_run.settle_accuracy, quickstart.train_sft = original, sft_run.train_sft
    committed = warm_holes.outcomes("study")[seed]
    first30 = next((r["step"] for r in reads if r["accuracy"] >= 0.30), None)
    row = {"seed": seed, "committed_steps": committed["steps"], "first_at_30": first30,
           "same_path": first30 == committed["steps"], "before": committed["before"], "after": committed["after"],
           "steps": sft["steps"], "reads": reads}
    row_path(seed).parent.mkdir(parents=True, exist_ok=True)
    row_path(seed).write_text(json.dumps(row))


def read_path(which: str, seed: int) -> Path:
    return RUNS / "read" / f"{which}{seed}.json"


def read(which: str, seed: int) -> None:
    """The committed warm start of one seed of the look (``warm_holes.checkpoint``), every class read."""
    classes = all_classes(*warm_holes.read_model(warm_holes.checkpoint(which, seed)))
    outcome = warm_holes.outcomes(which)[seed]
    read_path(which, seed).parent.mkdir(parents=True, exist_ok=True)
    read_path(which, seed).write_text(json.dumps({"seed": seed, "set": which, **outcome, "classes": classes}))


def run(n_jobs: int) -> None:
    """The committed warm starts read (quick, one process), then the paths of PATH_SEEDS, ``n_jobs`` at a time."""
    from concurrent.futures import ThreadPoolExecutor
    round1.one_thread()
    for which, seeds in READ_SETS.items():
        for seed in seeds:
            if not read_path(which, seed).is_file():
                read(which, seed)
    with ThreadPoolExecutor(n_jobs) as pool:
        list(pool.map(lambda s: round2.run_job("path", s, script=__file__, path=row_path(s)), PATH_SEEDS))


def digit_hole(classes: dict[str, dict]) -> tuple[float, str, float]:
    """The weakest tens or hundreds class counted (>= MIN_CLASS prompts): its p, name and spread."""
    counted = {c: v for c, v in classes.items() if c[0] in "th" and v["n"] >= warm_holes.MIN_CLASS}
    worst = min(counted, key=lambda c: counted[c]["p"])
    return counted[worst]["p"], worst, counted[worst]["spread"]


def warm_row(read: dict) -> dict:
    """One warm start's row of the summary, from its read (seed, set, committed outcome, classes)."""
    low, low_class = weakest(read["classes"])
    hole, hole_class, hole_spread = digit_hole(read["classes"])
    counted = [v for c, v in read["classes"].items() if c[0] in "th" and v["n"] >= warm_holes.MIN_CLASS]
    return {"set": read["set"], "seed": read["seed"], "after": read["after"], "passed": read["after"] >= round1.TARGET,
            "weakest": low, "weakest_class": low_class, "tens_hundreds": hole, "tens_hundreds_class": hole_class,
            "tens_hundreds_spread": hole_spread, "median_spread": statistics.median(v["spread"] for v in counted),
            "steps": read["steps"], "before": read["before"], "classes": read["classes"]}


def summarize(rows: list[dict]) -> dict:
    """The counts the page states, from the per-warm-start rows."""
    below = [r for r in rows if r["weakest"] < warm_holes.HOLE]
    flat = [r for r in rows if r["tens_hundreds"] < warm_holes.HOLE]
    return {"warm_starts": len(rows),
            "any_class_below": {"n": len(below), "passed": sum(r["passed"] for r in below)},
            "tens_hundreds_below": {"n": len(flat), "passed": sum(r["passed"] for r in flat),
                                    "spread": sorted(r["tens_hundreds_spread"] for r in flat)},
            "median_spread_all": statistics.median(r["median_spread"] for r in rows)}


def report(out: Path) -> dict:
    reads = [json.loads(read_path(w, s).read_text()) for w, seeds in READ_SETS.items() for s in seeds
             if read_path(w, s).is_file()]
    paths = [json.loads(row_path(s).read_text()) for s in PATH_SEEDS if row_path(s).is_file()]
    rows = []
    for r in reads:
        rows.append(warm_row(r))
    path_rows = []
    for r in paths:
        at = {}
        for c in CROSSINGS:
            x = next((x for x in r["reads"] if x["accuracy"] >= c), None)
            at[str(c)] = None if x is None else {"step": x["step"], "accuracy": x["accuracy"],
                                                 "weakest": x["weakest"], "class": x["class"]}
        last = r["reads"][-1]
        path_rows.append({"seed": r["seed"], "after": r["after"], "same_path": r["same_path"], "at": at,
                          "last": {k: last[k] for k in ("step", "accuracy", "weakest", "class")}})
    result = {**summarize(rows), "rows": rows, "paths": path_rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    head = json.dumps({k: v for k, v in result.items() if k not in ("rows", "paths")}, indent=1)[:-2]
    lists = [f' "{k}": [\n' + ",\n".join(json.dumps(r) for r in result[k]) + "\n ]" for k in ("rows", "paths")]
    out.write_text(head + ",\n" + ",\n".join(lists) + "\n}\n")   # one row per line
    return result


def markdown(result: dict) -> str:
    pct = round1.pct
    a, t = result["any_class_below"], result["tens_hundreds_below"]
    name = {"o": "ones, its column sums to", "t": "tens, the column below sums to",
            "h": "hundreds, the column below sums to", "k": "carry out, the column below sums to"}
    lines = [f"* Warm starts read: {result['warm_starts']} (the look's: seeds 0-19 with the README's command, "
             f"100-119 as the study made them).",
             f"* With some class of some answer digit below {warm_holes.HOLE} (mean probability of the right digit at "
             f"T {warm_holes.TEMPERATURE}): **{a['n']}**, of which **{a['passed']} passed** today's quickstart.",
             f"* With a tens or hundreds class below {warm_holes.HOLE}: **{t['n']}**, of which {t['passed']} passed; "
             f"the spread of that class (mean total-variation distance of a prompt's digit distribution from the "
             f"class's mean; 0: the same distribution whatever the operands): "
             + ", ".join(f"{x:.2f}" for x in t["spread"])
             + f". The median spread of all tens and hundreds classes of a warm start, over all warm starts: "
             f"{result['median_spread_all']:.2f}.", "",
             "| seed | final (today's quickstart) | weakest class of any digit | weakest tens or hundreds class "
             "| its spread |", "|---|---|---|---|---|"]
    for r in sorted(result["rows"], key=lambda r: r["tens_hundreds"]):
        final = pct(r["after"]) if r["passed"] else f"*{pct(r['after'])}*"
        c, h = r["weakest_class"], r["tens_hundreds_class"]
        lines.append(f"| {r['seed']} | {final} | {r['weakest']:.2f} ({name[c[0]]} {c[1:]}) "
                     f"| {r['tens_hundreds']:.2f} ({name[h[0]]} {h[1:]}) | {r['tens_hundreds_spread']:.2f} |")
    if result["paths"]:
        lines += ["", "The same warm start trained on past its stop, to 45% (study seeds; the weakest class of any "
                  "digit when 3-digit accuracy first reads 30%, 35% and 40%, and at the end):", "",
                  "| seed | final (today's quickstart) | same steps to 30% as committed | at 30% | at 35% | at 40% "
                  "| last read |", "|---|---|---|---|---|---|---|"]
        for r in result["paths"]:
            cells = [("-" if v is None else f"{v['weakest']:.2f} ({v['class']}, step {v['step']})")
                     for v in r["at"].values()]
            last = r["last"]
            lines.append(f"| {r['seed']} | {pct(r['after'])} | {'yes' if r['same_path'] else 'no'} | "
                         + " | ".join(cells) + f" | {last['weakest']:.2f} ({last['class']}, step {last['step']}, "
                         f"{pct(last['accuracy'])}) |")
    return "\n".join(lines)


def doc(check: bool) -> int:
    new = round1.replace_block(round1.PAGE.read_text(), "hole-path", markdown(json.loads(SUMMARY.read_text())))
    return round1.write_page(new, check, "research/quickstart-lift/hole_path.py")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="phase", required=True)
    r = sub.add_parser("run", help="the warm starts read, then the paths (resumable)")
    r.add_argument("--jobs", type=int, default=2)
    sub.add_parser("report", help=f"write {SUMMARY.relative_to(ROOT)}")
    d = sub.add_parser("doc", help="the page's block, from the summary")
    d.add_argument("--check", action="store_true")
    j = sub.add_parser("job", help="job path SEED (internal)")
    j.add_argument("kind", choices=["path"])
    j.add_argument("seed", type=int)
    args = p.parse_args(argv)
    if args.phase == "run":
        run(args.jobs)
    elif args.phase == "report":
        result = report(SUMMARY)
        print(json.dumps({k: v for k, v in result.items() if k not in ("rows", "paths")}, indent=1))
    elif args.phase == "doc":
        return doc(args.check)
    else:
        job(args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
