"""Issue 29, a descriptive look: do the seeds that RL cannot lift start from a warm start with a hole (a class of
prompts where a carry-taking digit is at chance)?

The question, the measurement and what would support or contradict the reading are in ``research/quickstart-lift/README.md``
("A look inside the failing seeds"), committed before this ran on any seed but 1, 6 and 17. Nothing here trains RL:
each seed's warm start is made again (its RL outcome is already committed) and read teacher-forced.

    python3 research/quickstart-lift/warm_holes.py run --jobs 2        # the warm starts and their hole scores (resumable)
    python3 research/quickstart-lift/warm_holes.py job confirm 6       # also 1 and 17, the seeds that prompted it (not counted)
    python3 research/quickstart-lift/warm_holes.py report              # research/quickstart-lift/data/holes.json
    python3 research/quickstart-lift/warm_holes.py doc [--check]       # the page's block, from that JSON

Two seed sets: the study seeds 100-119, whose warm starts the study made with one thread (``runs/lift/warm``, as
rounds 1-8 did) and whose outcomes are the sixth round's ``g4-r2`` runs (today's quickstart); and the confirmation
seeds 0-19 except 1, 6 and 17 (they prompted the question), whose warm starts the README's command makes with two
threads and deterministic algorithms, and whose outcomes are the sixth round's confirmation. A regenerated warm
start must take as many steps as the one its outcome came from, or the seed is refused.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402
import round02 as round2  # noqa: E402

RUNS = ROOT / "runs" / "holes"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "holes.json"
STUDY_OUTCOMES = ROOT / "research" / "quickstart-lift" / "data" / "round6.json"            # runs["g4-r2"]: today's quickstart on 100-119
CONFIRM_OUTCOMES = ROOT / "research" / "quickstart-lift" / "data" / "confirm-round6.json"  # today's quickstart on 0-19, the README's command
PROMPTED = (1, 6, 17)   # the seeds that prompted the question: read, not counted
SETS = {"study": list(range(100, 120)), "confirm": [s for s in range(20) if s not in PROMPTED]}
PROBE = 3000            # fresh 3-digit prompts, random.Random(0)
TEMPERATURE = 0.7       # the quickstart's RL sampling temperature
MIN_CLASS = 20          # a class needs at least this many probe prompts to count
HOLE = 0.2              # a warm start has a hole if its lowest class mean is below this
SUPPORT, CONTRADICT = 0.8, 0.6   # AUC thresholds fixed in the protocol


def outcomes(which: str) -> dict[int, dict]:
    """seed -> {"steps", "before", "after"} of the committed run each set's warm start is paired with."""
    if which == "study":
        runs = json.loads(STUDY_OUTCOMES.read_text())["runs"]["g4-r2"]
        return {r["seed"]: {"steps": r["warm"]["steps"], "before": r["before"], "after": r["after"]} for r in runs}
    rows = json.loads(CONFIRM_OUTCOMES.read_text())["seeds"]
    return {r["seed"]: {"steps": r["warm_steps"], "before": r["before"], "after": r["after"]} for r in rows}


def checkpoint(which: str, seed: int) -> Path:
    folder = round1.RUNS / "warm" if which == "study" else RUNS / "warm"
    return folder / f"seed{seed}" / "warmstart" / "checkpoint.pt"


def row_path(which: str, seed: int) -> Path:
    return RUNS / which / f"seed{seed}.json"


# -- the measurement ----------------------------------------------------------------------------------------

def read_model(path: Path):
    """The checkpoint at ``path`` as (model, tokenizer), in eval mode, read with one torch thread."""
    import torch
    from minitepo.lab.checkpoint import load_model
    torch.set_num_threads(1)
    model, tok, _ = load_model(path)
    model.eval()
    return model, tok


def probe(model, tok):
    """The fixed probe, read teacher-forced: (task, its PROBE 3-digit prompts drawn with random.Random(0), their
    targets as ``make_batch`` gives them, the model's logits)."""
    import torch
    from flat_holes import probe_examples
    from minitepo.sft import make_batch
    task, examples = probe_examples(PROBE)
    x, y = make_batch(examples, tok, "cpu")
    with torch.no_grad():
        logits = model(x)
    return task, examples, y, logits


def class_means(model, tok) -> dict[str, dict]:
    """Per class (answer digit, sum of the column below with its carry): the probe's mean probability of the right
    digit at TEMPERATURE, its greedy accuracy, and its count. Tens: "t<sum>", hundreds: "h<sum>"."""
    import torch
    from minitepo.sft import IGNORE
    from toy_tasks.base import read_operands
    task, examples, y, logits = probe(model, tok)
    probs = torch.softmax(logits / TEMPERATURE, -1)
    greedy = logits.argmax(-1)
    seen = defaultdict(lambda: [0.0, 0, 0])   # class -> [sum of p, right, n]
    for i, example in enumerate(examples):
        a, b = read_operands(example.prompt, "+", reverse=task.config.reverse_operands)
        answer = (y[i] != IGNORE).nonzero().flatten().tolist()   # the answer's digits (ones first), then EOS
        carry = 0
        for k, name in ((1, "t"), (2, "h")):
            below = (a // 10 ** (k - 1)) % 10 + (b // 10 ** (k - 1)) % 10 + carry   # column k-1 with its carry
            carry = below // 10
            pos, right = answer[k], y[i, answer[k]]
            entry = seen[f"{name}{below}"]
            entry[0] += probs[i, pos, right].item()
            entry[1] += int(greedy[i, pos] == right)
            entry[2] += 1
    return {c: {"p": round(s / n, 4), "acc": round(r / n, 4), "n": n} for c, (s, r, n) in sorted(seen.items())}


def hole_score(classes: dict[str, dict]) -> tuple[float, str]:
    """The lowest class mean probability among classes with at least MIN_CLASS prompts, and that class."""
    counted = {c: v["p"] for c, v in classes.items() if v["n"] >= MIN_CLASS}
    worst = min(counted, key=counted.get)
    return counted[worst], worst


def job(which: str, seed: int) -> None:
    """One seed: its warm start (unless already made), checked against its outcome's step count, then read."""
    expected = outcomes(which)[seed]
    path = checkpoint(which, seed)
    if which == "study":
        warm_json = round1.row_path("warm", seed)
        if not path.is_file():
            warm_json.parent.mkdir(parents=True, exist_ok=True)
            warm_json.write_text(json.dumps(round1.warm_row(seed, round1.RUNS / "warm")))
        warm = json.loads(warm_json.read_text())
    else:   # the README's command: two threads, deterministic algorithms (minitepo.lab.cli)
        from minitepo.device import set_cpu_threads
        from minitepo.lab.quickstart import QuickstartConfig, warm_start
        set_cpu_threads(2, deterministic=True)
        warm = warm_start(QuickstartConfig(seed=seed, device="cpu", out=str(path.parents[1])))
    steps = warm["steps"]
    if steps != expected["steps"]:
        raise SystemExit(f"{which} seed {seed}: the warm start took {steps} steps, its outcome's {expected['steps']}")
    classes = class_means(*read_model(path))
    score, worst = hole_score(classes)
    row = {"seed": seed, "set": which, **expected, "seconds": round(warm["seconds"], 1),
           "accuracy": {k: round(v, 4) for k, v in warm["accuracy"].items()},
           "hole_score": score, "worst_class": worst, "classes": classes}
    row_path(which, seed).parent.mkdir(parents=True, exist_ok=True)
    row_path(which, seed).write_text(json.dumps(row))


def run(n_jobs: int) -> None:
    """The study set ``n_jobs`` at a time (one thread each), then the confirmation set one at a time (two threads,
    as the README's command runs)."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(n_jobs) as pool:
        list(pool.map(lambda s: round2.run_job("study", s, script=__file__, path=row_path("study", s)),
                      SETS["study"]))
    for seed in SETS["confirm"]:
        round2.run_job("confirm", seed, script=__file__, path=row_path("confirm", seed))


# -- the report ---------------------------------------------------------------------------------------------

def auc(failing: list[float], passing: list[float]) -> float:
    """The probability that a failing run's score is below a passing run's (ties count half)."""
    pairs = [(f < p) + 0.5 * (f == p) for f in failing for p in passing]
    return sum(pairs) / len(pairs)


def auc_p(scores: list[float], failed: list[bool]) -> float:
    """One-sided exact permutation p of the AUC: the share of ways to pick which runs failed (as many as did) whose
    AUC is at least the observed one."""
    observed = auc([s for s, f in zip(scores, failed) if f], [s for s, f in zip(scores, failed) if not f])
    k = sum(failed)
    at_least = total = 0
    for chosen in combinations(range(len(scores)), k):
        picked = set(chosen)
        value = auc([scores[i] for i in picked], [scores[i] for i in range(len(scores)) if i not in picked])
        at_least += value >= observed - 1e-12
        total += 1
    return at_least / total


def summarize(rows: list[dict]) -> dict:
    scores = [r["hole_score"] for r in rows]
    failed = [r["after"] < round1.TARGET for r in rows]
    fail_scores = [s for s, f in zip(scores, failed) if f]
    pass_scores = [s for s, f in zip(scores, failed) if not f]
    holes = [s < HOLE for s in scores]
    return {"n": len(rows), "failing": sum(failed),
            "spearman": round1.spearman(scores, [r["after"] for r in rows]),
            "auc": round(auc(fail_scores, pass_scores), 3) if fail_scores and pass_scores else None,
            "auc_p": round(auc_p(scores, failed), 4) if fail_scores and pass_scores else None,
            "median_score_failing": statistics.median(fail_scores) if fail_scores else None,
            "median_score_passing": statistics.median(pass_scores) if pass_scores else None,
            "hole_fail": sum(h and f for h, f in zip(holes, failed)),
            "hole_pass": sum(h and not f for h, f in zip(holes, failed)),
            "whole_fail": sum(not h and f for h, f in zip(holes, failed)),
            "whole_pass": sum(not h and not f for h, f in zip(holes, failed))}


def verdict(sets: dict) -> str:
    aucs = [s["auc"] for s in sets.values()]
    if any(a is None for a in aucs):
        return "open"
    if all(a >= SUPPORT for a in aucs):
        return "supported"
    if any(a <= CONTRADICT for a in aucs):
        return "contradicted"
    return "open"


def report(out: Path) -> dict:
    rows = {which: [json.loads(row_path(which, s).read_text()) for s in seeds if row_path(which, s).is_file()]
            for which, seeds in SETS.items()}
    missing = {w: sorted(set(SETS[w]) - {r["seed"] for r in rows[w]}) for w in SETS}
    if any(missing.values()):
        raise SystemExit(f"rows missing: {missing}; run: python3 research/quickstart-lift/warm_holes.py run")
    sets = {which: summarize(r) for which, r in rows.items()}
    prompted = [json.loads(row_path("confirm", s).read_text()) for s in PROMPTED if row_path("confirm", s).is_file()]
    result = {"sets": sets, "verdict": verdict(sets), "rows": [r for which in SETS for r in rows[which]],
              "prompted_rows": prompted}   # seeds 1, 6 and 17: read, not counted
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result


# -- the page -----------------------------------------------------------------------------------------------

def markdown(result: dict) -> str:
    pct = round1.pct
    lines = ["| seeds | runs | failing (< 80%) | Spearman `H` vs final | AUC (failing below passing) | one-sided p "
             "| median `H`, failing / passing | hole & fail | hole & pass | no hole & fail | no hole & pass |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    names = {"study": "study 100-119 (one thread)", "confirm": "confirmation 0-19 less 1, 6, 17 (two threads)"}
    for which, s in result["sets"].items():
        lines.append(f"| {names[which]} | {s['n']} | {s['failing']} | {s['spearman']} | {s['auc']} | {s['auc_p']} "
                     f"| {s['median_score_failing']:.2f} / {s['median_score_passing']:.2f} | {s['hole_fail']} "
                     f"| {s['hole_pass']} | {s['whole_fail']} | {s['whole_pass']} |")
    lines += ["", f"**The reading is {result['verdict']}** by the rule fixed above (supported: AUC >= {SUPPORT} in "
              f"both sets; contradicted: AUC <= {CONTRADICT} in either).", "",
              "| seed | warm-start steps | before | final (today's quickstart) | `H` | its class |",
              "|---|---|---|---|---|---|"]
    for r in sorted(result["rows"], key=lambda r: r["hole_score"]):
        final = pct(r["after"]) if r["after"] >= round1.TARGET else f"*{pct(r['after'])}*"
        lines.append(f"| {r['seed']} | {r['steps']} | {pct(r['before'])} | {final} | {r['hole_score']:.2f} "
                     f"| {'tens' if r['worst_class'][0] == 't' else 'hundreds'}, column below sums to "
                     f"{r['worst_class'][1:]} |")
    prompted = sorted(result.get("prompted_rows", []), key=lambda r: r["seed"])
    if prompted:
        lines += ["", "The seeds that prompted the question (not counted above): " + "; ".join(
            f"{r['seed']}: {pct(r['before'])} -> {pct(r['after'])}, `H` {r['hole_score']:.2f}" for r in prompted) + "."]
    return "\n".join(lines)


def doc(check: bool) -> int:
    new = round1.replace_block(round1.PAGE.read_text(), "holes", markdown(json.loads(SUMMARY.read_text())))
    return round1.write_page(new, check, "research/quickstart-lift/warm_holes.py")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="phase", required=True)
    r = sub.add_parser("run", help="the warm starts and their hole scores (resumable)")
    r.add_argument("--jobs", type=int, default=2)
    sub.add_parser("report", help=f"write {SUMMARY.relative_to(ROOT)}")
    d = sub.add_parser("doc", help="the page's block, from the summary")
    d.add_argument("--check", action="store_true")
    j = sub.add_parser("job", help="job: SET SEED (internal)")
    j.add_argument("which", choices=sorted(SETS))
    j.add_argument("seed", type=int)
    args = p.parse_args(argv)
    if args.phase == "run":
        run(args.jobs)
    elif args.phase == "report":
        result = report(SUMMARY)
        print(json.dumps(result["sets"], indent=1), "\nverdict:", result["verdict"])
    elif args.phase == "doc":
        return doc(args.check)
    else:
        job(args.which, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
