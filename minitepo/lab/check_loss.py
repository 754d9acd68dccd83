"""``minitepo check-loss``: run every invariant of spec §8 that applies to a loss family on any loss, print a table.

    minitepo check-loss my_module:my_loss --like dapo
    minitepo check-loss path/to/losses.py:my_dapo --like dapo --normalizer-arg norm   # its parameter for the step's N
    minitepo check-loss verl:vanilla --like dapo --agg token-mean     # verl's registered loss (the verl extra)
    minitepo check-loss trl:bnpo --like dapo                          # TRL's GRPOTrainer loss (the trl extra)
    minitepo check-loss --list                                        # every property and what it means

``MODULE:FUNCTION`` names a loss; the kit picks how to call it from its signature (docs/testing-kit.md, "How the kit
calls your loss"). Exit status: 0 when every property holds; 1 when one is violated (its shrunk counter-example is
printed); 2 when there is no verdict on the loss, with one line saying why: the module does not import, the spec
names nothing or a signature the kit cannot call, the loss cannot run on a plain batch, an unknown family or
property, or ``--only`` / ``--skip`` leave no property that applies.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path

from minitepo.losses import AGG_MODES, OBJECTIVES, objective_default


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("loss", nargs="?", help="MODULE:FUNCTION (a module on the path or a .py file), verl:LOSS_MODE or "
                                           "trl:LOSS_TYPE")
    p.add_argument("--like", default=None, choices=tuple(OBJECTIVES),
                   help="the family the loss belongs to (required): which invariants apply and which aggregation "
                        "weights the on-policy check expects")
    p.add_argument("--agg", default=None, choices=AGG_MODES,
                   help="the loss's aggregation mode (default: the family's; for verl:..., its loss_agg_mode)")
    p.add_argument("--normalizer-arg", default=None, metavar="NAME",
                   help="the loss's parameter that takes the optimizer step's normaliser (N, B' or B*L_max of --agg) "
                        "when it runs on a micro-batch (default: a parameter called 'normalizer', if it has one)")
    p.add_argument("--only", default=None, help="properties to run, comma-separated (default: all that apply)")
    p.add_argument("--skip", default=None, help="properties to leave out, comma-separated")
    p.add_argument("--list", action="store_true", help="list every property with its meaning and exit")
    p.add_argument("--examples", type=int, default=None, help="hypothesis examples per property "
                                                              "(default: each check's own, 6-10)")
    p.add_argument("--seed", type=int, default=None, help="a seed for a reproducible run (default: random)")
    p.add_argument("--database", default=None, help="a folder where hypothesis keeps failing examples between "
                                                    "runs (default: none, nothing is written)")
    p.add_argument("--rtol", type=float, default=1e-10, help="relative tolerance of 'equal' (default 1e-10, float64 "
                                                             "round-off; a float32 loss needs about 1e-5)")
    p.add_argument("--atol", type=float, default=1e-12, help="absolute tolerance of 'equal' (default 1e-12; a "
                                                             "float32 loss needs about 1e-6)")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")
    p.add_argument("--json", action="store_true", help="print the verdicts as one JSON object")


# --------------------------------------------------------------------------- finding the loss


def load_function(spec: str):
    """The object ``MODULE:ATTR`` names (``path/to/file.py:ATTR`` loads that file by its path); a ValueError saying
    what is wrong otherwise."""
    module_name, attr = spec.rsplit(":", 1)
    module = _load_file(module_name) if module_name.endswith(".py") else _import(module_name)
    fn = module
    for part in attr.split("."):
        if not hasattr(fn, part):
            raise ValueError(f"{module_name!r} has no attribute {attr!r}{_shadow_note(module_name, module)}")
        fn = getattr(fn, part)
    return fn


@contextlib.contextmanager
def _no_bytecode():
    """Import without writing __pycache__ next to the user's file (it may be in the working directory)."""
    saved, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        yield
    finally:
        sys.dont_write_bytecode = saved


def _import(module_name: str):
    # a module in the working directory: its absolute path, for this import only (Python keeps the finder it made for
    # a relative "." pointed at the directory that was current then, so a later chdir would not be seen)
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        with _no_bytecode():
            return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name + ".").startswith(e.name + "."):       # the module itself, not one it imports
            raise ValueError(f"cannot import {module_name!r}: no such module on the path or in the working "
                             f"directory (a file? name it as path/to/file.py:FUNCTION)") from None
        raise ValueError(f"cannot import {module_name!r}: {type(e).__name__}: {e}") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - whatever the module raises at import is the reason
        raise ValueError(f"cannot import {module_name!r}: {_one_line(e)}") from None
    finally:
        if added:
            sys.path.remove(cwd)


def _load_file(path_text: str):
    """Load a .py file by its path, under a name of its own: ``sub/copy.py`` never means the standard library's copy.
    Its folder goes to the end of sys.path, so that it can import its neighbours without shadowing anything."""
    path = Path(path_text)
    if not path.is_file():
        raise ValueError(f"no file {path_text!r}")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)
    name = f"minitepo_check_loss_{abs(hash(str(path.resolve())))}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module                                             # dataclasses and pickling look it up
    try:
        with _no_bytecode():
            spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - whatever the file raises at import is the reason
        del sys.modules[name]
        raise ValueError(f"cannot import {path_text!r}: {_one_line(e)}") from None
    return module


def _one_line(e: BaseException) -> str:
    if isinstance(e, SyntaxError):
        return f"SyntaxError: {e.msg} ({Path(e.filename or '?').name}, line {e.lineno})"
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}"


def _shadow_note(module_name: str, module) -> str:
    """When a file of that name sits in the working directory but the import found another module first."""
    local = Path(*module_name.split(".")).with_suffix(".py")
    found = getattr(module, "__file__", None)
    if local.is_file() and (found is None or Path(found).resolve() != local.resolve()):
        return (f" (the import found {found or 'a built-in module'}, not ./{local}; load the file by its path: "
                f"{local}:FUNCTION)")
    return ""


def load_loss(spec: str, agg: str | None, like: str | None = None, normalizer: str | None = None):
    """The loss a spec names, in the kit's convention; a ValueError saying what is wrong otherwise."""
    from minitepo.testing import SignatureError, as_kit_loss
    if ":" not in spec:
        raise ValueError(f"name the loss as MODULE:FUNCTION (e.g. my_losses:my_dapo), path/to/file.py:FUNCTION, "
                         f"verl:LOSS_MODE or trl:LOSS_TYPE, got {spec!r}")
    module_name, attr = spec.rsplit(":", 1)
    if module_name in ("verl", "trl") and normalizer:
        raise ValueError(f"--normalizer-arg applies to a loss of your own; the {module_name} harness hands the loss "
                         f"the step's counts as {module_name} does")
    if module_name == "verl":
        return _verl_loss(attr, agg)
    if module_name == "trl":
        return _trl_loss(attr)
    try:
        return as_kit_loss(load_function(spec), normalizer=normalizer, agg=agg, like=like)
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


# --------------------------------------------------------------------------- the run


def _names(text: str | None) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()] if text else []


def list_properties() -> str:
    """Every property: its spec item, the families it applies to, its meaning."""
    from minitepo.testing import FAMILIES, INVARIANTS

    def scope(inv) -> str:
        left_out = [f for f in FAMILIES if f not in inv.families]
        where = "all" if not left_out else (", ".join(inv.families) if len(inv.families) <= len(left_out)
                                            else f"all but {', '.join(left_out)}")
        return where + (f"; not {', '.join(inv.skip_aggs)}" if inv.skip_aggs else "")

    rows = [(inv.name, inv.spec, scope(inv), inv.sentence) for inv in INVARIANTS]
    widths = [max(len(r[i]) for r in rows + [("property", "spec", "applies to", "")]) for i in range(3)]
    lines = [f"{'property':{widths[0]}s}  {'spec':{widths[1]}s}  {'applies to':{widths[2]}s}  meaning"]
    lines += [f"{n:{widths[0]}s}  {s:{widths[1]}s}  {a:{widths[2]}s}  {m}" for n, s, a, m in rows]
    return "\n".join(lines)


def run_check_loss(args) -> int:
    try:
        from minitepo.testing import check_loss, findings_json, format_findings
        from minitepo.testing.verdicts import describe, summary
    except ImportError as e:
        raise ValueError(str(e)) from None
    if args.list:
        print(list_properties())
        return 0
    if args.loss is None:
        raise ValueError("name the loss to check (MODULE:FUNCTION), or --list the properties")
    if args.like is None:
        raise ValueError(f"--like FAMILY is required: the family the loss claims to be, one of {', '.join(OBJECTIVES)}")
    if args.examples is not None and args.examples < 1:
        raise ValueError(f"--examples must be at least 1, got {args.examples}")
    if args.rtol < 0 or args.atol < 0:
        raise ValueError(f"--rtol and --atol must be >= 0, got {args.rtol} and {args.atol}")
    loss = load_loss(args.loss, args.agg, args.like, args.normalizer_arg)
    findings = check_loss(loss, like=args.like, agg=args.agg, only=_names(args.only), skip=_names(args.skip),
                          max_examples=args.examples, seed=args.seed, database=args.database,
                          tol=dict(rtol=args.rtol, atol=args.atol))
    if args.json:
        about = dict(loss=args.loss, like=args.like, agg=args.agg or objective_default(args.like, "agg"),
                     called_as=describe(loss), seed=args.seed,
                     examples=args.examples, rtol=args.rtol, atol=args.atol)
        print(json.dumps(findings_json(findings, **about), indent=1, ensure_ascii=False))
    else:
        print(f"{args.loss}, checked as {args.like}\ncalled as: {describe(loss)}\n")
        print(format_findings(findings, markdown=args.markdown))
        print("\n" + summary(findings))
    return 0 if all(f.holds for f in findings) else 1
