"""Every table of research/reading-search/README.md and research/claims/README.md, computed from the committed compare summaries.

    python3 research/reading-search/search_report.py            # rewrite the generated blocks in the two pages
    python3 research/reading-search/search_report.py --check    # exit 1 if a page differs from what the summaries give

(The pages: research/reading-search/README.md, research/claims/README.md and the README's quickstart seed table.)
A generated block sits between ``<!-- BEGIN NAME -->`` and ``<!-- END NAME -->``; nothing between them is
typed by hand. The inputs are ``minitepo compare`` summaries copied unedited into research/reading-search/data/:
``select-a.json``, ``select-b.json``, ``select-ds.json`` (the selection on add_cot) and
``confirm-countdown.json``, ``confirm-add.json`` (the confirmation). The claim tests are those the protocol
fixed before the confirmation runs (research/reading-search/README.md): Welch t-tests, Holm-corrected across the family,
each with its minimum detectable effect (``minitepo.lab.stats.min_detectable_effect``).

The summaries name each entry by the ``--algos`` label it ran under, and a label means "these overrides on top of
the defaults of the day". The defaults changed after these runs (TEPO's clip became token_log and TEPO samples
dynamically), so every entry is shown by what ran: ``HISTORICAL_DEFAULTS`` below is the explicit record of the
defaults the runs were made under, ``what_ran`` resolves a recorded label with it, and ``today_entry`` writes the
``--algos`` entry that runs the same settings under today's defaults.

    python3 research/reading-search/search_report.py today "LABEL,LABEL,..."   # recorded labels -> today's entries
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "research" / "quickstart-lift"))  # quickstart_seeds: the README's seed table

import quickstart_seeds  # noqa: E402
import reading_search as rs  # noqa: E402

from minitepo.advantages import overlong_penalty  # noqa: E402
from minitepo.lab.compare import parse_entry  # noqa: E402
from minitepo.lab.rl_config import RLConfig  # noqa: E402
from minitepo.lab.stats import format_ci, holm, min_detectable_effect_of, t_mean_ci, welch_test  # noqa: E402
from toy_tasks import make_task  # noqa: E402

SEARCH = ROOT / "research" / "reading-search" / "data"
PAGES = (ROOT / "research" / "reading-search" / "README.md", ROOT / "research" / "claims" / "README.md", ROOT / "README.md")
TASKS = {"countdown": 0.3, "add": 0.6}      # confirmation tasks and their targets (the protocol's)
LEVELS = {"countdown": (4,), "add": (3,)}   # the confirmation's RL levels (the summaries' config)
CLAIMS = (("speed", "iters_to_target_censored", -1, "iterations to target (censored)"),
          ("stability", "unstable_evals", -1, "unstable evaluations"),
          ("entropy", "entropy_min", +1, "minimum entropy"),
          ("accuracy", "final", +1, "final accuracy"))   # (claim, metric, sign that favours TEPO, words)
ALPHA = 0.05

# --------------------------------------------------------------------------- what each recorded label ran

HISTORICAL_DEFAULTS = {
    # The defaults every summary in research/reading-search/data/ was made under: those of the commit that pre-registered the search,
    # up to the commit that adopted its selection (which changed TEPO's to token_log with dynamic sampling). A
    # recorded label's overrides go on top of these. Only the settings in which the entries differ are listed;
    # everything else (lr, steps, sampling, mask criterion's tolerance ...) was the same for all and is unchanged.
    "tepo": {"ratio_clip": "sequence", "eps_low": 0.2, "eps_high": 0.28, "delta_low": 0.4, "delta_high": 0.4,
             "beta_mask": 1.0, "mask_action": "kl", "mask_kl": "k3", "mask_criterion": "measured", "beta": 0.0,
             "agg": "token-mean", "dynamic_sampling": False, "overlong_shaping": False},
    "grpo": {"eps_low": 0.2, "eps_high": 0.2, "beta": 0.04, "kl_kind": "k3", "agg": "seq-mean-token-mean",
             "dynamic_sampling": False, "overlong_shaping": False},
    "dapo": {"eps_low": 0.2, "eps_high": 0.28, "beta": 0.0, "agg": "token-mean", "dynamic_sampling": True,
             "overlong_shaping": True},
}
TRAINER_SWITCHES = ("dynamic_sampling", "overlong_shaping")   # the data recipe: RLConfig's, not the loss's


def what_ran(label: str) -> dict:
    """The settings a recorded label ran: its overrides on ``HISTORICAL_DEFAULTS``, plus ``algo``."""
    entry = parse_entry(label)
    if entry.algo not in HISTORICAL_DEFAULTS:
        raise ValueError(f"{label!r}: no recorded defaults for {entry.algo!r}; known: {', '.join(HISTORICAL_DEFAULTS)}")
    ran = dict(HISTORICAL_DEFAULTS[entry.algo])
    for key, value in entry.overrides:
        if key not in ran:
            raise ValueError(f"{label!r}: {key} is not among the recorded settings of {entry.algo}: {', '.join(ran)}")
        ran[key] = float(value) if isinstance(ran[key], float) else value
    return {"algo": entry.algo, **ran}


def _relevant(ran: dict) -> list[str]:
    """The settings that act: TEPO's sequence clip reads eps_low/eps_high, its token_log clip delta_low/delta_high."""
    keys = [k for k in ran if k != "algo"]
    if ran["algo"] == "tepo":
        unused = ("delta_low", "delta_high") if ran["ratio_clip"] == "sequence" else ("eps_low", "eps_high")
        keys = [k for k in keys if k not in unused]
    return keys


def today_settings(entry: str) -> dict:
    """What an ``--algos`` entry runs under today's defaults (read from RLConfig and the objectives), in the
    settings of ``HISTORICAL_DEFAULTS``."""
    e = parse_entry(entry)
    cfg = RLConfig(algo=e.algo, init="warmstart/checkpoint.pt", out="run", **dict(e.overrides))
    out = {"algo": e.algo}
    for key in HISTORICAL_DEFAULTS[e.algo]:
        out[key] = (cfg.uses_dynamic_sampling if key == "dynamic_sampling" else
                    cfg.uses_overlong_shaping if key == "overlong_shaping" else cfg.loss_default(key))
    return out


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


def today_entry(label: str) -> str:
    """The ``--algos`` entry that runs, under today's defaults, what ``label`` ran: an override for every relevant
    setting whose default has moved (added in ``HISTORICAL_DEFAULTS``' order, each read after the ones before)."""
    ran = what_ran(label)
    overrides: list[tuple[str, object]] = []
    for key in _relevant(ran):
        entry = ran["algo"] + (":" + "+".join(f"{k}={_text(v)}" for k, v in overrides) if overrides else "")
        if today_settings(entry)[key] != ran[key]:
            overrides.append((key, ran[key]))
    return ran["algo"] + (":" + "+".join(f"{k}={_text(v)}" for k, v in overrides) if overrides else "")


def _num(v: float) -> str:
    return f"{v:.0e}".replace("e-0", "e-") if 0 < v < 1e-3 else f"{v:g}"


def _clip(ran: dict) -> str:
    if ran["algo"] != "tepo":
        return f"token ratio {ran['eps_low']:g}/{ran['eps_high']:g}"
    if ran["ratio_clip"] == "token_log":
        return (f"token_log ±{ran['delta_low']:g}" if ran["delta_low"] == ran["delta_high"]
                else f"token_log -{ran['delta_low']:g}/+{ran['delta_high']:g}")
    return f"s_i {_num(ran['eps_low'])}/{_num(ran['eps_high'])}"


def _mask(ran: dict) -> str:
    if ran["algo"] != "tepo":
        return "—"
    if ran["mask_action"] == "gate":
        return "gate" if ran["beta_mask"] > 0 else "none"
    return "none" if ran["beta_mask"] == 0 else f"{ran['mask_kl']} β_M {ran['beta_mask']:g}"


def _ref_kl(ran: dict) -> str:
    return f"β {ran['beta']:g} ({ran.get('kl_kind', 'k3')}) to the warm start" if ran["beta"] > 0 else "none"


def ran_label(label: str) -> str:
    """A recorded label, named by what ran: objective, clip, mask (TEPO), data recipe, and, where they differ from
    the others', reference KL and aggregation."""
    ran = what_ran(label)
    parts = [ran["algo"].upper(), _clip(ran)]
    if ran["algo"] == "tepo":
        mask = _mask(ran)
        parts.append("no mask" if mask == "none" else f"{mask} mask" if mask == "gate" else f"mask {mask}")
    if ran["beta"] > 0:
        parts.append(f"KL {_ref_kl(ran)}")
    if ran["agg"] != "token-mean":
        parts.append(ran["agg"])
    parts.append("DS " + ("on" if ran["dynamic_sampling"] else "off"))
    if ran["overlong_shaping"]:
        parts.append("overlong shaping")
    return ", ".join(parts)


def recorded_labels() -> list[str]:
    """Every entry label in the committed summaries, selection first, in their order."""
    labels = list(selection_runs())
    for task in TASKS:
        if (SEARCH / f"confirm-{task}.json").is_file():
            labels += list(confirmation(task))
    return list(dict.fromkeys(labels))


def block_labels() -> str:
    lines = ["| recorded label (the summaries') | what ran | ratio clip | TEPO mask | dynamic sampling | overlong shaping "
             "| reference KL | aggregation | the same under today's defaults (`--algos`) |", "|---" * 9 + "|"]
    for label in recorded_labels():
        ran = what_ran(label)
        lines.append(f"| `{label}` | {ran_label(label)} | {_clip(ran)} | {_mask(ran)} | "
                     f"{'on' if ran['dynamic_sampling'] else 'off'} | {'on' if ran['overlong_shaping'] else 'off'} | "
                     f"{_ref_kl(ran)} | {ran['agg']} | `{today_entry(label)}` |")
    return "\n".join(lines)


def block_commands_today() -> str:
    """The confirmation's compare commands, with every entry written for today's defaults."""
    lines = ["```bash"]
    for task, target in TASKS.items():
        algos = ",".join(today_entry(label) for label in confirmation(task))
        lines += [f"minitepo --threads 1 compare --task {task} --algos \"{algos}\" \\",
                  f"    --seeds 20-24 --iterations 100 --target-accuracy {target:g} "
                  f"--out runs/search/confirm-{task} --resume"]
    return "\n".join(lines + ["```"])


# --------------------------------------------------------------------------- the summaries


def selection_runs() -> dict:
    return rs.load([str(SEARCH / f"select-{p}.json") for p in ("a", "b", "ds") if (SEARCH / f"select-{p}.json").is_file()])


def confirmation(task: str) -> dict:
    return json.loads((SEARCH / f"confirm-{task}.json").read_text())["runs"]


def matched_dapo(selected: str) -> str:
    return "dapo" if rs.describe(selected)["ds"] else "dapo:dynamic_sampling=false"


def values(rows: list[dict], key: str) -> list[float]:
    return [r[key] for r in rows if r.get(key) is not None]


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def block_selection() -> str:
    runs = selection_runs()
    name, vetoed = rs.selected(runs)
    lines = ["| rank | cell as recorded | the same under today's defaults | clip | mask | dyn. sampling | switches | seeds "
             "| AUC (mean eval acc) | final acc (per seed) | seeds below start | max unstable evals | vetoed |",
             "|---" * 13 + "|"]
    for k, (cell, s) in enumerate(rs.rank(runs), 1):
        d = rs.describe(cell)
        finals = ", ".join(f"{f:.3f}" for f in s["finals"])
        lines.append(f"| {k} | `{cell}` | `{today_entry(cell)}` | {d['clip']} | {d['mask']} | {'on' if d['ds'] else 'off'} "
                     f"| {d['switches']} | {','.join(map(str, s['seeds']))} | {s['auc']:.3f} | {s['final']:.3f} ({finals}) "
                     f"| {s['below_start']} | {s['max_unstable']} | {'yes' if s['vetoed'] else 'no'} |")
    return ("\n".join(lines) + f"\n\n**Selected: `{name}`** as recorded, that is {ran_label(name)} (today's `"
            f"{today_entry(name)}`)" + (" (every cell was vetoed; the best is reported anyway)" if vetoed else "") + ".")


def block_selected_summary() -> str:
    runs = selection_runs()
    name, vetoed = rs.selected(runs)
    d, sc = rs.describe(name), rs.score(runs[name])
    first = rs.score(runs["tepo"])
    return (f"The rule selected **`{name}`** as recorded (today's `{today_entry(name)}`)"
            + (" (every cell was vetoed; the best by AUC is shown)" if vetoed else "")
            + f": ratio clip {d['clip']}, mask {d['mask']} (criterion `{d['criterion']}`), dynamic sampling "
            f"{'on' if d['ds'] else 'off'}. On `add_cot` (seeds {', '.join(map(str, sc['seeds']))}) its mean "
            f"held-out accuracy over the run was {sc['auc']:.3f} and it ended at {sc['final']:.3f}; the first reading "
            f"(recorded as `tepo`: {ran_label('tepo')}; today's `{today_entry('tepo')}`) had {first['auc']:.3f} and "
            f"{first['final']:.3f}. The full selection table is in "
            f"[`reading-search`](../reading-search/README.md#selection-add_cot-seeds-10-12).")


def block_compute_time() -> str:
    """How long the selection's runs took (training seconds, evaluations excluded), against the protocol's guess."""
    runs = selection_runs()
    per_run = [r["train_seconds"] / 60 for rows in runs.values() for r in rows]
    per_cell = [mean([r["train_seconds"] / 60 for r in rows]) for rows in runs.values()]
    return (f"*(Note added after the runs: the estimate above was wrong. The {len(per_run)} `add_cot` runs took "
            f"{min(per_run):.1f}-{max(per_run):.1f} minutes of training each, evaluations excluded; the cells' means "
            f"over their seeds ranged over {min(per_cell):.1f}-{max(per_cell):.1f} minutes.)*")


def block_gate() -> str:
    """Where the gate ranks among the masks, per clip, by AUC (ties: within the rule's own margin, rs.TIE)."""
    runs = selection_runs()
    out = []
    for clip in rs.CLIPS:
        aucs = {d["mask"]: rs.score(rows)["auc"] for cell, rows in runs.items()
                for d in [rs.describe(cell)] if d["clip"] == clip and not d["ds"]}
        others = {m: a for m, a in aucs.items() if m != "gate"}
        if "gate" not in aucs or not others:
            continue
        worst = min(others, key=others.get)
        if aucs["gate"] < others[worst] - rs.TIE:
            out.append(f"under {clip} the gate had the lowest AUC ({aucs['gate']:.3f}; next lowest {worst}, "
                       f"{others[worst]:.3f})")
        else:
            out.append(f"under {clip} the gate tied with {'no mask' if worst == 'none' else worst} ({aucs['gate']:.3f} "
                       f"against {others[worst]:.3f}, within the rule's tie margin of {rs.TIE:g})")
    return "; ".join(out) + "." if out else ""


def block_warm_starts() -> str:
    """The confirmation warm starts' held-out accuracy at the start of RL (the summaries' ``start``)."""
    parts = []
    for task in TASKS:
        starts = {r["start"] for rows in confirmation(task).values() for r in rows}
        level = LEVELS[task][0]
        what = f"{level}-number puzzles" if task == "countdown" else f"{level}-digit sums"
        parts.append(f"`{task}` held {'/'.join(f'{s:.1%}' for s in sorted(starts))} on {what}")
    return ("its warm starts were the protocol's (`compare`'s recipe, seed 1), trained on this project's CPU; at the "
            "start of RL (iteration 0, the RL's held-out greedy evaluation, the same in every run) " + " and ".join(parts))


EXAMPLE = {"countdown": ("3,5,7,8:30=", "(8-5)*(7+3)")}   # a correct answer as long as the longest reference one


def block_overlong() -> str:
    """What DAPO's overlong shaping does to correct answers on each confirmation task (the task's length limit)."""
    import torch

    from minitepo.tokenizer import EOS, Tokenizer

    out = []
    for task in TASKS:
        t = make_task(task, levels=LEVELS[task])
        max_len, cache = t.max_new_tokens, max(1, t.max_new_tokens // 4)
        longest = max(t.max_answer_length(level) for level in LEVELS[task]) + 1   # answer + EOS
        lengths = list(range(max_len - cache + 1, max_len + 1))
        pen = overlong_penalty(torch.tensor(lengths), max_len, cache).tolist()
        lost = ", ".join(f"{-p:.2f} at {n}" for n, p in zip(lengths, pen))
        text = (f"on `{task}` (L_max {max_len} tokens with EOS, L_c {cache}) a response loses {lost} tokens of its "
                f"reward; the longest reference answer is {longest} tokens with EOS, so ")
        if longest > max_len - cache:
            prompt, answer = EXAMPLE[task]
            reward, _ = t.reward(prompt, answer + EOS)
            n = len(Tokenizer().encode(answer)) + 1
            shaped = reward + float(overlong_penalty(torch.tensor([n]), max_len, cache)[0])
            text += (f"a correct answer of that length is shaped down: `{answer}` for `{prompt}` ({n} tokens with EOS) "
                     f"is rewarded {reward:g} by the task and {shaped:.2f} by DAPO's shaping")
        else:
            text += "no correct answer of reference length is shaped"
        out.append(text)
    return "; ".join(out) + "."


def confirmation_table(task: str) -> str:
    runs = confirmation(task)
    t = f"{TASKS[task]:.0%}"
    cols = (("iters_to_target_censored", f"iterations to {t} (censored)"),
            ("prompts_to_target_censored", f"prompts to {t} (censored)"), ("final", "final acc"),
            ("acc_auc", "mean eval acc"), ("entropy_min", "min entropy (trained rows)"),
            ("unstable_evals", "unstable evals"))
    lines = ["| what ran (recorded label: the table above) | reached | " + " | ".join(c for _, c in cols) + " |",
             "|---" * (len(cols) + 2) + "|"]
    selected, _ = rs.selected(selection_runs())
    for label, rows in runs.items():
        reached = sum(r["iters_to_target"] is not None for r in rows)
        cells = [format_ci(t_mean_ci(values(rows, key))) for key, _ in cols]
        name = ran_label(label) + (" **(S)**" if label == selected else "")
        lines.append(f"| {name} | {reached}/{len(rows)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the claim tests


def _vacuous(a: list[float], b: list[float]) -> bool:
    """Every run of both entries has the same value: the test can say nothing."""
    return len(set(a) | set(b)) == 1


def _entropy_row_sets_differ(selected: str, baseline: str) -> bool:
    """charts/entropy averages over the trained rows: with dynamic sampling only the groups with mixed answers."""
    return what_ran(selected)["dynamic_sampling"] != what_ran(baseline)["dynamic_sampling"]


def entropy_drop(rows: list[dict]) -> list[float]:
    """Each run's own fall in entropy: its first iteration's minus its lowest (both on the same kind of rows)."""
    return [r["entropy_start"] - r["entropy_min"] for r in rows]


def claim_tests(selected: str) -> list[dict]:
    tests = []
    for task in TASKS:
        runs = confirmation(task)
        for baseline in ("grpo", matched_dapo(selected)):
            for claim, key, sign, words in CLAIMS:
                a, b = values(runs[selected], key), values(runs[baseline], key)
                tests.append({"task": task, "baseline": baseline, "claim": claim, "words": words, "sign": sign,
                              "test": welch_test(a, b), "name": f"{task}/{baseline}/{claim}", "a": a, "b": b})
    adjusted = holm({t["name"]: t["test"]["p"] for t in tests if t["test"] is not None})
    alpha_family = ALPHA / len(tests)
    for t in tests:
        t["p_holm"] = adjusted.get(t["name"])
        if t["test"] is None or t["p_holm"] > ALPHA:
            t["verdict"] = "not distinguishable"
        else:
            t["verdict"] = "supported" if t["test"]["diff"] * t["sign"] > 0 else "contradicted"
        t["mde"] = min_detectable_effect_of(t["a"], t["b"], alpha=alpha_family) if len(t["a"]) > 1 and len(t["b"]) > 1 else None
        t["baseline_mean"] = mean(t["b"]) if t["b"] else None
        t["note"] = ""
        if _vacuous(t["a"], t["b"]):
            t["note"] = f"vacuous: every run of both is {t['a'][0]:g}"
        elif t["claim"] == "entropy" and _entropy_row_sets_differ(selected, t["baseline"]):
            rows_s, rows_b = confirmation(t["task"])[selected], confirmation(t["task"])[t["baseline"]]
            if mean(entropy_drop(rows_s)) <= mean(entropy_drop(rows_b)):
                t["note"] = "trained-rows artifact: the gap was there at iteration 1 (below)"
            else:
                t["note"] = "different rows, but S's own drop is larger; tests GRPO's KL to the warm start (below)"
    return tests


def _mde_cells(t: dict) -> tuple[str, str]:
    if t["mde"] is None:
        return "— (no spread)", "—"
    rel = f"{t['mde'] / abs(t['baseline_mean']):.0%}" if t["baseline_mean"] else "—"
    return f"{t['mde']:.3g}", rel


def block_claims() -> str:
    selected, _ = rs.selected(selection_runs())
    tests = claim_tests(selected)
    n = len(tests)
    lines = [f"| task | claim | S − baseline, metric | baseline (what ran) | Δ [95% Welch interval] | p "
             f"| p (Holm, {n} tests) "
             f"| verdict | MDE (80% power, α {ALPHA:g}/{n}) | MDE / baseline mean | note |", "|---" * 11 + "|"]
    for t in tests:
        w = t["test"]
        diff = "—" if w is None else format_ci((w["diff"], w["low"], w["high"]))
        p = "—" if w is None else f"{w['p']:.2g}"
        ph = "—" if t["p_holm"] is None else f"{t['p_holm']:.2g}"
        m, rel = _mde_cells(t)
        lines.append(f"| {t['task']} | {t['claim']} | {t['words']} | {ran_label(t['baseline'])} | {diff} | {p} | {ph} | "
                     f"{t['verdict']} | {m} | {rel} | {t['note'] or '—'} |")
    lines += ["", "| claim | supported on | contradicted on | overall (the protocol's rule) | marked |",
              "|---|---|---|---|---|"]
    for claim, *_ in CLAIMS:
        mine = [t for t in tests if t["claim"] == claim]
        sup = [f"{t['task']} vs {t['baseline'].split(':')[0].upper()}" for t in mine if t["verdict"] == "supported"]
        con = [f"{t['task']} vs {t['baseline'].split(':')[0].upper()}" for t in mine if t["verdict"] == "contradicted"]
        overall = "contradicted" if con and not sup else "supported" if sup and not con else (
            "mixed" if sup and con else "not distinguishable")
        marked = [f"{t['task']} vs {t['baseline'].split(':')[0].upper()}: {t['note'].split(':')[0]}" for t in mine
                  if t["note"] and not t["note"].startswith("vacuous")]
        if all(t["note"].startswith("vacuous") for t in mine):
            marked = ["all four tests vacuous"]
        lines.append(f"| {claim} | {', '.join(sup) or '—'} | {', '.join(con) or '—'} | {overall} | "
                     f"{'; '.join(marked) or '—'} |")
    return "\n".join(lines)


def block_speed_mde() -> str:
    """The smallest speed effect the claim tests could detect, as a share of the baselines' means."""
    selected, _ = rs.selected(selection_runs())
    tests = [t for t in claim_tests(selected) if t["claim"] == "speed"]
    rel = [t["mde"] / t["baseline_mean"] for t in tests]
    each = ", ".join(f"{t['task']} vs {t['baseline'].split(':')[0].upper()} {t['mde']:.0f} of {t['baseline_mean']:.0f}"
                     for t in tests)
    return (f"With five seeds against five, the smallest difference in iterations to target that the speed tests "
            f"could detect with 80% power after the Holm correction was {min(rel):.0%}-{max(rel):.0%} of the "
            f"baselines' means ({each} iterations). The paper's \"about 50% less convergence time\" could "
            f"therefore not have passed these tests "
            f"even if it were true here.")


def prompt_tests(selected: str) -> list[dict]:
    """Sampled prompts to target (censored), S against each baseline of the claim tests: added after the review,
    so not part of the pre-registered family; Holm-corrected among themselves."""
    tests = []
    for task in TASKS:
        runs = confirmation(task)
        for baseline in ("grpo", matched_dapo(selected)):
            a, b = values(runs[selected], "prompts_to_target_censored"), values(runs[baseline], "prompts_to_target_censored")
            censored = sum(r["iters_to_target"] is None for r in runs[selected] + runs[baseline])
            tests.append({"task": task, "baseline": baseline, "a": a, "b": b, "test": welch_test(a, b),
                          "censored": censored, "name": f"{task}/{baseline}"})
    adjusted = holm({t["name"]: t["test"]["p"] for t in tests})
    for t in tests:
        t["p_holm"] = adjusted[t["name"]]
        t["mde"] = min_detectable_effect_of(t["a"], t["b"], alpha=ALPHA / len(tests))
    return tests


def block_prompts() -> str:
    selected, _ = rs.selected(selection_runs())
    tests = prompt_tests(selected)
    n = len(tests)
    lines = [f"| task | baseline (what ran) | S: prompts to target | baseline | S − baseline [95% Welch interval] | p "
             f"| p (Holm, {n} tests) | MDE (80% power, α {ALPHA:g}/{n}) | runs censored |", "|---" * 9 + "|"]
    for t in tests:
        w = t["test"]
        lines.append(f"| {t['task']} | {ran_label(t['baseline'])} | {format_ci(t_mean_ci(t['a']))} | "
                     f"{format_ci(t_mean_ci(t['b']))} | {format_ci((w['diff'], w['low'], w['high']))} | {w['p']:.2g} | "
                     f"{t['p_holm']:.2g} | {t['mde']:.3g} | {t['censored']} of {len(t['a']) + len(t['b'])} |")
    ratios = "; ".join(f"on `{task}` {mean(t['a']) / mean(t['b']):.2f} times GRPO's and "
                       f"{mean(u['a']) / mean(u['b']):.2f} times DAPO's"
                       for task in TASKS for t in tests for u in tests
                       if t["task"] == u["task"] == task and t["baseline"] == "grpo" and u["baseline"] != "grpo")
    return "\n".join(lines) + f"\n\nS's mean prompts to target were {ratios}."


def entropy_rows(selected: str) -> list[dict]:
    """S against each baseline of the claim tests, entropy as the summaries measured it (trained rows)."""
    out = []
    for task in TASKS:
        runs = confirmation(task)
        for baseline in ("grpo", matched_dapo(selected)):
            s, b = runs[selected], runs[baseline]
            start_s, start_b = mean(values(s, "entropy_start")), mean(values(b, "entropy_start"))
            min_s, min_b = mean(values(s, "entropy_min")), mean(values(b, "entropy_min"))
            out.append({"task": task, "baseline": baseline, "start_s": start_s, "start_b": start_b,
                        "offset": start_s - start_b, "min_s": min_s, "min_b": min_b, "gap": min_s - min_b,
                        "drop_s": start_s - min_s, "drop_b": start_b - min_b,
                        "drop_test": welch_test(entropy_drop(s), entropy_drop(b)),
                        "rows_differ": _entropy_row_sets_differ(selected, baseline)})
    return out


def shared_first_iteration(task: str) -> dict:
    """Per data recipe (dynamic sampling off / on): whether every entry with it logged the same first-iteration
    entropy on every seed (same warm start, same seed, so the same first samples)."""
    runs = confirmation(task)
    out = {}
    for ds in (False, True):
        seqs = {tuple(round(r["entropy_start"], 6) for r in rows) for label, rows in runs.items()
                if what_ran(label)["dynamic_sampling"] == ds}
        out[ds] = len(seqs) == 1
    return out


def block_entropy_rows() -> str:
    selected, _ = rs.selected(selection_runs())
    lines = ["| task | baseline (what ran) | trained rows | iteration 1: S | baseline | S − baseline | minimum: S | baseline "
             "| S − baseline | own drop: S | baseline | S − baseline [95% Welch interval] (p) |", "|---" * 12 + "|"]
    for e in entropy_rows(selected):
        w = e["drop_test"]
        rows = "differ (DS on/off)" if e["rows_differ"] else "same kind"
        lines.append(f"| {e['task']} | {ran_label(e['baseline'])} | {rows} "
                     f"| {e['start_s']:.3f} | {e['start_b']:.3f} | {e['offset']:+.3f} | {e['min_s']:.3f} | {e['min_b']:.3f} "
                     f"| {e['gap']:+.3f} | {e['drop_s']:.3f} | {e['drop_b']:.3f} | "
                     f"{format_ci((w['diff'], w['low'], w['high']))} (p {w['p']:.2g}) |")
    same = all(all(shared_first_iteration(task).values()) for task in TASKS)
    return "\n".join(lines) + ("\n\nEvery entry with the same data recipe logged the same first-iteration entropy on "
                               "every seed, to six decimals" if same else "") + "."


def block_entropy_verdicts() -> str:
    """The two entropy verdicts against GRPO, read with the first iteration's offset."""
    selected, _ = rs.selected(selection_runs())
    rows = {e["task"]: e for e in entropy_rows(selected) if e["baseline"] == "grpo"}
    out = []
    for task, e in rows.items():
        if e["drop_s"] <= e["drop_b"]:
            out.append(f"* **`{task}`: the verdict is the trained-rows artifact.** S already read {-e['offset']:.3f} "
                       f"below GRPO at iteration 1, before any update, from the same warm start and seeds; the gap at "
                       f"the minimum is {-e['gap']:.3f}, and S's own entropy fell no more than GRPO's "
                       f"({e['drop_s']:.3f} against {e['drop_b']:.3f}, p {e['drop_test']['p']:.2g}). Nothing here says "
                       f"S lost more entropy.")
        else:
            out.append(f"* **`{task}`: the verdict stands, with a caveat.** The gap at the minimum ({-e['gap']:.3f}) is "
                       f"far larger than the offset at iteration 1 ({-e['offset']:.3f}), and S's own entropy fell "
                       f"{e['drop_s']:.3f} against GRPO's {e['drop_b']:.3f} (p {e['drop_test']['p']:.2g}). But GRPO differs from S in its KL to the "
                       f"warm start, its aggregation and its data recipe, so this contrast tests GRPO's KL (with "
                       f"the rest of its recipe), not TEPO's loss.")
    return "\n".join(out)


def block_descriptive() -> str:
    """S against today's default TEPO and against S with its mask flipped, unadjusted (descriptions)."""
    selected, _ = rs.selected(selection_runs())
    others = [e for e in (rs._flip_mask(selected), "tepo", rs._flip_ds(selected)) if e != selected]
    keys = (("iters_to_target_censored", "iterations to target (censored)"),
            ("prompts_to_target_censored", "prompts to target (censored)"), ("final", "final acc"),
            ("entropy_min", "min entropy"), ("unstable_evals", "unstable evals"))
    lines = ["| task | S − entry (what ran) | " + " | ".join(f"Δ {w}" for _, w in keys) + " |",
             "|---" * (len(keys) + 2) + "|"]
    for task in TASKS:
        runs = confirmation(task)
        for other in dict.fromkeys(others):
            cells = []
            for key, _ in keys:
                w = welch_test(values(runs[selected], key), values(runs[other], key))
                cells.append("—" if w is None else format_ci((w["diff"], w["low"], w["high"])) + f" (p {w['p']:.2g})")
            lines.append(f"| {task} | {ran_label(other)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def blocks() -> dict:
    out = {}
    if selection_runs():
        out["selection"] = block_selection()
        out["selected-summary"] = block_selected_summary()
        if all("train_seconds" in r for rows in selection_runs().values() for r in rows):
            out["compute-time"] = block_compute_time()
        if block_gate():
            out["gate"] = block_gate()
    for task in TASKS:
        if (SEARCH / f"confirm-{task}.json").is_file():
            out[f"confirm-{task}"] = confirmation_table(task)
    # the README's seed table: the latest run of today's command on seeds 0-19, nothing else running, which is the
    # sixth round's confirmation in research/quickstart-lift/README.md (earlier tables: this file's history)
    seeds_record = ROOT / "research" / "quickstart-lift" / "data" / "confirm-round6.json"
    if seeds_record.is_file():
        out["quickstart-seeds"] = quickstart_seeds.table(json.loads(seeds_record.read_text())["seeds"])
    if all((SEARCH / f"confirm-{task}.json").is_file() for task in TASKS):
        out["labels"] = block_labels()
        out["commands-today"] = block_commands_today()
        out["warm-starts"] = block_warm_starts()
        out["overlong"] = block_overlong()
        out["claims"] = block_claims()
        out["speed-mde"] = block_speed_mde()
        out["prompts"] = block_prompts()
        out["entropy-rows"] = block_entropy_rows()
        out["entropy-verdicts"] = block_entropy_verdicts()
        out["descriptive"] = block_descriptive()
    return out


def render(text: str, generated: dict) -> str:
    def fill(match):
        name = match.group(1)
        if name not in generated:   # its summaries are not there yet: leave the block as it is
            return match.group(0)
        return f"<!-- BEGIN {name} -->\n{generated[name]}\n<!-- END {name} -->"
    return re.sub(r"<!-- BEGIN ([\w-]+) -->.*?<!-- END \1 -->", fill, text, flags=re.S)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", nargs="?", choices=("today",), help="today LABELS: print today's entries for recorded labels")
    ap.add_argument("labels", nargs="?", help="comma-separated recorded labels (with 'today')")
    ap.add_argument("--check", action="store_true", help="only check that the pages match the summaries")
    args = ap.parse_args(argv)
    if args.what == "today":
        print(",".join(today_entry(label) for label in (args.labels or "").split(",") if label.strip()))
        return 0
    generated = blocks()
    stale = []
    for page in PAGES:
        if not page.is_file():
            continue
        text = page.read_text()
        new = render(text, generated)
        if new != text:
            stale.append(str(page.relative_to(ROOT)))
            if not args.check:
                page.write_text(new)
    if args.check and stale:
        print(f"out of date with research/reading-search/data/: {', '.join(stale)}; run python3 research/reading-search/search_report.py")
        return 1
    print(("checked: " if args.check else "wrote: ") + ", ".join(str(p.relative_to(ROOT)) for p in PAGES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
