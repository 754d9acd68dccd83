"""Integer arithmetic expressions for ``countdown``: a parser, an exact evaluator and a printer.

The countdown verifier has to read expressions a model wrote, so it must never run them as
Python. ``eval`` would execute arbitrary code, and even on harmless text its rules are not ours
(``/`` gives floats, ``**`` and unary minus exist, ``1_000`` is a number). This module is a small
recursive-descent parser for exactly this grammar and nothing more:

    expr   := term   (("+" | "-") term)*        left-associative: 8-3-2 = (8-3)-2
    term   := factor (("*" | "/") factor)*      binds tighter:    2+3*4 = 2+(3*4)
    factor := number | "(" expr ")"
    number := "0" | [1-9][0-9]*                 no leading zeros, at most MAX_NUMBER_DIGITS digits

No spaces, no unary minus, no other characters. A parsed expression is a *tree*: an ``int``
leaf or a tuple ``(op, left, right)`` with ``op`` one of ``"+-*/"``.

Evaluation uses Python integers and allows a division only when it is exact (``6/3`` is 2,
``7/2`` is an error, so is ``x/0``). Every intermediate value is therefore an integer and no
rounding rule is ever needed. Intermediate values may be negative (``3-8+9`` is 4).

Input is bounded (``MAX_LENGTH`` characters, ``MAX_DEPTH`` nested parentheses), so parsing and
evaluation take bounded time and recursion whatever text arrives. Every failure raises
``ExpressionError`` (``ExpressionSyntaxError`` for text that is not an expression at all) with a
message that says what was wrong.
"""

from __future__ import annotations

from typing import Union

Tree = Union[int, tuple]
"""An ``int`` leaf, or ``(op, left, right)`` with op in ``"+-*/"`` and two subtrees."""

MAX_LENGTH = 200
"""Longest text ``parse`` reads."""

MAX_DEPTH = 10
"""Deepest nesting of parentheses ``parse`` accepts."""

MAX_NUMBER_DIGITS = 6
"""Longest integer literal ``parse`` accepts."""

OPERATORS = "+-*/"
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
_DIGITS = frozenset("0123456789")
_ALLOWED = "digits 0-9, the operators + - * / and parentheses ( )"


class ExpressionError(ValueError):
    """The text is not an expression, or its value is not defined (inexact or zero division)."""


class ExpressionSyntaxError(ExpressionError):
    """The text does not follow the grammar (or exceeds the length or nesting limits)."""


def parse(text: str) -> Tree:
    """Parse ``text`` into a tree, or raise ``ExpressionSyntaxError`` saying why not."""
    if not isinstance(text, str):
        raise ExpressionSyntaxError(f"expression must be a str, got {type(text).__name__}")
    if not text:
        raise ExpressionSyntaxError("empty expression")
    if len(text) > MAX_LENGTH:
        raise ExpressionSyntaxError(f"expression is {len(text)} characters long; at most "
                                    f"{MAX_LENGTH} are allowed")
    parser = _Parser(text)
    tree = parser.expr()
    if parser.pos != len(text):
        parser.fail("expected an operator or the end")
    return tree


def evaluate(tree: Tree) -> int:
    """The exact integer value of ``tree``; raise ``ExpressionError`` on a division by zero or a
    division that leaves a remainder."""
    if isinstance(tree, int):
        return tree
    op, left, right = tree
    return apply(op, evaluate(left), evaluate(right))


def apply(op: str, a: int, b: int) -> int:
    """``a op b`` on integers, where ``/`` must divide exactly."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if b == 0:
            raise ExpressionError(f"division by zero ({a}/0)")
        if a % b:
            raise ExpressionError(f"{a}/{b} is not a whole number; only exact division is allowed")
        return a // b
    raise ExpressionError(f"unknown operator {op!r}; allowed: {' '.join(OPERATORS)}")


def numbers_used(tree: Tree) -> list[int]:
    """The integer literals of ``tree``, left to right (repeats included)."""
    if isinstance(tree, int):
        return [tree]
    _, left, right = tree
    return numbers_used(left) + numbers_used(right)


def render(tree: Tree) -> str:
    """Write ``tree`` as text with only the parentheses its meaning needs.

    A child is wrapped when it binds more loosely than its parent (``(2+3)*4``), and a right
    child also when it binds equally under ``-`` or ``/`` (``8-(3-2)``, ``8/(4/2)``), the two
    operators where regrouping changes the value. Dropping the other parentheses can regroup
    ``a*(b/c)`` as ``a*b/c`` or ``a+(b-c)`` as ``a+b-c``: same value, and an exact division
    stays exact, so ``evaluate(parse(render(t))) == evaluate(t)`` whenever the right side exists.
    """
    if isinstance(tree, int):
        if tree < 0:
            raise ExpressionError(f"cannot write the negative literal {tree}: the grammar has no "
                                  f"unary minus")
        return str(tree)
    op, left, right = tree
    left_text, right_text = render(left), render(right)
    if _binding(left) < _PRECEDENCE[op]:
        left_text = f"({left_text})"
    if _binding(right) < _PRECEDENCE[op] or (_binding(right) == _PRECEDENCE[op] and op in "-/"):
        right_text = f"({right_text})"
    return f"{left_text}{op}{right_text}"


def _binding(tree: Tree) -> int:
    """How tightly ``tree`` binds as printed: a literal (3) binds tighter than any operator."""
    return 3 if isinstance(tree, int) else _PRECEDENCE[tree[0]]


class _Parser:
    """Recursive descent over ``text``, one method per grammar rule, reading from ``pos``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def fail(self, expected: str) -> None:
        found = repr(self.peek()) if self.peek() else "the end of the text"
        raise ExpressionSyntaxError(f"{expected} at position {self.pos} of {self.text[:60]!r}, "
                                    f"found {found}; expressions use only {_ALLOWED}")

    def expr(self) -> Tree:
        tree = self.term()
        while self.peek() and self.peek() in "+-":
            op = self.peek()
            self.pos += 1
            tree = (op, tree, self.term())
        return tree

    def term(self) -> Tree:
        tree = self.factor()
        while self.peek() and self.peek() in "*/":
            op = self.peek()
            self.pos += 1
            tree = (op, tree, self.factor())
        return tree

    def factor(self) -> Tree:
        if self.peek() == "(":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise ExpressionSyntaxError(f"parentheses nested deeper than {MAX_DEPTH} levels")
            self.pos += 1
            tree = self.expr()
            if self.peek() != ")":
                self.fail("expected ')'")
            self.pos += 1
            self.depth -= 1
            return tree
        start = self.pos
        while self.peek() in _DIGITS:  # "" (the end) is not in the set
            self.pos += 1
        literal = self.text[start:self.pos]
        if not literal:
            self.fail("expected a number or '('")
        if len(literal) > MAX_NUMBER_DIGITS:
            raise ExpressionSyntaxError(f"number {literal[:20]!r} has {len(literal)} digits; at most "
                                        f"{MAX_NUMBER_DIGITS} are allowed")
        if len(literal) > 1 and literal[0] == "0":
            raise ExpressionSyntaxError(f"number {literal!r} has a leading zero; write it as "
                                        f"{int(literal)}")
        return int(literal)
