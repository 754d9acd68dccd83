"""The lab: what runs the core. Command line and flags, run folders, checkpoints, metrics, resume, signals,
stopping rules, the quickstart's recipe, comparisons, statistics, plots, the benchmark and the GPU check.

The core (``minitepo/*.py`` and ``minitepo/losses/``: tokenizer, model, sampling, rollout, advantages, losses, the
SFT and RL loops) imports nothing from here, and ``import minitepo`` loads none of it; tests check both.

The lab's names for notebooks and scripts::

    from minitepo.lab import SFTConfig, train_sft, RLConfig, train_rl, plot_runs

Each is imported from its module when first asked for, so ``import minitepo.lab.stats`` loads neither matplotlib
(``plotting``) nor tqdm (the run loops).
"""

from __future__ import annotations

import importlib

WHERE = {  # name -> the lab module that defines it
    "SFTConfig": "sft_run", "train_sft": "sft_run",
    "RLConfig": "rl_config", "train_rl": "rl_run",
    "plot_runs": "plotting",
}

__all__ = list(WHERE)


def __getattr__(name: str):
    if name not in WHERE:
        raise AttributeError(f"module 'minitepo.lab' has no attribute {name!r}; its names: {', '.join(WHERE)}")
    return getattr(importlib.import_module(f"minitepo.lab.{WHERE[name]}"), name)
