"""Plots of runs' metrics (matplotlib, PNG, no screen needed).

``plot_runs`` draws the quantities worth watching in RL — held-out accuracy, mean reward, policy
entropy and, where present, TEPO's mask fraction and the clip fraction — one line per run,
against the iteration or against training seconds. "The loss means nothing": watch the reward and
the held-out accuracy.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure  # a Figure draws to a file without pyplot, so no display backend is touched

from minitepo.lab.runs import read_metrics

PANELS = (
    ("eval/greedy_acc/all", "held-out greedy accuracy"),
    ("charts/reward_mean", "mean reward"),
    ("charts/entropy_sampled", "policy entropy, all samples (nats/token)"),
    ("charts/entropy", "policy entropy, trained rows (nats/token)"),   # metrics written before entropy_sampled
    ("tepo/mask_frac", "TEPO KL-mask fraction"),
    ("losses/clip_frac", "clip fraction"),
    ("losses/sft", "supervised loss"),
)
X_KEYS = {"step": ("step", "iteration"), "seconds": ("time/train_s", "training seconds")}


def run_label(run_dir: Path) -> str:
    """A run's legend label: its folder name (compare names folders ``algo-seedN``)."""
    return run_dir.name


def series(records: list[dict], key: str, x: str) -> tuple[list[float], list[float]]:
    """(x, y) points of ``key`` in a run's records, skipping records that lack either."""
    x_key = X_KEYS[x][0]
    xs, ys = [], []
    for r in records:
        if key in r and x_key in r and isinstance(r[key], (int, float)):
            xs.append(r[x_key])
            ys.append(r[key])
    return xs, ys


def plot_runs(run_dirs, out, x: str = "step", keys=None, title: str | None = None) -> Path:
    """Draw every panel that at least one run has data for; returns the PNG path."""
    if x not in X_KEYS:
        raise ValueError(f"x must be one of {', '.join(X_KEYS)}, got {x!r}")
    runs = [(run_label(Path(d)), read_metrics(d)) for d in run_dirs]
    wanted = [p for p in PANELS if keys is None or p[0] in keys]
    panels = [(k, t) for k, t in wanted if any(series(recs, k, x)[0] for _, recs in runs)]
    if not panels:
        raise ValueError(f"none of {', '.join(k for k, _ in wanted)} were logged in {', '.join(map(str, run_dirs))}")
    fig = Figure(figsize=(4.2 * len(panels), 3.4))
    axes = fig.subplots(1, len(panels), squeeze=False)
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (key, panel_title) in zip(axes[0], panels):
        for index, (label, records) in enumerate(runs):
            xs, ys = series(records, key, x)
            if xs:  # a run keeps its colour in every panel, even where other runs have no data
                ax.plot(xs, ys, label=label, color=colors[index % len(colors)], marker="." if len(xs) < 40 else None)
        ax.set_title(panel_title)
        ax.set_xlabel(X_KEYS[x][1])
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    if title:
        fig.suptitle(title)
    return save_figure(fig, out)


def _seed_curve(records: list[dict], key: str, x: str, prompts_per_round: int) -> tuple[list[float], list[float]]:
    """(x, y) of ``key`` for one run, with x the iteration or the cumulative number of sampled prompts or sampled
    response tokens."""
    xs, ys, cost = [], [], {"prompts": 0, "tokens": 0}
    for r in records:
        cost["prompts"] += r.get("charts/sample_rounds", 0) * prompts_per_round
        cost["tokens"] += r.get("charts/tokens_sampled", 0)
        if key in r and isinstance(r[key], (int, float)):
            xs.append(r["step"] if x == "step" else cost[x])
            ys.append(r[key])
    return xs, ys


def _band(curves: list[tuple[list[float], list[float]]], points: int = 60):
    """Mean, min and max over seeds on a common x grid (each seed's curve linearly interpolated), up to the
    shortest curve's end so that every point averages all seeds."""
    curves = [(np.asarray(xs, float), np.asarray(ys, float)) for xs, ys in curves if len(xs)]
    if not curves:
        return None
    end = min(xs[-1] for xs, _ in curves)
    start = max(xs[0] for xs, _ in curves)
    grid = np.linspace(start, end, points) if end > start else np.array([start])
    stack = np.stack([np.interp(grid, xs, ys) for xs, ys in curves])      # (seeds, points)
    return grid, stack.mean(0), stack.min(0), stack.max(0)


BAND_PANELS = (("eval/greedy_acc/all", "held-out greedy accuracy"),
               ("charts/entropy_sampled", "policy entropy, all samples (nats/token)"))
BAND_X = {"step": "iteration", "prompts": "sampled prompts", "tokens": "sampled response tokens"}


def plot_bands(groups: dict, out, x: str = "step", prompts_per_round: int = 32, keys=BAND_PANELS,
               title: str | None = None) -> Path:
    """One colour per group of runs (an objective over seeds): the mean over seeds as a line, and a shaded band
    from the lowest to the highest seed, against iterations (``x="step"``), sampled prompts (``"prompts"``) or sampled response tokens (``"tokens"``)."""
    if x not in BAND_X:
        raise ValueError(f"x must be one of {', '.join(BAND_X)}, got {x!r}")
    records = {label: [read_metrics(d) for d in dirs] for label, dirs in groups.items()}
    fig = Figure(figsize=(4.6 * len(keys), 3.6))
    axes = fig.subplots(1, len(keys), squeeze=False)[0]
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (key, panel_title) in zip(axes, keys):
        for index, (label, runs) in enumerate(records.items()):
            band = _band([_seed_curve(r, key, x, prompts_per_round) for r in runs])
            if band is None:
                continue
            grid, mean, low, high = band
            color = colors[index % len(colors)]
            ax.plot(grid, mean, color=color, label=f"{label} (n={len(runs)})")
            ax.fill_between(grid, low, high, color=color, alpha=0.18, linewidth=0)
        ax.set_title(panel_title)
        ax.set_xlabel(BAND_X[x])
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle((title + " — " if title else "") + "mean over seeds, band: min to max")
    return save_figure(fig, out)


def plot_ablations(groups: dict, out, key: str = "eval/greedy_acc/all", title: str | None = None) -> Path:
    """Small multiples: one panel per group after the first, each drawn against the first group (the reference),
    mean over seeds with a min-to-max band, against iterations."""
    labels = list(groups)
    if len(labels) < 2:
        raise ValueError("plot_ablations needs a reference group and at least one other")
    records = {label: [read_metrics(d) for d in dirs] for label, dirs in groups.items()}
    columns = min(3, len(labels) - 1)
    rows = -(-(len(labels) - 1) // columns)
    fig = Figure(figsize=(4.2 * columns, 3.2 * rows))
    axes = fig.subplots(rows, columns, squeeze=False).flatten()
    for ax, label in zip(axes, labels[1:]):
        for name, color in ((labels[0], "0.45"), (label, "C3")):
            band = _band([_seed_curve(r, key, "step", 0) for r in records[name]])
            if band is not None:
                grid, mean, low, high = band
                ax.plot(grid, mean, color=color, label=name)
                ax.fill_between(grid, low, high, color=color, alpha=0.18, linewidth=0)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("iteration")
        ax.set_ylabel(key, fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes[len(labels) - 1:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return save_figure(fig, out)


def save_figure(fig: Figure, out) -> Path:
    """Lay out and write ``fig`` as a PNG at ``out`` (its folder is created); returns the path."""
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out
