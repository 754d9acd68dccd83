"""The pre-registered mechanism experiments of research/mechanisms/README.md: their arms, their tests, and every table.

    python3 research/mechanisms/mechanisms.py arms aggregation      # the --algos string of an experiment
    python3 research/mechanisms/mechanisms.py command mask          # the full compare commands (two processes, seeds split)
    python3 research/mechanisms/mechanisms.py power                 # the a-priori power table (from research/reading-search/data/*.json)
    python3 research/mechanisms/mechanisms.py report [--check]      # write (or check) the generated blocks of the page

Everything the protocol fixes is here, committed with the page before any run of the experiments: the arms
(compare entries), the shared settings, the seeds, and the tests (``TESTS``: which metric, which two arms,
which direction the prediction says, and the family each test is Holm-corrected in). The results come from
``minitepo compare`` summaries copied unedited into research/mechanisms/data/ (``aggregation.json``, ``mask.json``) and
from ``research/mechanisms/mechanism_gradients.py`` (``gradients.json``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from minitepo.lab.stats import (format_ci, holm, min_detectable_effect, min_detectable_effect_of, sd, t_mean_ci,
                                 welch_test)  # noqa: E402

PAGE = ROOT / "research" / "mechanisms" / "README.md"
DATA = ROOT / "research" / "mechanisms" / "data"
ALPHA, POWER = 0.05, 0.8
SEEDS = "1000-1007"
"""Confirmation seeds, 8 per arm; never used to choose anything. (The pilots used seeds 900-901.)"""
WARM_START = ("minitepo --threads 1 sft --task add_or_cot --settle-at 0.35 --settle-metric level/3 --settle-steps 0 "
              "--settle-check-near 0.5 --seed 1 --out runs/mech/add_or_cot-warmstart")
SHARED = ("--task add_or_cot --levels 3 --init runs/mech/add_or_cot-warmstart/checkpoint.pt --prompts 32 "
          "--group-size 8 --temperature 0.7 --lr 2e-4 --min-lr-frac 0.1 --eval-every 10 --target-accuracy 0.75")

# Every arm of an experiment shares the data recipe (no dynamic sampling in A; dynamic sampling in B, as TEPO
# ships), the shaping (no overlong shaping, no format bonus) and the KL (none to a reference).
EXPERIMENTS = {
    "aggregation": {
        "settings": SHARED + " --iterations 60 --minibatches 4 --epochs 1",
        "arms": {
            "A1": "dapo:dynamic_sampling=false+overlong_shaping=false",
            "A2": "dapo:dynamic_sampling=false+overlong_shaping=false+agg=seq-mean-token-mean",
            "A3": "tepo:beta_mask=0+dynamic_sampling=false",
            "A4": "tepo:beta_mask=0+dynamic_sampling=false+agg=seq-mean-token-mean",
        },
    },
    "mask": {
        "settings": SHARED + " --iterations 40 --minibatches 4 --epochs 2 --pass-k 4",
        "arms": {
            "B1": "tepo",
            "B2": "tepo:beta_mask=0",
            "B3": "tepo:mask_criterion=positive",
        },
    },
}
DROP_ORDER = ("B3", "A4", "A3")
"""If the runs cannot all finish in the session's compute, whole arms are dropped in this order (never seeds)."""

# (name, experiment, metric, arm, other arm, predicted sign of mean(arm) - mean(other): +1, -1, or 0 for "no
# difference", family for Holm, words). "long_right" is the share of held-out prompts answered right in the steps
# form: final_form_share_steps x final_form_acc_steps.
TESTS = (
    ("A-H1 token ratio", "aggregation", "long_right", "A1", "A2", +1, "A",
     "token-mean leads on long-form accuracy (token ratio)"),
    ("A-H1 TEPO ratio", "aggregation", "long_right", "A3", "A4", +1, "A",
     "token-mean leads on long-form accuracy (TEPO's ratio)"),
    ("A-H2 ratio", "aggregation", "final", "A3", "A1", 0, "A",
     "TEPO's sequence ratio and the token ratio train alike at token-mean (final accuracy)"),
    ("B-H1 entropy", "mask", "entropy_sampled_last", "B1", "B2", +1, "B",
     "the mask keeps the entropy over all samples higher"),
    ("B-H2 pass@4", "mask", "pass_at_k_final", "B1", "B2", +1, "B", "the mask keeps pass@4 higher"),
    ("B-H3 entropy condition", "mask", "acc_auc", "B1", "B3", +1, "B",
     "masking only entropy-falling tokens learns faster than masking every positive-advantage token"),
)
COLUMNS = {  # what each experiment's arms table reports, mean [95% t interval] over seeds
    "aggregation": (("final", "final accuracy"), ("acc_auc", "mean eval accuracy"),
                    ("iters_to_target_censored", "iterations to 75%"), ("long_right", "right in the steps form"),
                    ("final_form_share_steps", "steps share of answers"), ("steps_share_sampled_mean",
                                                                           "steps share sampled (run mean)"),
                    ("len_cv_first", "length CV in group, iteration 1"), ("len_cv_mean", "length CV (run mean)"),
                    ("entropy_sampled_last", "entropy, all samples"),
                    ("tokens_to_target_censored", "tokens sampled to 75%")),
    "mask": (("final", "final accuracy"), ("acc_auc", "mean eval accuracy"), ("pass_at_k_final", "final pass@4"),
             ("entropy_sampled_last", "entropy, all samples"), ("entropy_last", "entropy, trained rows"),
             ("approx_kl_later_mean", "approx KL, later steps (run mean)"),
             ("mask_later_mean", "mask fraction, later steps"), ("clip_later_mean", "clip fraction, later steps"),
             ("tokens_to_target_censored", "tokens sampled to 75%")),
}


def arms_string(experiment: str) -> str:
    return ",".join(EXPERIMENTS[experiment]["arms"].values())


def commands(experiment: str) -> list[str]:
    """Two compare processes, one per core, each with half the seeds, into one folder each; a third call with all
    seeds and --resume (after moving both halves' runs into one folder) writes the summary."""
    first, last = map(int, SEEDS.split("-"))
    half = (first + last) // 2
    base = f"minitepo --threads 1 compare {EXPERIMENTS[experiment]['settings']} --algos \"{arms_string(experiment)}\""
    return [f"{base} --seeds {first}-{half} --out runs/mech/{experiment}-lo --resume",
            f"{base} --seeds {half + 1}-{last} --out runs/mech/{experiment}-hi --resume",
            f"mkdir -p runs/mech/{experiment} && mv runs/mech/{experiment}-lo/*-seed* runs/mech/{experiment}-hi/*-seed* "
            f"runs/mech/{experiment}/ && {base} --seeds {SEEDS} --out runs/mech/{experiment} --resume"]


# ---- reading the summaries --------------------------------------------------------------------------------------

def load(experiment: str) -> dict | None:
    """{arm name: per-seed rows} of an experiment's committed compare summary, with ``long_right`` added; None when
    the summary is not committed yet."""
    path = DATA / f"{experiment}.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    by_entry = data["runs"]
    out = {}
    for arm, entry in EXPERIMENTS[experiment]["arms"].items():
        rows = by_entry.get(entry)
        if rows is None:
            continue  # an arm dropped under DROP_ORDER
        for row in rows:
            if row.get("final_form_share_steps") is not None:
                row["long_right"] = row["final_form_share_steps"] * row["final_form_acc_steps"]
        out[arm] = rows
    return {"arms": out, "readings": data.get("readings", {}), "config": data["config"]}


def values(rows: list[dict], key: str) -> list[float]:
    return [r[key] for r in rows if r.get(key) is not None]


def verdict(sign: int, test: dict, adjusted_p: float) -> str:
    """What a test says about its prediction, at ALPHA after Holm's correction."""
    significant = adjusted_p <= ALPHA
    if sign == 0:
        return "distinguishable: contradicts" if significant else "not distinguishable (no difference was predicted; that is not shown: read the interval)"
    if not significant:
        return "not distinguishable"
    return "supported" if (test["diff"] > 0) == (sign > 0) else "contradicted"


def test_rows() -> list[dict]:
    """Every pre-registered test whose data is committed: difference, Welch interval, p, Holm-adjusted p within its
    family, the smallest difference its seeds could detect at the family's first Holm level, and the verdict."""
    loaded = {name: load(name) for name in EXPERIMENTS}
    rows = []
    for name, experiment, metric, arm, other, sign, family, words in TESTS:
        data = loaded[experiment]
        if data is None or arm not in data["arms"] or other not in data["arms"]:
            continue
        a, b = values(data["arms"][arm], metric), values(data["arms"][other], metric)
        test = welch_test(a, b)
        if test is None:
            continue
        rows.append({"name": name, "family": family, "metric": metric, "arm": arm, "other": other, "sign": sign,
                     "words": words, "test": test, "a": a, "b": b})
    for family in {r["family"] for r in rows}:
        members = [r for r in rows if r["family"] == family]
        adjusted = holm({r["name"]: r["test"]["p"] for r in members})
        for r in members:
            r["adjusted_p"] = adjusted[r["name"]]
            r["mde"] = min_detectable_effect_of(r["a"], r["b"], alpha=ALPHA / len(members), power=POWER)
            r["verdict"] = verdict(r["sign"], r["test"], r["adjusted_p"])
    return rows


# ---- the generated blocks ---------------------------------------------------------------------------------------


def block_verdicts() -> str:
    """Every verdict of both rounds on one table, for the top of the page: round 1's tests (``test_rows``) and round
    2's (``round2.py``: its pilot's pick and its confirmatory tests, from data/round2-*.json)."""
    import round2  # research/mechanisms/round2.py, beside this file (it imports torch, so only here)

    lines = ["| round | test | what it asks | difference [95% Welch] | smallest detectable (80%, Holm level) | verdict |",
             "|---|---|---|---|---|---|"]
    for r in test_rows():
        t = r["test"]
        lines.append(f"| 1 | {r['name']} ({r['arm']} − {r['other']}) | {r['words']} | "
                     f"{format_ci((t['diff'], t['low'], t['high']))} | "
                     f"{'—' if r['mde'] is None else format(r['mde'], '.3g')} | **{r['verdict']}** |")
    pilot = json.loads((DATA / "round2-pilot.json").read_text())["summary"]
    if pilot["pick"]["a"] is None:
        lines.append("| 2 | A (aggregation) | does token-mean or per-sequence mean train differently while right "
                     "answers of very different lengths keep meeting? | — | — | **not run: the pilot found no regime "
                     "where lengths stay mixed (round2.md)** |")
    confirm = DATA / "round2-confirm.json"
    if confirm.is_file():
        result = round2.analyse(json.loads(confirm.read_text())["runs"])
        checks = result["checks"]
        held = checks["headroom_holds"] and checks["pressure_holds"]
        for t in result["tests"]:
            verdict = t["verdict"] if held else "void: a manipulation check failed (round2.md)"
            lines.append(f"| 2 | {t['test']} | {t['metric']}: {t['compares']} | "
                         f"{format_ci((t['diff'], t['low'], t['high']))} | {t['mde']:.3g} | **{verdict}** |")
    return "\n".join(lines)

def block_power() -> str:
    """The a-priori power table: with the per-seed spread already measured (the reading search's confirmation on
    add and countdown, research/reading-search/data/confirm-*.json), the smallest difference 8 seeds per arm detect at 80% power
    after Holm over a family of 3 tests, and the seeds per arm a 5-point accuracy difference would need."""
    lines = ["| measured on | metric | per-seed sd (median over 7 entries) | largest sd | smallest detectable, 8 seeds "
             "per arm, α = 0.05/3 (median sd) | (largest sd) | seeds per arm for 0.05 (median sd) |",
             "|---|---|---|---|---|---|---|"]
    for task in ("add", "countdown"):
        runs = json.loads((ROOT / "research" / "reading-search" / "data" / f"confirm-{task}.json").read_text())["runs"]
        for metric in ("final", "acc_auc", "entropy_min"):
            sds = sorted(sd(values(rows, metric)) for rows in runs.values())
            median, largest = sds[len(sds) // 2], sds[-1]
            mde = min_detectable_effect(median, 8, median, 8, alpha=ALPHA / 3, power=POWER)
            mde_max = min_detectable_effect(largest, 8, largest, 8, alpha=ALPHA / 3, power=POWER)
            need = next(n for n in range(2, 1000)
                        if min_detectable_effect(median, n, median, n, alpha=ALPHA / 3, power=POWER) <= 0.05)
            lines.append(f"| {task} | {metric} | {median:.3f} | {largest:.3f} | {mde:.3f} | {mde_max:.3f} | {need} |")
    return "\n".join(lines)


def block_arms(experiment: str) -> str:
    data = load(experiment)
    if data is None:
        return "(not run yet)"
    columns = COLUMNS[experiment]
    lines = ["| arm | what ran | n | " + " | ".join(words for _, words in columns) + " |",
             "|---" * (len(columns) + 3) + "|"]
    from minitepo.lab.rl_config import reading_label
    for arm, rows in data["arms"].items():
        entry = EXPERIMENTS[experiment]["arms"][arm]
        ran = reading_label(data["readings"][entry]) if entry in data["readings"] else entry
        cells = [format_ci(t_mean_ci(values(rows, key))) for key, _ in columns]
        lines.append(f"| {arm} | {ran} | {len(rows)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def block_tests() -> str:
    rows = test_rows()
    if not rows:
        return "(no experiment has run yet)"
    lines = ["| test | prediction | metric | arms | difference [95% Welch] | p | Holm p | smallest detectable "
             "(80% power, Holm level) | verdict |", "|---" * 9 + "|"]
    for r in rows:
        t = r["test"]
        lines.append(f"| {r['name']} | {r['words']} | {r['metric']} | {r['arm']} − {r['other']} | "
                     f"{format_ci((t['diff'], t['low'], t['high']))} | {t['p']:.2g} | {r['adjusted_p']:.2g} | "
                     f"{'—' if r['mde'] is None else format(r['mde'], '.3g')} | **{r['verdict']}** |")
    return "\n".join(lines)


def block_gradients() -> str:
    path = DATA / "gradients.json"
    if not path.is_file():
        return "(not measured yet)"
    data = json.loads(path.read_text())
    lines = ["| setting | ingredient | compared (a vs b) | optimizer steps (n) | ‖g_a − g_b‖ / ‖g_b‖: mean | median | "
             "largest | 1 − cos(g_a, g_b), mean |", "|---|---|---|---|---|---|---|---|"]
    for row in data["rows"]:
        lines.append(f"| {row['setting']} | {row['ingredient']} | {row['compared']} | {row['steps']} "
                     f"({row['n_steps']}) | {row['rel_change']:.3g} | {row['rel_change_median']:.3g} | "
                     f"{row['rel_change_max']:.3g} | {row['one_minus_cos']:.3g} |")
    return "\n".join(lines)


BLOCKS = {"verdicts": block_verdicts, "power": block_power, "aggregation-arms": lambda: block_arms("aggregation"),
          "mask-arms": lambda: block_arms("mask"), "tests": block_tests, "gradients": block_gradients}


def render(text: str) -> str:
    for name, make in BLOCKS.items():
        pattern = re.compile(rf"(<!-- BEGIN {name} -->\n).*?(<!-- END {name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"{PAGE.name} has no block {name!r}")
        text = pattern.sub(lambda m: m.group(1) + make() + "\n" + m.group(2), text)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    for what in ("arms", "command"):
        sub.add_parser(what).add_argument("experiment", choices=sorted(EXPERIMENTS))
    sub.add_parser("power")
    sub.add_parser("report").add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if args.what == "arms":
        print(arms_string(args.experiment))
    elif args.what == "command":
        print("\n".join(commands(args.experiment)))
    elif args.what == "power":
        print(block_power())
    else:
        text = PAGE.read_text()
        new = render(text)
        if args.check:
            if new != text:
                print(f"{PAGE} differs from what the summaries give: run python3 research/mechanisms/mechanisms.py report")
                return 1
            return 0
        PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
