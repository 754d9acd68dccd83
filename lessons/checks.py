"""Named checks for the lessons' exercises, in the spirit of makemore's ``cmp(name, mine, ref)``.

A check that passes prints one line: the quantity, exact or close, the largest difference, the shapes.
A check that fails raises ``CheckFailed`` (an AssertionError) whose message names the quantity, the exercise,
where the two tensors differ most, and a one-line hint. An exercise whose body is still a stub (``...``,
``pass``, ``raise NotImplementedError``, or a function that returns None) fails with "exercise N not done yet".

    with exercise(1, my_logp_entropy):              # the exercise's number and the functions the learner writes
        my_logp, my_entropy = my_logp_entropy(logits, ids, temperature)
        cmp("logp", my_logp, ref_logp, atol=1e-5, hint="divide the logits by the temperature before log_softmax")
        check("no entropy above log V", bool((my_entropy <= math.log(V) + 1e-5).all()), hint="...")

A lesson finds this file however it is run: as a script, Python puts the lesson's folder first on
``sys.path``; as a notebook, the kernel starts in the notebook's folder, and a lesson that cannot import it
adds the ``lessons/`` folder next to the installed ``minitepo`` (see the import cell of any lesson).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import math
import textwrap
from pathlib import Path

import torch

LESSONS_DIR = Path(__file__).resolve().parent
"""The folder holding the lessons (and ``data/``), wherever the lesson is run from."""

_current: list[int | str] = []          # the exercise being checked, innermost last


class CheckFailed(AssertionError):
    """A named check failed: the message says which quantity, by how much, and what to look at."""


class ExerciseNotDone(CheckFailed):
    """The exercise's body is still a stub."""


def _where() -> str:
    return f"exercise {_current[-1]}: " if _current else ""


def _not_done(fn_name: str | None = None, why: str = "") -> ExerciseNotDone:
    n = _current[-1] if _current else "?"
    what = f" (write the body of {fn_name})" if fn_name else ""
    return ExerciseNotDone(f"exercise {n} not done yet{what}{': ' + why if why else ''}")


def is_stub(fn) -> bool:
    """True when ``fn``'s body (after its docstring) is only ``...``, ``pass`` or ``raise NotImplementedError``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False                    # no source to read (built-in, lambda in a REPL): judge by running it
    func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None:
        return False
    body = list(func.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]                 # the docstring
    if not body:
        return True

    def stub(node) -> bool:
        if isinstance(node, ast.Pass):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node.value.value is Ellipsis:
            return True
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
        return False

    return all(stub(node) for node in body)


@contextlib.contextmanager
def exercise(n, *functions):
    """Check exercise ``n``: a stub among ``functions`` (or a NotImplementedError, or a None where a value was
    expected) fails with "exercise n not done yet"; every check inside names the exercise."""
    _current.append(n)
    try:
        for fn in functions:
            if is_stub(fn):
                raise _not_done(getattr(fn, "__name__", None))
        try:
            yield
        except NotImplementedError as err:
            raise _not_done(None, f"NotImplementedError({err})") from None
        except TypeError as err:
            if "NoneType" in str(err):
                raise _not_done(None, f"a function returned None ({err})") from None
            raise
    finally:
        _current.pop()


def _as_tensor(x) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x.detach()
    t = torch.as_tensor(x)
    return torch.as_tensor(x, dtype=torch.float64) if t.is_floating_point() else t   # a Python float is a double


def _fmt(x) -> str:
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def cmp(name: str, mine, ref, *, atol: float = 1e-6, rtol: float = 1e-5, hint: str = "", quiet: bool = False) -> None:
    """Compare the learner's ``mine`` with ``ref`` (tensors, numbers, lists or bools), named ``name``.

    Passes when the shapes agree and |mine - ref| <= atol + rtol |ref| everywhere, as torch.allclose does
    (bools and integers must be equal). Prints ``name | exact | close | max|diff| | shape`` (on a pass only
    unless ``quiet``); on failure raises CheckFailed naming the quantity, the largest difference and where it
    is, both values there, and ``hint``.
    """
    if mine is None:
        raise _not_done(None, f"{name} is None")
    a, b = _as_tensor(mine), _as_tensor(ref)
    tip = f"\n  hint: {hint}" if hint else ""
    if tuple(a.shape) != tuple(b.shape):
        raise CheckFailed(f"{_where()}{name}: shape {tuple(a.shape)}, expected {tuple(b.shape)}{tip}")
    exact_kind = not (a.is_floating_point() or b.is_floating_point())
    if exact_kind:
        diff = (a.long() != b.long()).long() if a.numel() else torch.zeros(0, dtype=torch.long)
    else:
        a64, b64 = a.double().cpu(), b.double().cpu()
        if bool(torch.isnan(a64).any()) and not bool(torch.isnan(b64).any()):
            raise CheckFailed(f"{_where()}{name}: holds NaN where the reference has none{tip}")
        diff = (a64 - b64).abs().nan_to_num(0.0)
    exact = bool(torch.equal(a.cpu(), b.cpu())) if a.dtype == b.dtype else bool((diff == 0).all())
    maxdiff = float(diff.max()) if diff.numel() else 0.0
    if exact_kind:
        close = exact
    else:
        close = bool((diff <= atol + rtol * b.double().cpu().abs()).all())
    shape = "scalar" if a.dim() == 0 else f"shape {tuple(a.shape)}"
    if not (quiet and close):
        print(f"{'ok  ' if close else 'FAIL'} {name:44s} | exact: {str(exact):5s} | close: {str(close):5s} "
              f"| max|diff|: {maxdiff:.1e} | {shape}")
    if not close:
        at = ""
        if a.dim() > 0 and diff.numel():
            idx = tuple(int(i) for i in torch.unravel_index(diff.view(-1).argmax(), diff.shape))
            where = idx if len(idx) > 1 else idx[0]
            at = f" at index {where} (yours {_fmt(a[idx].item())}, expected {_fmt(b[idx].item())})"
        elif a.dim() == 0:
            at = f" (yours {_fmt(a.item())}, expected {_fmt(b.item())})"
        tol = "must be equal" if exact_kind else f"tolerance {atol:g}" + (f" + {rtol:g}|ref|" if rtol else "")
        raise CheckFailed(f"{_where()}{name} differs: max |yours - expected| = {maxdiff:.3g}{at}; {tol}{tip}")


def check(name: str, ok, *, hint: str = "", got=None, quiet: bool = False) -> None:
    """A named yes/no check: prints ``ok name`` or raises CheckFailed with the name, ``got`` (if given) and ``hint``."""
    if ok is None:
        raise _not_done(None, f"{name}: got None")
    if isinstance(ok, torch.Tensor):
        ok = bool(ok.all())
    ok = bool(ok)
    if not (quiet and ok):
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    if not ok:
        shown = f" (got {_fmt(got)})" if got is not None else ""
        raise CheckFailed(f"{_where()}{name}: not true{shown}" + (f"\n  hint: {hint}" if hint else ""))


def close_number(name: str, mine, ref: float, *, atol: float = 1e-6, hint: str = "") -> None:
    """``cmp`` for one number, accepting a 0-d or one-element tensor."""
    if mine is None:
        raise _not_done(None, f"{name} is None")
    value = float(mine.reshape(())) if isinstance(mine, torch.Tensor) else float(mine)
    if not math.isfinite(value):
        raise CheckFailed(f"{_where()}{name} is {value}, expected {ref:.6g}" + (f"\n  hint: {hint}" if hint else ""))
    cmp(name, torch.tensor(value, dtype=torch.float64), torch.tensor(float(ref), dtype=torch.float64),
        atol=atol, hint=hint)
