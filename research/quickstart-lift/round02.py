"""Issue 29, second round: does a faster warm start, a flat RL learning rate, or both lift every seed in time?

The protocol, the arms, the selection rule and the seeds are in ``research/quickstart-lift/README.md`` ("Second round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 research/quickstart-lift/round02.py run    --seeds 110-119 --jobs 2 [--until HH:MM]
    python3 research/quickstart-lift/round02.py report --out research/quickstart-lift/data/round2.json
    python3 research/quickstart-lift/round02.py doc [--check]     # the page's round-2 block, from that JSON

``run`` goes seed-major: for each seed its two warm starts, then the four RL arms from them, two jobs at a time,
one torch thread each (subprocesses of this script). With ``--until`` no new seed is begun after that UTC time, so
every arm ends with the same seeds. The warm starts of today's recipe are shared with the first round's folder
(``runs/lift/warm``: same code, same recipe); everything else goes to ``runs/lift2/``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402  (the first round: its target, spearman, binomial_se, warm starts)

from minitepo.lab.compare import parse_seed_list  # noqa: E402

RUNS = ROOT / "runs" / "lift2"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "round2.json"
PAGE = round1.PAGE
TARGET = round1.TARGET
WARM = {
    # today's warm start (SFT peak lr 2e-3), the first round's folder
    "warm": {"folder": round1.RUNS / "warm", "sft": {}},
    # the one warm-start change: peak SFT learning rate 3e-3 (same warmup, schedule, stop rule)
    "warm-sft3e-3": {"folder": RUNS / "warm-sft3e-3", "sft": {"lr": 3e-3}},
}
ARMS = {
    # name: (warm start, RLConfig overrides on the quickstart's RL stage)
    "base": ("warm", {}),                                  # the quickstart today: lr 6e-4, cosine to a tenth
    "sft3e-3": ("warm-sft3e-3", {}),                       # only the warm start's learning rate changes
    "rl-flat": ("warm", {"min_lr_frac": 1.0}),             # only the RL schedule changes: flat after warmup
    "sft3e-3+rl-flat": ("warm-sft3e-3", {"min_lr_frac": 1.0}),   # both (the 2x2's fourth cell)
}
CONFIRM = ROOT / "research" / "quickstart-lift" / "data" / "confirm-round2.json"   # the confirmation of this round's pick (seeds 0-19)
CONFIRMED = "the warm start's peak lr 3e-3 (RL lr 6e-4)"      # what that confirmation ran: the pick, sft3e-3
TIME_LIMIT = 1.10   # an arm is eligible if its median warm-start steps and its median RL seconds are within this of base's


# -- one job, in its own process -----------------------------------------------------------------------------

def job_warm(kind: str, seed: int) -> dict:
    return round1.warm_row(seed, WARM[kind]["folder"], **WARM[kind]["sft"])


def job_rl(arm: str, seed: int) -> dict:
    kind, overrides = ARMS[arm]
    return rl_row(arm, seed, WARM[kind]["folder"], overrides, RUNS / arm / f"seed{seed}")


def rl_row(arm: str, seed: int, warm_folder: Path, overrides: dict, out: Path) -> dict:
    """The quickstart's RL stage with ``overrides`` from the warm start of ``seed`` in ``warm_folder``, into
    ``out``, one torch thread; the run's row (also the third round's)."""
    round1.one_thread()
    from minitepo.lab.quickstart import QuickstartConfig, rl_stage
    from minitepo.lab.rl_run import train_rl
    from minitepo.lab.runs import read_metrics
    warm = json.loads((warm_folder / f"seed{seed}.json").read_text())
    t0 = time.perf_counter()
    config = QuickstartConfig(seed=seed, device="cpu", out=str(out), **round1.AS_RAN)   # the settings as they ran
    train_rl(rl_stage(config, str(warm_folder / f"seed{seed}" / "warmstart" / "checkpoint.pt"), **overrides))
    seconds = time.perf_counter() - t0
    rows = read_metrics(out / "rl")
    curve = [(r["step"], r["eval/greedy_acc/all"]) for r in rows if "eval/greedy_acc/all" in r]
    trained = [r for r in rows if "charts/groups_trained" in r]
    return {"arm": arm, "seed": seed, "warm": warm, "before": curve[0][1], "after": curve[-1][1],
            "best": max(a for _, a in curve), "curve": curve, "rl_seconds": round(seconds, 1),
            "step_seconds": round(sum(r.get("time/step_s", 0.0) for r in trained), 1),
            "short_batches": sum(r["charts/groups_trained"] < 32 for r in trained) / max(len(trained), 1)}


# -- the driver ---------------------------------------------------------------------------------------------

def row_path(kind: str, seed: int) -> Path:
    return (WARM[kind]["folder"] if kind in WARM else RUNS / kind) / f"seed{seed}.json"


def run_job(kind: str, seed: int, script: str = __file__, path: Path | None = None, describe=None) -> None:
    """``script job KIND SEED`` in a one-thread subprocess, unless its row (``path``, by default this round's) is
    there; prints the row, or ``describe(row)`` if given (also the third and later rounds' drivers)."""
    path = path or row_path(kind, seed)
    if path.exists():
        return
    proc = subprocess.run([sys.executable, script, "job", kind, str(seed)], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if proc.returncode != 0:
        print(f"FAILED {kind} seed {seed}:\n{proc.stderr[-3000:]}", flush=True)
        return
    row = json.loads(path.read_text())
    if describe is not None:
        print(f"{time.strftime('%H:%M:%S')} {kind} seed {seed}: {describe(row)}", flush=True)
        return
    print(f"{time.strftime('%H:%M:%S')} {kind} seed {seed}: "
          + (f"{row['steps']} steps, {row['accuracy']} ({row['seconds']} s)" if "steps" in row   # a warm start
             else f"{row['before']:.3f} -> {row['after']:.3f} ({row['rl_seconds']} s)"), flush=True)


def run(seeds: list[int], n_jobs: int, until: str | None) -> None:
    """Seed by seed: the warm starts, then the arms; no seed begins after ``until`` (HH:MM, UTC)."""
    with ThreadPoolExecutor(n_jobs) as pool:
        for seed in seeds:
            if until and time.strftime("%H:%M", time.gmtime()) >= until:
                print(f"{time.strftime('%H:%M:%S')} time budget: seed {seed} and later not begun", flush=True)
                break
            list(pool.map(lambda k: run_job(k, seed), WARM))
            list(pool.map(lambda a: run_job(a, seed), ARMS))


def report(out: Path | None) -> dict:
    """Per arm over the seeds every arm finished: seeds at target, median, time against base; the rule's pick."""
    rows = {arm: {int(p.stem[4:]): json.loads(p.read_text()) for p in (RUNS / arm).glob("seed*.json")} for arm in ARMS}
    seeds = sorted(set.intersection(*(set(r) for r in rows.values())))
    arms = {}
    for arm, by_seed in rows.items():
        runs = [by_seed[s] for s in seeds]
        after = [r["after"] for r in runs]
        arms[arm] = {"n": len(runs), "met": sum(r["before"] <= 0.40 and r["after"] >= TARGET for r in runs),
                     "median_after": statistics.median(after), "min_after": min(after), "after": after,
                     "median_warm_steps": statistics.median(r["warm"]["steps"] for r in runs),
                     "median_rl_seconds": statistics.median(r["step_seconds"] for r in runs)}
    base = arms["base"]
    for arm in arms.values():
        arm["warm_ratio"] = round(arm["median_warm_steps"] / base["median_warm_steps"], 3)
        arm["rl_ratio"] = round(arm["median_rl_seconds"] / base["median_rl_seconds"], 3)
        arm["eligible"] = arm["warm_ratio"] <= TIME_LIMIT and arm["rl_ratio"] <= TIME_LIMIT
    ranked = sorted((a for a in arms if arms[a]["eligible"]), key=lambda a: (arms[a]["met"], arms[a]["median_after"]),
                    reverse=True)
    pick = ranked[0] if ranked else "base"
    if (arms[pick]["met"], arms[pick]["median_after"]) <= (base["met"], base["median_after"]):
        pick = "base"
    base_runs = [rows["base"][s] for s in seeds]
    replication = round1.spearman([r["warm"]["steps"] for r in base_runs], [r["after"] for r in base_runs])
    result = {"seeds": seeds, "arms": arms, "pick": pick, "spearman_after_vs_warm_steps": replication,
              "runs": {arm: [rows[arm][s] for s in seeds] for arm in ARMS}}
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
    for arm, a in arms.items():
        print(f"{arm:16s} n {a['n']:2d}  met {a['met']:2d}  median {a['median_after']:.3f}  min {a['min_after']:.3f}  "
              f"warm steps x{a['warm_ratio']}  RL s x{a['rl_ratio']}  eligible {a['eligible']}")
    print("pick:", pick, " spearman(final, warm steps) in base:", replication)
    return result


def markdown(result: dict) -> str:
    arms, pct = result["arms"], round1.pct
    seeds = result["seeds"]
    lines = [f"Seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} per arm).", "",
             "| arm | seeds at target (<= 40% -> >= 80%) | median final | lowest final | warm-start steps vs `base` "
             "| RL seconds vs `base` |", "|---|---|---|---|---|---|"]
    for name, a in arms.items():
        mark = " **(picked)**" if name == result["pick"] else ""
        lines.append(f"| `{name}`{mark} | {a['met']} of {a['n']} | {pct(a['median_after'])} | {pct(a['min_after'])} "
                     f"| {a['warm_ratio']:.2f}x | {a['rl_ratio']:.2f}x |")
    lines += ["", "| seed | warm steps (2e-3 / 3e-3) | before (2e-3 / 3e-3) | "
              + " | ".join(f"`{n}`" for n in arms) + " |", "|---" * (3 + len(arms)) + "|"]
    for i, seed in enumerate(seeds):
        base, fast = result["runs"]["base"][i], result["runs"]["sft3e-3"][i]
        finals = [result["runs"][n][i]["after"] for n in arms]
        lines.append(f"| {seed} | {base['warm']['steps']} / {fast['warm']['steps']} | {pct(base['before'])} / "
                     f"{pct(fast['before'])} | " + " | ".join(pct(f) if f >= TARGET else f"*{pct(f)}*" for f in finals)
                     + " |")
    lines += ["", f"Replication of the first round's diagnosis (arm `base`): Spearman correlation of the final accuracy "
              f"with the warm start's step count {result['spearman_after_vs_warm_steps']} (first round: -0.857)."]
    return "\n".join(lines)


def pick_holds(first: list[dict], second: list[dict]) -> bool:
    """The rule added while the confirmation ran: the pick stays the quickstart's default only if its confirmation
    (``second``) is at least as good as the first round's on the same seeds (``first``): seeds at target, then the
    median final accuracy."""
    def key(rows):
        return (sum(r["before"] <= 0.40 and r["after"] >= TARGET for r in rows), statistics.median(r["after"] for r in rows))
    return key(second) >= key(first)


def versus(first: list[dict], second: list[dict]) -> tuple[list[int], list[float], int, int]:
    """Two runs of the command on the same seeds: seeds at target and median final accuracy of each, and on how
    many seeds the second ended higher and lower (also the fourth round's)."""
    assert [r["seed"] for r in first] == [r["seed"] for r in second]
    met = [sum(r["before"] <= 0.40 and r["after"] >= TARGET for r in rows) for rows in (first, second)]
    med = [statistics.median(r["after"] for r in rows) for rows in (first, second)]
    up = sum(b["after"] > a["after"] for a, b in zip(first, second))
    down = sum(b["after"] < a["after"] for a, b in zip(first, second))
    return met, med, up, down


def head_to_head(first: list[dict], second: list[dict], change: str = "the new warm start",
                 holds_text: str = "the quickstart keeps the warm-start lr 3e-3.",
                 fails_text: str = "the quickstart goes back to the warm-start lr 2e-3, and the README's seed table "
                                   "stays the first round's confirmation.") -> str:
    """The two confirmations, seed by seed, and what the rule above makes of them (``change``: what the second
    one changed; the other two: what follows if the pick holds or not)."""
    pct = round1.pct
    met, med, up, down = versus(first, second)
    holds = pick_holds(first, second)
    return (f"* Against the first round's confirmation (the quickstart before this round, same seeds, same command): "
            f"**{met[1]} of {len(second)} against {met[0]} of {len(first)}** at target, median {pct(med[1])} against "
            f"{pct(med[0])}; {change} ended higher on {up} seeds and lower on {down}.\n"
            + (f"* **The pick holds**: {holds_text}" if holds else f"* **The pick does not hold**: {fails_text}"))


def doc(check: bool) -> int:
    """Write (or, with ``check``, compare) the page's blocks of this round: the study and its confirmation."""
    new = round1.replace_block(PAGE.read_text(), "round2", markdown(json.loads(SUMMARY.read_text())))
    if CONFIRM.is_file():
        second = json.loads(CONFIRM.read_text())["seeds"]
        first = json.loads(round1.CONFIRM.read_text())["seeds"]
        new = round1.replace_block(new, "confirmation2", round1.confirmation(second, CONFIRMED) + "\n"
                                   + head_to_head(first, second))
    return round1.write_page(new, check, "research/quickstart-lift/round02.py")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("phase", choices=["run", "report", "doc", "job"])
    ap.add_argument("rest", nargs="*", help="job: KIND SEED (internal)")
    ap.add_argument("--seeds", default="110-119")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--until", help="run: begin no seed after this UTC time (HH:MM)")
    ap.add_argument("--out", type=Path, help="report: write the summary JSON here")
    ap.add_argument("--check", action="store_true", help="doc: exit 1 if the page differs from the summary")
    args = ap.parse_args(argv)
    if args.phase == "job":
        kind, seed = args.rest[0], int(args.rest[1])
        row = job_warm(kind, seed) if kind in WARM else job_rl(kind, seed)
        path = row_path(kind, seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(row))
    elif args.phase == "run":
        run(parse_seed_list(args.seeds), args.jobs, args.until)
    elif args.phase == "doc":
        return doc(args.check)
    else:
        report(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
