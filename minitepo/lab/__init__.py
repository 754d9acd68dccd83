"""The lab: what runs the core. Command line and flags, run folders, checkpoints, metrics, resume, signals,
stopping rules, the quickstart's recipe, comparisons, statistics, plots, the benchmark and the GPU check.

The core (``minitepo/*.py`` and ``minitepo/losses/``: tokenizer, model, sampling, rollout, advantages, losses, one
SFT step, one RL iteration) imports nothing from here; a test checks the module graph.
"""
