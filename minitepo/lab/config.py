"""Config dataclasses <-> command-line flags.

Every component has one dataclass whose fields carry a docstring right under them. Those
docstrings are the single source of documentation: ``add_flags`` reads them (with ``ast``) and
turns each field into a dashed flag (``eval_every`` -> ``--eval-every``) whose ``--help`` text is
the docstring and whose default is the field's default.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import textwrap
import typing


@functools.cache
def field_docs(cls) -> dict[str, str]:
    """Map field name -> the docstring written under it in the class body (for cls and its bases). Read once per
    class: the source does not change while the program runs."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not dataclasses.is_dataclass(klass):
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for node, nxt in zip(body, body[1:]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(nxt, ast.Expr) and isinstance(getattr(nxt, "value", None), ast.Constant)
                    and isinstance(nxt.value.value, str)):
                docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def _parser_for(annotation):
    """(argparse type, is_bool) for a field annotation such as ``int | None``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    base = args[0]
    if base is bool:
        return None, True
    return base, False


def add_flags(parser: argparse.ArgumentParser, cls, skip: tuple[str, ...] = (), overrides: dict | None = None) -> None:
    """Add one ``--dashed-name`` flag per field of dataclass ``cls``."""
    docs = field_docs(cls)
    hints = typing.get_type_hints(cls)
    overrides = overrides or {}
    group = parser.add_argument_group(cls.__name__, (cls.__doc__ or "").strip().splitlines()[0])
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        default = overrides.get(f.name, f.default if f.default is not dataclasses.MISSING else None)
        flag = "--" + f.name.replace("_", "-")
        doc = docs.get(f.name, "")
        # a docstring that states its default already (an objective's "(default 0.4)", or "default: ...") says it once
        stated = "(default" in doc or "default:" in doc
        help_text = (doc if stated else f"{doc} (default: {default!r})").replace("%", "%%")
        kind, is_bool = _parser_for(hints[f.name])
        # A flag left out is left out of the parsed namespace (SUPPRESS), so a command can tell the flags given
        # from the defaults (``--resume`` takes the left-out ones from the run); ``from_args`` fills in defaults.
        absent = argparse.SUPPRESS if f.name not in overrides else default
        if is_bool:
            group.add_argument(flag, dest=f.name, default=absent, action=argparse.BooleanOptionalAction, help=help_text)
        else:
            group.add_argument(flag, dest=f.name, default=absent, type=kind, help=help_text, metavar=f.name.upper())


def from_args(cls, args: argparse.Namespace, **extra):
    """Build ``cls`` from the parsed flags that match its fields (plus ``extra``); flags left out keep the
    field's default."""
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in vars(args).items() if k in names}
    values.update(extra)
    return cls(**values)
