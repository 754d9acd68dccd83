"""How ``minitepo.losses`` reads: TEPO's default path is short, each default is written once, every objective is
registered.

The first test follows ``tepo_loss`` at its defaults with a profiler and counts the functions of
``minitepo/losses/`` it enters outside the input checks (``checks.py``), and their lines of code (no docstring,
comment or blank line): a reader who wants the whole computation opens these and nothing else.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
from pathlib import Path

import torch

import minitepo.losses as losses
from minitepo.losses import common, tepo

LOSSES = Path(losses.__file__).parent


def functions_entered(fn, **kwargs) -> dict:
    """(file name, function name) -> code object of every function of minitepo/losses/ (checks.py and lambdas
    left out) that ``fn(**kwargs)`` enters."""
    seen = {}

    def profile(frame, event, arg):
        code = frame.f_code
        path = Path(code.co_filename)
        if event == "call" and path.parent == LOSSES and path.name != "checks.py" and code.co_name != "<lambda>":
            seen.setdefault((path.name, code.co_name), code)

    sys.setprofile(profile)
    try:
        fn(**kwargs)
    finally:
        sys.setprofile(None)
    return seen


def lines_of_code(code) -> int:
    """Lines of a function's source that are code: its signature and body, without docstring, comments, blanks."""
    source = textwrap.dedent("".join(inspect.getsourcelines(code)[0]))
    node = ast.parse(source).body[0]
    doc = set(range(node.body[0].lineno, node.body[0].end_lineno + 1)) if ast.get_docstring(node) else set()
    return sum(1 for i, line in enumerate(source.splitlines(), 1)
               if line.strip() and not line.strip().startswith(("#", "@")) and i not in doc)


def test_tepo_loss_at_its_defaults_reads_in_nine_short_functions_outside_the_input_checks():
    g = torch.Generator().manual_seed(0)
    B, T = 4, 6
    seen = functions_entered(
        tepo.tepo_loss, logp=(-torch.rand(B, T, generator=g)).requires_grad_(), old_logp=-torch.rand(B, T, generator=g),
        advantages=torch.randn(B, generator=g), mask=torch.ones(B, T, dtype=torch.bool),
        entropy=torch.rand(B, T, generator=g), old_entropy=torch.rand(B, T, generator=g))
    sizes = {f"{file}:{name}": lines_of_code(code) for (file, name), code in seen.items()}
    report = f"{len(sizes)} functions, {sum(sizes.values())} lines: {sizes}"
    # TEPO's own math is in tepo.py; what it shares with every objective (aggregation, KL, ratios, clip statistics)
    # in common.py
    assert {file for file, _ in seen} == {"tepo.py", "common.py"}, report
    own = {k: v for k, v in sizes.items() if k.startswith("tepo.py:")}
    assert len(own) <= 2 and sum(own.values()) <= 65, report
    assert len(sizes) <= 9 and sum(sizes.values()) <= 135, report


def test_each_clip_range_and_the_mask_tolerance_are_defined_once_and_are_the_signatures_defaults():
    def default(name, parameter):
        return losses.objective_default(name, parameter)

    assert common.EPS == 0.2 and common.EPS_HIGH_DAPO == 0.28
    assert (common.EPS_LOW_GSPO, common.EPS_HIGH_GSPO) == (3e-4, 4e-4)
    assert tepo.TEPO_DELTA == 0.4 and tepo.TEPO_MASK_TOL == 1e-4
    for name in ("grpo", "dr_grpo"):
        assert (default(name, "eps_low"), default(name, "eps_high")) == (common.EPS, common.EPS)
    for name in ("dapo", "gtpo", "grpo_s", "tepo"):
        assert (default(name, "eps_low"), default(name, "eps_high")) == (common.EPS, common.EPS_HIGH_DAPO)
    for name in ("gspo", "gspo_token"):
        assert (default(name, "eps_low"), default(name, "eps_high")) == (common.EPS_LOW_GSPO, common.EPS_HIGH_GSPO)
    assert default("tepo", "delta_low") == default("tepo", "delta_high") == tepo.TEPO_DELTA
    assert default("tepo", "mask_tol") == tepo.TEPO_MASK_TOL == losses.TEPO_MASK_TOL
    assert inspect.signature(losses.tepo_mask).parameters["tol"].default == tepo.TEPO_MASK_TOL
    assert losses.TEPO_DEFAULTS["mask_tol"] == tepo.TEPO_MASK_TOL


def test_the_adapters_take_their_defaults_from_the_loss_signature():
    """The verl and TRL adapters state TEPO's defaults by reading ``TEPO_DEFAULTS`` (the signature of
    ``tepo_loss``), never by retyping a number. Their modules import verl / TRL, so this reads their source."""
    integrations = LOSSES.parent / "integrations"
    for name in ("verl.py", "trl.py"):
        source = (integrations / name).read_text()
        assert "TEPO_DEFAULTS[\"mask_tol\"]" in source, name
        defaults = []                                      # function defaults and dataclass field defaults
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef):
                defaults += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            elif isinstance(node, ast.ClassDef):
                defaults += [item.value for item in node.body if isinstance(item, ast.AnnAssign) and item.value]
                defaults += [kw.value for call in ast.walk(node) if isinstance(call, ast.Call)
                             for kw in call.keywords if kw.arg == "default"]
        retyped = [d.lineno for d in defaults if isinstance(d, ast.Constant) and isinstance(d.value, float)]
        assert not retyped, f"{name}: a float default retyped at line(s) {retyped}; read it from TEPO_DEFAULTS"


def test_every_objective_is_registered_once_under_its_name():
    assert set(losses.OBJECTIVES) == {"grpo", "dapo", "dr_grpo", "gspo", "gspo_token", "tepo", "gtpo", "grpo_s"}
    for name, fn in losses.OBJECTIVES.items():
        assert fn is getattr(losses, f"{name}_loss") and fn.__name__ == f"{name}_loss"
        assert fn.__doc__ and re.search(r"\bL\s+=", fn.__doc__), name   # its equation, in its docstring
    # the five token-ratio objectives are one function with their papers' defaults, not five copies
    for name in ("grpo", "dapo", "dr_grpo", "gtpo", "grpo_s"):
        assert losses.OBJECTIVES[name].func is losses.token_ratio_loss
