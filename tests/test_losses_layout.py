"""How ``minitepo.losses`` reads: TEPO's default path is short, each default is written once, every objective is
registered.

The first test follows ``tepo_loss`` at its defaults with a profiler and counts the functions of
``minitepo/losses/`` it enters outside the input checks (``checks.py``), and their lines of code (no docstring,
comment or blank line): a reader who wants the whole computation opens ``tepo.py`` and these functions in it, nothing
else.
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


def test_tepo_loss_at_its_defaults_reads_in_one_file_within_eight_functions_and_120_lines():
    g = torch.Generator().manual_seed(0)
    B, T = 4, 6
    inputs = dict(old_logp=-torch.rand(B, T, generator=g), advantages=torch.randn(B, generator=g),
                  mask=torch.ones(B, T, dtype=torch.bool), entropy=torch.rand(B, T, generator=g),
                  old_entropy=torch.rand(B, T, generator=g))
    for extra in ({}, {"normalizer": 24.0}):   # alone, and as the trainer calls it (the step's N, for micro-batches)
        seen = functions_entered(tepo.tepo_loss, logp=(-torch.rand(B, T, generator=g)).requires_grad_(), **inputs,
                                 **extra)
        sizes = {f"{file}:{name}": lines_of_code(code) for (file, name), code in seen.items()}
        report = f"{len(sizes)} functions, {sum(sizes.values())} lines: {sizes}"
        # TEPO's whole default computation is in tepo.py; common.py serves only the non-default switches
        assert {file for file, _ in seen} == {"tepo.py"}, report
        assert len(sizes) <= 8 and sum(sizes.values()) <= 120, report


def test_tepos_own_token_mean_and_k3_are_common_pys_bit_for_bit():
    """tepo.py writes out the two pieces of common.py its default path uses (so that it reads alone); they must stay
    the same formula, to the bit, values and gradients."""
    g = torch.Generator().manual_seed(1)
    for dtype in (torch.float32, torch.float64):
        for _ in range(50):
            B, T = int(torch.randint(1, 7, (1,), generator=g)), int(torch.randint(1, 9, (1,), generator=g))
            m = torch.rand(B, T, generator=g) < 0.7
            m[0, 0] = True
            x = torch.where(m, torch.randn(B, T, generator=g, dtype=dtype), torch.zeros((), dtype=dtype))
            for normalizer in (None, 17.0):
                assert torch.equal(tepo.token_mean(x, m, normalizer),
                                   common.aggregate_clean(x, m, "token-mean", normalizer))
            scale = float(torch.tensor([1e-3, 1.0, 40.0])[torch.randint(0, 3, (1,), generator=g)])
            old = torch.randn(B, T, generator=g, dtype=dtype) * scale
            a = torch.randn(B, T, generator=g, dtype=dtype).requires_grad_()
            b = a.detach().clone().requires_grad_()
            mine, shared = tepo.k3(a, old), common.kl_penalty(b, old, "k3")
            mine.sum().backward()
            shared.sum().backward()
            assert torch.equal(mine, shared) and torch.equal(a.grad, b.grad)


def test_tepos_written_out_ratio_routing_and_clip_statistics_are_common_pys_bit_for_bit():
    """At its defaults tepo_loss routes the geometric-mean ratio and counts its clip statistics itself (so that it
    reads in one file); built again from common.routed_ratio and common.clip_stats, the policy loss, its gradient
    and every clip statistic must come out the same to the bit."""
    g = torch.Generator().manual_seed(2)
    for dtype in (torch.float32, torch.float64):
        for _ in range(40):
            B, T = int(torch.randint(1, 6, (1,), generator=g)), int(torch.randint(1, 8, (1,), generator=g))
            m = torch.rand(B, T, generator=g) < 0.8
            m[0, 0] = True
            scale = float(torch.tensor([0.05, 0.5, 30.0])[torch.randint(0, 3, (1,), generator=g)])
            old = torch.where(m, -torch.rand(B, T, generator=g, dtype=dtype), torch.zeros((), dtype=dtype))
            lp = (old + torch.where(m, torch.randn(B, T, generator=g, dtype=dtype) * scale,
                                    torch.zeros((), dtype=dtype))).requires_grad_()
            A = torch.randn(B, generator=g, dtype=dtype)
            loss, stats = tepo.tepo_loss(logp=lp, old_logp=old, advantages=A, mask=m, beta_mask=0.0)
            loss.backward()
            # the same policy term from the shared pieces
            lp2 = lp.detach().clone().requires_grad_()
            At = torch.where(m, A[:, None].expand(B, T), torch.zeros((), dtype=dtype))
            x = lp2 - old
            high, low = x > tepo.TEPO_DELTA, x < -tepo.TEPO_DELTA
            clipped = (((At > 0) & high) | ((At < 0) & low)) & m
            x_clip = torch.where(clipped, x.detach().clamp(-tepo.TEPO_DELTA, tepo.TEPO_DELTA), x)
            _, s_tok = common.routed_ratio(x_clip.sum(dim=-1) / m.sum(dim=-1).to(dtype).clamp(min=1), x_clip)
            zero = torch.zeros((), dtype=dtype)
            expected = common.aggregate_clean(torch.where(m, -s_tok * At, zero), m, "token-mean")
            expected.backward()
            assert torch.equal(loss, expected) and torch.equal(lp.grad, lp2.grad)
            shared = common.clip_stats(At, m, high, low, torch.zeros_like(m), dtype)
            assert list(shared) == [k for k in stats if k.startswith("clip")]
            for key, value in shared.items():
                assert torch.equal(stats[key], value), key


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
    assert set(losses.OBJECTIVES) == {"grpo", "dapo", "dr_grpo", "gspo", "gspo_token", "tepo", "gtpo", "grpo_s", "cispo",
                                      "sapo", "gmpo"}
    for name, fn in losses.OBJECTIVES.items():
        assert fn is getattr(losses, f"{name}_loss") and fn.__name__ == f"{name}_loss"
        assert fn.__doc__ and re.search(r"\bL\s+=", fn.__doc__), name   # its equation, in its docstring
    # the five token-ratio objectives are one function with their papers' defaults, not five copies
    for name in ("grpo", "dapo", "dr_grpo", "gtpo", "grpo_s"):
        assert losses.OBJECTIVES[name].func is losses.token_ratio_loss
