"""Plots of runs' metrics (matplotlib, PNG, no screen needed).

``plot_runs`` draws the quantities worth watching in RL — held-out accuracy, mean reward, policy
entropy and, where present, TEPO's mask fraction and the clip fraction — one line per run,
against the iteration or against training seconds. "The loss means nothing": watch the reward and
the held-out accuracy.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
from matplotlib.figure import Figure  # a Figure draws to a file without pyplot, so no display backend is touched

from minitepo.runs import read_metrics

PANELS = (
    ("eval/greedy_acc/all", "held-out greedy accuracy"),
    ("charts/reward_mean", "mean reward"),
    ("charts/entropy", "policy entropy (nats/token)"),
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
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out
