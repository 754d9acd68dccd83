"""``minitepo check-loss``: run every invariant of spec §8 that applies to a loss family on any loss, print a table.

    minitepo check-loss my_module:my_loss --like dapo
    minitepo check-loss verl:vanilla --like dapo --agg token-mean     # verl's registered loss (the verl extra)
    minitepo check-loss trl:bnpo --like dapo                          # TRL's GRPOTrainer loss (the trl extra)

``MODULE:FUNCTION`` names a loss in the kit's convention ``loss(batch, step, **config)`` or in minitepo's keyword
convention ``loss(logp, old_logp, advantages, mask, ...)`` (docs/testing-kit.md). Exit status: 0 when every property
holds, 1 when one is violated (its shrunk counter-example is printed), 2 for bad input (a spec that names nothing,
a signature the kit cannot call, an unknown family).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from minitepo.losses import AGG_MODES
from minitepo.losses import OBJECTIVES


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("loss", help="MODULE:FUNCTION (a module on the path or a .py file), verl:LOSS_MODE or "
                                "trl:LOSS_TYPE")
    p.add_argument("--like", required=True, choices=tuple(OBJECTIVES),
                   help="the family the loss belongs to: which invariants apply and which aggregation weights "
                        "the on-policy check expects")
    p.add_argument("--agg", default=None, choices=AGG_MODES,
                   help="the loss's aggregation mode (default: the family's; for verl:..., its loss_agg_mode)")
    p.add_argument("--only", default=None, help="properties to run, comma-separated (default: all that apply)")
    p.add_argument("--examples", type=int, default=None, help="hypothesis examples per property "
                                                              "(default: each check's own, 6-10)")
    p.add_argument("--seed", type=int, default=None, help="a seed for a reproducible run (default: random)")
    p.add_argument("--database", default=None, help="a folder where hypothesis keeps failing examples between "
                                                    "runs (default: none, nothing is written)")
    p.add_argument("--rtol", type=float, default=1e-10, help="relative tolerance of 'equal' (default 1e-10)")
    p.add_argument("--atol", type=float, default=1e-12, help="absolute tolerance of 'equal' (default 1e-12)")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")


def load_loss(spec: str, agg: str | None):
    """The loss a spec names, in the kit's convention; a ValueError saying what is wrong otherwise."""
    from minitepo.testing import SignatureError, as_kit_loss
    if ":" not in spec:
        raise ValueError(f"name the loss as MODULE:FUNCTION (e.g. my_losses:my_dapo), verl:LOSS_MODE or "
                         f"trl:LOSS_TYPE, got {spec!r}")
    module_name, attr = spec.rsplit(":", 1)
    if module_name == "verl":
        return _verl_loss(attr, agg)
    if module_name == "trl":
        return _trl_loss(attr)
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise ValueError(f"no file {module_name!r}")
            sys.path.insert(0, str(path.resolve().parent))
            module = importlib.import_module(path.stem)
        else:
            sys.path.insert(0, ".")                                        # a module in the working directory
            module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"cannot import {module_name!r}: {e}") from None
    fn = module
    for part in attr.split("."):
        if not hasattr(fn, part):
            raise ValueError(f"{module_name!r} has no attribute {attr!r}")
        fn = getattr(fn, part)
    try:
        return as_kit_loss(fn)
    except SignatureError as e:
        raise ValueError(str(e)) from None


def _verl_loss(mode: str, agg: str | None):
    try:
        from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY, get_policy_loss_fn
    except ImportError as e:
        raise ValueError(f"verl:{mode} needs the verl extra (pip install -e '.[verl]'): {e}") from None
    from minitepo.testing import verl_policy_loss
    from minitepo.testing.frameworks import verl_actor_config
    if mode not in POLICY_LOSS_REGISTRY:
        raise ValueError(f"verl has no policy loss {mode!r}; registered: {', '.join(POLICY_LOSS_REGISTRY)}")
    return verl_policy_loss(get_policy_loss_fn(mode), verl_actor_config(), agg or "token-mean")


def _trl_loss(loss_type: str):
    try:
        from minitepo.testing.frameworks import trl_trainer
        trainer = trl_trainer()
    except ImportError as e:
        raise ValueError(f"trl:{loss_type} needs the trl extra (pip install -e '.[trl]'): {e}") from None
    from minitepo.testing import trl_grpo_loss
    allowed = ("grpo", "bnpo", "dr_grpo", "dapo")
    if loss_type not in allowed:
        raise ValueError(f"unknown TRL loss_type {loss_type!r}; the harness runs: {', '.join(allowed)}")
    return trl_grpo_loss(trainer, loss_type)


def run_check_loss(args) -> int:
    try:
        from minitepo.testing import check_loss, format_findings
    except ImportError as e:
        raise ValueError(str(e)) from None
    if args.examples is not None and args.examples < 1:
        raise ValueError(f"--examples must be at least 1, got {args.examples}")
    loss = load_loss(args.loss, args.agg)
    only = [name.strip() for name in args.only.split(",")] if args.only else None
    findings = check_loss(loss, like=args.like, agg=args.agg, only=only, max_examples=args.examples, seed=args.seed,
                          database=args.database, tol=dict(rtol=args.rtol, atol=args.atol))
    print(f"{args.loss}, checked as {args.like}:")
    print(format_findings(findings, markdown=args.markdown))
    violated = [f.property for f in findings if not f.holds]
    print(f"\n{len(findings) - len(violated)} of {len(findings)} properties hold"
          + (f"; violated: {', '.join(violated)}" if violated else ""))
    return 1 if violated else 0
