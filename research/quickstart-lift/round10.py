"""Issue 29, tenth round: a warm start with a flat hole is drawn again (``--redraw-flat``).

The protocol, the arm, the selection rule and the seeds are in ``research/quickstart-lift/README.md`` ("Tenth round"),
committed before the first run of this round. Phases, each resumable (a finished job's row is kept):

    python3 research/quickstart-lift/round10.py run --jobs 2 --until 19:35   # the scan, then the study's runs
    python3 research/quickstart-lift/round10.py job warm SEED     # a scan seed's warm start, read by the quickstart's check
    python3 research/quickstart-lift/round10.py job base SEED     # the quickstart, one thread, redraw_flat=0
    python3 research/quickstart-lift/round10.py job redraw SEED   # the quickstart, one thread, redraw_flat=2
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import round01 as round1  # noqa: E402  (the target, one thread, the warm-start job)
import round02 as round2  # noqa: E402  (one job in its own process)
import round03 as round3  # noqa: E402  (the deadline)
import round06 as round6  # noqa: E402  (today's quickstart on the study seeds, committed)
import warm_holes  # noqa: E402  (the look's committed warm starts)

RUNS = ROOT / "runs" / "lift10"
SUMMARY = ROOT / "research" / "quickstart-lift" / "data" / "round10.json"
SCAN = list(range(120, 150))     # new study seeds, scanned for flat holes
REDRAWS = 2                      # the arm's --redraw-flat
CHECK_SEED = 100                 # a study seed without a flat hole: redraw must be today's run there


def row_path(kind: str, seed: int) -> Path:
    return RUNS / kind / f"seed{seed}.json"


def flat_classes(checkpoint: Path) -> list[str]:
    """The quickstart's check on a warm-start checkpoint: its flat holes, described (one thread)."""
    from minitepo.lab.checkpoint import load_model
    from flat_holes import find_flat_holes
    model, tokenizer, _ = load_model(checkpoint)
    return [str(c) for c in find_flat_holes(model, tokenizer)]


def job(kind: str, seed: int) -> None:
    """``warm``: a scan seed's warm start (the study's recipe, one thread) and the quickstart's check on it;
    ``base`` / ``redraw``: the quickstart itself, one thread, with ``redraw_flat`` 0 / REDRAWS."""
    round1.one_thread()
    if kind == "warm":
        row = round1.warm_row(seed, RUNS / "warm")
        row["flat"] = flat_classes(RUNS / "warm" / f"seed{seed}" / "warmstart" / "checkpoint.pt")
    else:
        from minitepo.lab.quickstart import QuickstartConfig, run_quickstart
        t0 = time.perf_counter()
        result = run_quickstart(QuickstartConfig(seed=seed, device="cpu", out=str(RUNS / kind / f"seed{seed}"),
                                                 redraw_flat=REDRAWS if kind == "redraw" else 0))
        row = {"seed": seed, "kind": kind, "before": result["before"], "after": result["after"],
               "seconds": round(time.perf_counter() - t0, 1), "warm_draws": result["warm_draws"],
               "warm_steps": result["warm_steps"]}
    row_path(kind, seed).parent.mkdir(parents=True, exist_ok=True)
    row_path(kind, seed).write_text(json.dumps(row))


def scan(n_jobs: int) -> list[int]:
    """The scan seeds' warm starts (resumable) and the quickstart's check on each; returns those with a flat hole."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(n_jobs) as pool:
        list(pool.map(lambda s: round2.run_job("warm", s, script=__file__, path=row_path("warm", s)), SCAN))
    flagged = []
    for seed in SCAN:
        row = json.loads(row_path("warm", seed).read_text())
        if "flat" not in row:   # the first scan rows were written before the check was added to the job
            row["flat"] = flat_classes(RUNS / "warm" / f"seed{seed}" / "warmstart" / "checkpoint.pt")
            row_path("warm", seed).write_text(json.dumps(row))
        if row["flat"]:
            flagged.append(seed)
    return flagged


def run(n_jobs: int, until: str | None) -> None:
    """The scan, then the study's runs: ``redraw`` on 100 (the check that it is today's run there) and on 112, and
    ``base`` and ``redraw`` on each flagged scan seed; no job begins after ``until`` (HH:MM UTC)."""
    from concurrent.futures import ThreadPoolExecutor
    flagged = scan(n_jobs)
    print(f"{time.strftime('%H:%M:%S')} scan: flat holes in {flagged}", flush=True)
    jobs = [("redraw", CHECK_SEED), ("redraw", 112)] + [(kind, s) for s in flagged for kind in ("base", "redraw")]
    end = round3.deadline(until)

    def one(job):
        if end is not None and time.time() >= end:
            print(f"{time.strftime('%H:%M:%S')} time budget: {job} not begun", flush=True)
            return
        round2.run_job(*job, script=__file__, path=row_path(*job),
                       describe=lambda row: f"{row['before']:.3f} -> {row['after']:.3f}, {row['warm_draws']} warm "
                                            f"start(s), {row['seconds']} s")

    with ThreadPoolExecutor(n_jobs) as pool:
        list(pool.map(one, jobs))


def committed_flags() -> dict:
    """The quickstart's check on the 40 committed warm starts of the look (one thread): the seeds it flags per set,
    to set beside the reading's flat holes."""
    round1.one_thread()
    flags = {}
    for which, seeds in (("study", range(100, 120)), ("confirm", range(20))):
        flags[which] = [s for s in seeds if flat_classes(warm_holes.checkpoint(which, s))]
    return flags


def probe_timing(checkpoint: Path, repeats: int = 3) -> float:
    """Median seconds of the quickstart's check on one warm start, with the command's threads (2)."""
    from minitepo.device import set_cpu_threads
    set_cpu_threads(2, deterministic=True)
    from minitepo.lab.checkpoint import load_model
    from flat_holes import find_flat_holes
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model, tokenizer, _ = load_model(checkpoint)
        find_flat_holes(model, tokenizer)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def rule(study: list[dict]) -> str:
    """The protocol's rule on the study's flat-hole seeds: confirm ``redraw`` if it puts more of them at target."""
    at = {kind: sum(r[kind]["after"] >= round1.TARGET for r in study) for kind in ("base", "redraw")}
    return "confirm" if at["redraw"] > at["base"] else "stop"


def report(out: Path, with_confirmation: bool = False) -> dict:
    """The scan, the checks, the study's pairs and the rule's verdict; the confirmation, when it is there."""
    committed = {r["seed"]: r for r in json.loads(round6.SUMMARY.read_text())["runs"]["g4-r2"]}
    warm = {s: json.loads(row_path("warm", s).read_text()) for s in SCAN if row_path("warm", s).is_file()}
    flagged = [s for s, r in warm.items() if r.get("flat")]
    check = json.loads(row_path("redraw", CHECK_SEED).read_text())
    same = (check["after"] == committed[CHECK_SEED]["after"] and check["warm_steps"] == committed[CHECK_SEED]["warm"]["steps"]
            and check["warm_draws"] == 1)
    study = []
    for seed in [112, *flagged]:
        redraw = row_path("redraw", seed)
        if not redraw.is_file():
            continue
        if seed == 112:   # base: the sixth round's committed run of today's quickstart (its folder is not kept)
            base = {"seed": 112, "before": committed[112]["before"], "after": committed[112]["after"],
                    "seconds": None, "warm_draws": 1, "warm_steps": committed[112]["warm"]["steps"]}
        elif row_path("base", seed).is_file():
            base = json.loads(row_path("base", seed).read_text())
        else:
            continue
        study.append({"seed": seed, "base": base, "redraw": json.loads(redraw.read_text()),
                      "flat": warm[seed]["flat"] if seed in warm else None})
    result = {"scan": {"seeds": sorted(warm), "flagged": flagged,
                       "warm_steps_median": statistics.median(r["steps"] for r in warm.values())},
              "committed_flags": json.loads((RUNS / "flags.json").read_text()),
              "same_run_check": {"seed": CHECK_SEED, "after": check["after"], "warm_steps": check["warm_steps"],
                                 "committed_after": committed[CHECK_SEED]["after"],
                                 "committed_warm_steps": committed[CHECK_SEED]["warm"]["steps"], "same": same},
              "study": study, "verdict": rule(study)}
    if with_confirmation:
        checkpoint = ROOT / "runs" / "confirm10" / "seed1" / "warmstart" / "checkpoint.pt"
        result["confirmation"] = confirmation(probe_timing(checkpoint) if checkpoint.is_file() else None)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result


CONFIRM_RUNS = ROOT / "research" / "quickstart-lift" / "data" / "confirm-round10.json"   # quickstart_seeds.py --flags '--redraw-flat 2'
TODAY = ROOT / "research" / "quickstart-lift" / "data" / "confirm-round6.json"            # today's quickstart on 0-19, the README's table


def confirmation(probe_seconds: float | None) -> dict:
    """Seeds 0-19 with ``redraw``: the seeds run with the flag (their rows), today's committed rows for the others;
    the protocol's rule (more seeds at target than today's, none of today's passing seeds lost)."""
    today = {r["seed"]: r for r in json.loads(TODAY.read_text())["seeds"]}
    ran = {r["seed"]: r for r in json.loads(CONFIRM_RUNS.read_text())["seeds"]}
    rows = []
    for seed in range(20):
        if seed in ran:
            r = ran[seed]
            rows.append({"seed": seed, "ran": True, "draws": r["warm_draws"], "before": r["before"],
                         "after": r["after"], "printed_min": r["printed_min"], "wall_s": r["wall_s"],
                         "today_after": today[seed]["after"], "today_wall_s": today[seed]["wall_s"]})
        else:
            r = today[seed]
            rows.append({"seed": seed, "ran": False, "draws": 1, "before": r["before"], "after": r["after"],
                         "printed_min": r["printed_min"], "wall_s": r["wall_s"], "today_after": r["after"],
                         "today_wall_s": r["wall_s"]})
    at = sum(r["before"] <= 0.40 and r["after"] >= round1.TARGET for r in rows)
    at_today = sum(r["before"] <= 0.40 and r["after"] >= round1.TARGET for r in today.values())
    lost = [r["seed"] for r in rows if r["today_after"] >= round1.TARGET > r["after"]]
    default = next(r for r in rows if r["seed"] == 1)
    return {"rows": rows, "at_target": at, "at_target_today": at_today, "lost": lost,
            "median": statistics.median(r["after"] for r in rows),
            "median_today": statistics.median(r["after"] for r in today.values()),
            "default_same": default["ran"] and default["after"] == today[1]["after"] and default["draws"] == 1,
            "probe_seconds": probe_seconds,
            "verdict": "adopt" if at > at_today and not lost else "keep today's"}


def short(flat: list[str]) -> str:
    """The check's described classes, short: "tens after 0, 10; hundreds after 10 (spread 0.06-0.16)"."""
    found = [re.match(r"the (\w+) digit after a column summing to (\d+) \(p [\d.]+, spread ([\d.]+)", f).groups()
             for f in flat]
    digits = {d: sorted(int(b) for dd, b, _ in found if dd == d) for d in ("tens", "hundreds")}
    spreads = sorted(float(s) for *_, s in found)
    return ("; ".join(f"{d} after {', '.join(map(str, bs))}" for d, bs in digits.items() if bs)
            + f" (spread {spreads[0]:.2f}-{spreads[-1]:.2f})")


def markdown(result: dict) -> str:
    pct = round1.pct
    scan, check = result["scan"], result["same_run_check"]
    lines = [f"* **Scan:** {len(scan['seeds'])} new study seeds ({scan['seeds'][0]}-{scan['seeds'][-1]}), warm "
             f"starts made as the study makes them; the check flags "
             + (", ".join(map(str, scan["flagged"])) if scan["flagged"] else "none") + ".",
             f"* **Checks:** on the 40 committed warm starts the check flags {result['committed_flags']['study']} "
             f"(study) and {result['committed_flags']['confirm']} (0-19), the reading's flat holes. `redraw` on study "
             f"seed {check['seed']}: {check['warm_steps']} warm-start steps, final {pct(check['after'])}; committed "
             f"{check['committed_warm_steps']} steps, {pct(check['committed_after'])}: "
             + ("the same run." if check["same"] else "**not the same run**."), "",
             "| study seed | flat classes at the first draw (the column below sums to) | `base` final | `redraw` final | warm starts drawn "
             "| `base` / `redraw` seconds (one thread, two jobs at a time) |", "|---|---|---|---|---|---|"]
    for r in result["study"]:
        base, redraw = r["base"], r["redraw"]
        cls = short(r["flat"]) if r["flat"] else "(the reading above) tens after 0, 10; hundreds after 10"
        seconds = f"{base['seconds'] if base['seconds'] is not None else '-'} / {redraw['seconds']}"
        lines.append(f"| {r['seed']} | {cls} | {pct(base['after'])} | {pct(redraw['after'])} | {redraw['warm_draws']} "
                     f"| {seconds} |")
    n = len(result["study"])
    at = {k: sum(r[k]["after"] >= round1.TARGET for r in result["study"]) for k in ("base", "redraw")}
    lines += ["", f"**Study: `redraw` puts {at['redraw']} of {n} flat-hole seeds at >= 80% against `base`'s "
              f"{at['base']} of {n}; the rule says: {result['verdict']}.**"]
    c = result.get("confirmation")
    if c:
        lines += ["", "Confirmation, seeds 0-19 (the README's command with `--redraw-flat 2`, two threads, one at a "
                  "time; seeds the check did not flag are today's committed rows, seed 1 run to check it):", "",
                  "| seed | warm starts drawn | before | final with `redraw` | final today | wall seconds (today) |",
                  "|---|---|---|---|---|---|"]
        for r in c["rows"]:
            if r["ran"]:
                final = pct(r["after"]) if r["after"] >= round1.TARGET else f"*{pct(r['after'])}*"
                today = pct(r["today_after"]) if r["today_after"] >= round1.TARGET else f"*{pct(r['today_after'])}*"
                lines.append(f"| {r['seed']} | {r['draws']} | {pct(r['before'])} | {final} | {today} "
                             f"| {r['wall_s']} ({r['today_wall_s']}) |")
        lines += ["", f"**Over 0-19: {c['at_target']} of 20 at >= 80% from <= 40% against today's "
                  f"{c['at_target_today']}; median {pct(c['median'])} against {pct(c['median_today'])}; today's "
                  f"passing seeds lost: {c['lost'] or 'none'}; seed 1 "
                  + ("is today's run" if c["default_same"] else "**differs from today's run**")
                  + f". The rule says: {c['verdict']}.**"]
        if c["probe_seconds"] is not None:
            lines.append(f"The check itself took {c['probe_seconds']:.2f} s on seed 1's warm start (median of three, "
                         f"two threads, the machine otherwise idle).")
    return "\n".join(lines)


def doc(check: bool) -> int:
    new = round1.replace_block(round1.PAGE.read_text(), "round10", markdown(json.loads(SUMMARY.read_text())))
    return round1.write_page(new, check, "research/quickstart-lift/round10.py")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="phase", required=True)
    r = sub.add_parser("run", help="the scan, then the study's runs (resumable)")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--until", default=None, help="HH:MM UTC: no job begins after it")
    sub.add_parser("flags", help="the check on the 40 committed warm starts (runs/lift10/flags.json)")
    rp = sub.add_parser("report", help=f"write {SUMMARY.relative_to(ROOT)}")
    rp.add_argument("--confirmation", action="store_true", help="add the confirmation (and time the check)")
    d = sub.add_parser("doc", help="the page's block, from the summary")
    d.add_argument("--check", action="store_true")
    j = sub.add_parser("job")
    j.add_argument("kind", choices=["warm", "base", "redraw"])
    j.add_argument("seed", type=int)
    args = p.parse_args(argv)
    if args.phase == "run":
        run(args.jobs, args.until)
    elif args.phase == "flags":
        (RUNS / "flags.json").write_text(json.dumps(committed_flags()))
    elif args.phase == "report":
        result = report(SUMMARY, args.confirmation)
        print(json.dumps({k: v for k, v in result.items() if k != "study"}, indent=1))
        for r in result["study"]:
            print(r["seed"], r["base"]["after"], "->", r["redraw"]["after"], r["redraw"]["warm_draws"], "draws")
    elif args.phase == "doc":
        return doc(args.check)
    elif args.phase == "job":
        job(args.kind, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
