"""Issue 29, third round: does a higher sampling temperature in the RL stage lift every seed?

The protocol, the arms, the selection rule and the seeds are in ``research/quickstart-lift/README.md`` ("Third round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 research/quickstart-lift/round03.py run    --seeds 100-119 --jobs 2 [--until HH:MM]
    python3 research/quickstart-lift/round03.py report --out research/quickstart-lift/data/round3.json
    python3 research/quickstart-lift/round03.py doc [--check]     # the page's round-3 blocks, from the JSON records

Every arm starts from today's warm starts (the first round's folder, ``runs/lift/warm``). ``base`` is not rerun: its
rows are the runs of today's quickstart from the earlier rounds (``BASE_ROWS``). The new arms go to ``runs/lift3/``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402  (the first round: target, warm starts, page helpers)
import round02 as round2  # noqa: E402  (the second round: one RL run's row, the keep-or-revert rule)

from minitepo.lab.compare import parse_seed_list  # noqa: E402

RUNS = ROOT / "runs" / "lift3"
WARM = round1.RUNS / "warm"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "round3.json"
CONFIRM = ROOT / "research" / "quickstart-lift" / "data" / "confirm-round3.json"   # the confirmation of this round's pick (seeds 0-19)
TARGET = round1.TARGET
ARMS = {
    # name: RLConfig overrides on the quickstart's RL stage (from the same warm start)
    "t0.85": {"temperature": 0.85},
    "t1.0": {"temperature": 1.0},
}
IDLE = ROOT / "research" / "quickstart-lift" / "data" / "idle-seeds.json"   # the README's command on seeds 0-19 with the cheaper settle check
CONFIRMED = None   # what the confirmation ran (the pick, e.g. "temperature 0.85"), set once the rule has picked
COST_LIMIT = 1.15   # an arm is eligible if its median sampled responses per run are within this of base's


def base_folder(seed: int) -> Path:
    """Where today's quickstart already ran from this seed's warm start: the first round's ``lr6e-4`` arm (seeds
    100-109) or the second round's ``base`` (110-119); the same recipe, the same code (identical fingerprint)."""
    return (round1.RUNS / "lr6e-4" if seed < 110 else round2.RUNS / "base") / f"seed{seed}"


def row_path(arm: str, seed: int) -> Path:
    return base_folder(seed).with_suffix(".json") if arm == "base" else RUNS / arm / f"seed{seed}.json"


def deadline(until: str | None) -> float | None:
    """``until`` (HH:MM, UTC) as a time stamp: the next such moment from now (so 00:55 at 23:55 is tomorrow's)."""
    if not until:
        return None
    now = time.time()
    hours, minutes = map(int, until.split(":"))
    today = now - now % 86400 + hours * 3600 + minutes * 60
    return today if today > now else today + 86400


def run(seeds: list[int], n_jobs: int, until: str | None, arms: dict = ARMS, row=None, script: str = __file__) -> None:
    """Seed by seed, the new ``arms`` side by side (their rows at ``row(arm, seed)``, by ``script job``); no seed
    begins after ``until``. The fourth round's driver passes its own arms, rows and script."""
    row = row or row_path
    end = deadline(until)
    with ThreadPoolExecutor(n_jobs) as pool:
        for seed in seeds:
            if end is not None and time.time() >= end:
                print(f"{time.strftime('%H:%M:%S')} time budget: seed {seed} and later not begun", flush=True)
                break
            list(pool.map(lambda a: round2.run_job(a, seed, script=script, path=row(a, seed)), arms))


def mechanism(folder: Path) -> dict:
    """What a run's metrics say about the collapse (descriptive): its sampled responses (the cost the rule reads),
    the mean sampled entropy over iterations 51-100 and the mean groups trained over the last 50 iterations."""
    from minitepo.lab.runs import read_metrics
    rows = [r for r in read_metrics(folder / "rl") if "charts/groups_trained" in r]
    mid = [r["charts/entropy_sampled"] for r in rows if 51 <= r["step"] <= 100]
    return {"responses": sum(r["charts/responses_sampled"] for r in rows),
            "entropy_51_100": round(statistics.fmean(mid), 4),
            "groups_last50": round(statistics.fmean(r["charts/groups_trained"] for r in rows[-50:]), 2)}


def report(out: Path | None, new_arms: dict = ARMS, row=None, describe=mechanism) -> dict:
    """Per arm over the seeds every new arm finished: seeds at target, median, cost against base; the rule's pick.
    ``describe(folder)`` gives a run's sampled responses and the descriptive numbers, each averaged over the seeds
    as ``mean_<name>``. The fourth round's driver passes its own arms, rows and description."""
    row = row or row_path
    done = [set(int(p.stem[4:]) for p in row(arm, 0).parent.glob("seed*.json")) for arm in new_arms]
    seeds = sorted(set.intersection(*done))
    rows = {arm: [json.loads(row(arm, s).read_text()) | describe(row(arm, s).with_suffix(""))
                  for s in seeds] for arm in ("base", *new_arms)}
    arms = {}
    for arm, runs in rows.items():
        after = [r["after"] for r in runs]
        arms[arm] = {"n": len(runs), "met": sum(r["before"] <= 0.40 and r["after"] >= TARGET for r in runs),
                     "median_after": statistics.median(after), "min_after": min(after),
                     "median_responses": statistics.median(r["responses"] for r in runs),
                     "median_rl_seconds": statistics.median(r["step_seconds"] for r in runs)}
        arms[arm] |= {f"mean_{name}": round(statistics.fmean(r[name] for r in runs), 4 if "entropy" in name else 2)
                      for name in describe(row(arm, seeds[0]).with_suffix("")) if name != "responses"}
    base = arms["base"]
    for arm in arms.values():
        arm["cost_ratio"] = round(arm["median_responses"] / base["median_responses"], 3)
        arm["eligible"] = arm["cost_ratio"] <= COST_LIMIT
    result = {"seeds": seeds, "arms": arms, "pick": rule_pick(arms, new_arms),
              "runs": {arm: [{k: v for k, v in r.items() if k != "curve"} for r in runs] for arm, runs in rows.items()}}
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
    for arm, a in arms.items():
        print(f"{arm:6s} n {a['n']:2d}  met {a['met']:2d}  median {a['median_after']:.3f}  min {a['min_after']:.3f}  "
              f"responses x{a['cost_ratio']}  eligible {a['eligible']}  "
              + "  ".join(f"{k[5:]} {v}" for k, v in a.items() if k.startswith("mean_")))
    print("pick:", result["pick"])
    return result


def rule_pick(arms: dict, new_arms) -> str:
    """The rule's pick: among the eligible ``new_arms``, the most seeds at target, ties to the higher median final;
    it replaces ``base`` only if it beats base on that ordering (also the eighth round's)."""
    ranked = sorted((a for a in new_arms if arms[a]["eligible"]), key=lambda a: (arms[a]["met"], arms[a]["median_after"]),
                    reverse=True)
    pick = ranked[0] if ranked else "base"
    if (arms[pick]["met"], arms[pick]["median_after"]) <= (arms["base"]["met"], arms["base"]["median_after"]):
        pick = "base"
    return pick


def markdown(result: dict) -> str:
    arms, pct, seeds = result["arms"], round1.pct, result["seeds"]
    lines = [f"Seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} per arm), every arm from the same warm start per seed.", "",
             "| arm | seeds at target (<= 40% -> >= 80%) | median final | lowest final | sampled responses vs `base` "
             "| sampled entropy, iterations 51-100 | groups trained, last 50 iterations |", "|---" * 7 + "|"]
    for name, a in arms.items():
        mark = "" if name != result["pick"] else " **(kept)**" if name == "base" else " **(picked)**"
        lines.append(f"| `{name}`{mark} | {a['met']} of {a['n']} | {pct(a['median_after'])} | {pct(a['min_after'])} "
                     f"| {a['cost_ratio']:.2f}x | {a['mean_entropy_51_100']:.2f} | {a['mean_groups_last50']:.1f} |")
    return "\n".join(lines + ["", seed_table(result)])


def seed_table(result: dict) -> str:
    """Per seed: its warm start's steps, the accuracy before RL and each arm's final (below target in italics);
    also the fourth round's."""
    arms, pct = result["arms"], round1.pct
    lines = ["| seed | warm-start steps | before | " + " | ".join(f"`{n}`" for n in arms) + " |",
             "|---" * (3 + len(arms)) + "|"]
    for i, seed in enumerate(result["seeds"]):
        base = result["runs"]["base"][i]
        finals = [result["runs"][n][i]["after"] for n in arms]
        lines.append(f"| {seed} | {base['warm']['steps']} | {pct(base['before'])} | "
                     + " | ".join(pct(f) if f >= TARGET else f"*{pct(f)}*" for f in finals) + " |")
    return "\n".join(lines)


def differing(first: list[dict], second: list[dict]) -> list[int]:
    """The seeds whose warm-start steps or accuracies before and after differ between two runs of the command."""
    keys = ("warm_steps", "before", "after")
    assert [r["seed"] for r in first] == [r["seed"] for r in second]
    return [a["seed"] for a, b in zip(first, second) if any(a[k] != b[k] for k in keys)]


def idle_block(first: list[dict], idle: list[dict]) -> str:
    """The idle run of the command with the cheaper settle check: the rule's verdict, and its times."""
    pct = round1.pct
    changed = differing(first, idle)
    minutes = {r["seed"]: r["printed_min"] for r in idle}
    wall = {r["seed"]: r["wall_s"] for r in idle}
    over = [s for s, m in minutes.items() if m > 2.5]
    verdict = ("* **Every seed as in the first round's confirmation** (warm-start steps, accuracy before and after): "
               "the cheaper settle check stays." if not changed else
               f"* **Seeds {', '.join(map(str, changed))} differ from the first round's confirmation**: the cheaper "
               "settle check is reverted.")
    return "\n".join([
        f"Seeds {idle[0]['seed']}-{idle[-1]['seed']}, the README's command, one at a time, nothing else running:", "",
        verdict,
        f"* Printed totals {min(minutes.values()):.1f}-{max(minutes.values()):.1f} min, median "
        f"{statistics.median(minutes.values()):.1f} min; wall time with the interpreter's start "
        f"{min(wall.values()):.1f}-{max(wall.values()):.1f} s. The default seed (1): {minutes[1]:.1f} min "
        f"({wall[1]:.1f} s; target <= 2 min).",
        "* Above 2.5 min: " + (", ".join(f"seed {s} ({minutes[s]:.1f} min)" for s in over) if over else "none")
        + " (target: none).",
        f"* {sum(r['before'] <= 0.40 and r['after'] >= TARGET for r in idle)} of {len(idle)} at target, median "
        f"{pct(statistics.median(r['after'] for r in idle))}."])


def doc(check: bool) -> int:
    """Write (or, with ``check``, compare) the page's blocks of this round: the study and its confirmation."""
    new = round1.replace_block(round1.PAGE.read_text(), "round3", markdown(json.loads(SUMMARY.read_text())))
    if CONFIRM.is_file():
        third = json.loads(CONFIRM.read_text())["seeds"]
        first = json.loads(round1.CONFIRM.read_text())["seeds"]
        new = round1.replace_block(new, "confirmation3", round1.confirmation(third, CONFIRMED) + "\n"
                                   + round2.head_to_head(
            first, third, change=CONFIRMED,
            holds_text=f"the quickstart keeps {CONFIRMED}; the README's seed table is this confirmation.",
            fails_text="the quickstart goes back to temperature 0.7, and the README's seed table stays the first "
                       "round's confirmation."))
    if IDLE.is_file():
        new = round1.replace_block(new, "idle", idle_block(json.loads(round1.CONFIRM.read_text())["seeds"],
                                                           json.loads(IDLE.read_text())["seeds"]))
    return round1.write_page(new, check, "research/quickstart-lift/round03.py")


def parser(description: str, job_help: str = "job: ARM SEED (internal)") -> argparse.ArgumentParser:
    """A round's options: the phase (run, report, doc, or the internal job), the seeds, the parallel jobs, the time
    budget, the summary's path and doc's --check (this round's to the seventh's, and the eighth's)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("phase", choices=["run", "report", "doc", "job"])
    ap.add_argument("rest", nargs="*", help=job_help)
    ap.add_argument("--seeds", default="100-119")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--until", help="run: begin no seed after this UTC time (HH:MM)")
    ap.add_argument("--out", type=Path, help="report: write the summary JSON here")
    ap.add_argument("--check", action="store_true", help="doc: exit 1 if the page differs from the records")
    return ap


def cli(argv, description: str, arms: dict, row, write_doc, describe, script: str) -> int:
    """A round's command line (this round's and the fourth's): ``run``, ``report``, ``doc`` and the internal
    ``job ARM SEED``, which trains one arm from the seed's warm start in ``WARM`` and writes its row to
    ``row(arm, seed)`` (the run's folder beside it)."""
    args = parser(description).parse_args(argv)
    if args.phase == "job":
        arm, seed = args.rest[0], int(args.rest[1])
        path = row(arm, seed)
        result = round2.rl_row(arm, seed, WARM, arms[arm], path.with_suffix(""))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result))
    elif args.phase == "run":
        run(parse_seed_list(args.seeds), args.jobs, args.until, arms=arms, row=row, script=script)
    elif args.phase == "doc":
        return write_doc(args.check)
    else:
        report(args.out, new_arms=arms, row=row, describe=describe)
    return 0


def main(argv=None) -> int:
    return cli(argv, __doc__.splitlines()[0], ARMS, row_path, doc, mechanism, __file__)


if __name__ == "__main__":
    sys.exit(main())
