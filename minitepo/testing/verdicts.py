"""Running the kit on one loss, and its verdicts: ``check_loss`` (a ``Finding`` per property), ``format_findings``
(the table with the shrunk examples), ``findings_json`` (the same, machine-readable) and ``assert_invariants``
(one line in a project's own pytest file):

    from minitepo.testing import assert_invariants
    def test_my_loss():
        assert_invariants(my_loss, like="dapo")     # AssertionError naming each violated property and its example

Before any property runs, the loss runs on a few plain batches (``plain_batch``: ragged or equal lengths, bool or
float mask, 0 at padding, no micro-batches). A loss that raises on every one of them, or returns a non-finite loss,
cannot be judged: ``check_loss`` raises ``UnusableLoss`` (a ValueError) with the reason instead of reporting every
property violated. A selection (``only``, ``skip``) that leaves no property to run is a ValueError too.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch

from minitepo.losses import AGG_MODES, objective_default
from minitepo.testing.adapters import as_kit_loss, evaluate
from minitepo.testing.batches import plain_batch
from minitepo.testing.hints import FLOAT32, aggregation_hint, normalizer_hint, tolerance_flags
from minitepo.testing.invariants import FAMILIES, INVARIANTS, TIGHT, Invariant, InvariantViolation, applies

MICRO_BATCH_PROPERTIES = ("micro-batches", "equal micro-batches")


class UnusableLoss(ValueError):
    """The loss cannot run on a plain batch: no property can be judged (``minitepo check-loss`` exits 2)."""


@dataclass
class Finding:
    """One property's verdict on one loss."""

    property: str
    spec: str
    holds: bool
    example: str = ""  # the shrunk counter-example with its numbers, when violated
    sentence: str = field(default="", repr=False)
    hints: tuple = ()  # sentences on the likely cause, when the kit can tell (hints.py)


# --------------------------------------------------------------------------- which properties


def _key(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())       # "masked-junk", "masked_junk", "masked junk"


def invariant_named(name: str) -> Invariant:
    """The invariant called ``name`` (spaces, dashes or underscores alike); a ValueError listing the names otherwise."""
    found = [inv for inv in INVARIANTS if _key(inv.name) == _key(name)]
    if not found:
        raise ValueError(f"unknown property {name!r}; allowed: {', '.join(inv.name for inv in INVARIANTS)}")
    return found[0]


def select(like: str, agg: str, only=None, skip=()) -> list[Invariant]:
    """The invariants to run on a loss of family ``like`` aggregating with ``agg``: those that apply, restricted to
    ``only`` and without ``skip``. A name that is unknown, an ``only`` that does not apply, or a selection that
    leaves nothing is a ValueError that lists what applies."""
    chosen = [invariant_named(n).name for n in (only or ())]
    dropped = {invariant_named(n).name for n in skip}
    applicable = [inv for inv in INVARIANTS if applies(inv, like, agg)]
    names = ", ".join(inv.name for inv in applicable)
    for name in chosen:
        if name not in {inv.name for inv in applicable}:
            raise ValueError(f"property {name!r} does not apply to {like} ({agg}); those that do: {names}")
    selected = [inv for inv in applicable if (not chosen or inv.name in chosen) and inv.name not in dropped]
    if not selected:
        raise ValueError(f"only={chosen or 'all'} and skip={sorted(dropped)} leave no property to run for {like} "
                         f"({agg}); those that apply: {names}")
    return selected


# --------------------------------------------------------------------------- can the loss run at all


def describe(loss) -> str:
    """One line: how the kit calls ``loss``."""
    return getattr(loss, "how", None) or ("loss(batch, step) in the kit's convention: a micro-batch reads its step's "
                                          "normaliser from step.normalizer(agg)")


def preflight(loss, config: dict | None = None) -> None:
    """Run ``loss`` (kit convention) on plain batches; an UnusableLoss saying why when it runs on none of them."""
    tries = [dict(), dict(float_mask=True), dict(lengths=(3, 3, 3, 3), T=3, max_len=4),
             dict(lengths=(3, 3, 3, 3), T=3, max_len=4, float_mask=True)]
    reasons = []
    for options in tries:
        batch = plain_batch(**options)
        try:
            result = evaluate(loss, batch, **(config or {}))
        except Exception as e:  # noqa: BLE001 - whatever the loss raises is the reason it cannot be judged
            reasons.append((batch, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"))
            continue
        if torch.isfinite(result.loss):
            return
        reasons.append((batch, f"the loss is {result.loss.item()} with no junk anywhere"))
    batch, why = reasons[0]
    raise UnusableLoss(f"the loss cannot run on a plain batch (lengths {batch.lengths}, T={batch.T}, "
                       f"L_max={batch.max_len}, 0 at padding, a whole step), so no property can be judged: {why}")


# --------------------------------------------------------------------------- running and reporting


def check_loss(loss, like: str, *, agg: str | None = None, only=None, skip=(), normalizer: str | None = None,
               configs=None, max_examples=None, seed=None, database=None, tol=TIGHT,
               batch_options=None) -> list[Finding]:
    """Run every invariant that applies to family ``like`` on ``loss``; one Finding each.

    loss          any callable ``as_kit_loss`` accepts (the kit's convention, a minitepo objective, keyword tensors)
    agg           the aggregation the loss uses (default: the family's, e.g. token-mean for dapo)
    only, skip    property names to run / leave out (a selection that leaves none is a ValueError)
    normalizer    the keyword loss's parameter that takes the step's normaliser (see as_kit_loss)
    max_examples  examples per property (default: each check's own)

    Raises UnusableLoss when the loss cannot run on a plain batch (see preflight).
    """
    if like not in FAMILIES:
        raise ValueError(f"unknown loss family {like!r}; allowed: {', '.join(FAMILIES)}")
    if agg is not None and agg not in AGG_MODES:
        raise ValueError(f"unknown aggregation mode {agg!r}; allowed: {', '.join(AGG_MODES)}")
    agg = agg or objective_default(like, "agg")
    invariants = select(like, agg, only, skip)
    loss = as_kit_loss(loss, normalizer=normalizer, agg=agg, like=like)
    if configs is None:
        preflight(loss)
    findings = []
    for inv in invariants:
        kw = dict(configs=configs, seed=seed, database=database, tol=tol, batch_options=batch_options)
        if max_examples is not None:
            kw["max_examples"] = max_examples
        if inv.needs_agg:
            kw["agg"] = agg
        try:
            inv.check(loss, **kw)
            findings.append(Finding(inv.name, inv.spec, True, sentence=inv.sentence))
        except InvariantViolation as v:
            hints = list(v.hints)
            if inv.name in MICRO_BATCH_PROPERTIES:
                hints.append(normalizer_hint(loss, agg))
            if inv.name == "on-policy weights" and configs is None and not v.hints:
                hints.append(aggregation_hint(loss, agg))
            findings.append(Finding(inv.name, inv.spec, False, v.detail, sentence=inv.sentence,
                                    hints=tuple(h for h in hints if h)))
    return findings


def float32_sized(findings: list[Finding]) -> bool:
    """Whether every violation is a float32-sized difference (a looser tolerance would pass them all)."""
    bad = [f for f in findings if not f.holds]
    return bool(bad) and all(any("float32-sized" in h for h in f.hints) for f in bad)


def summary(findings: list[Finding]) -> str:
    """'10 of 11 properties hold; violated: masked junk', and the tolerance to use when every violation is
    float32-sized."""
    violated = [f.property for f in findings if not f.holds]
    line = f"{len(findings) - len(violated)} of {len(findings)} properties hold"
    if violated:
        line += f"; violated: {', '.join(violated)}"
    if float32_sized(findings):
        line += (f"\nhint: every violation is a float32-sized difference; if the loss computes in float32, "
                 f"rerun with {tolerance_flags(FLOAT32)}")
    return line


def explain(f: Finding, *, markdown: bool = False) -> str:
    """A violated property: its sentence, the shrunk example with the numbers that differ, and any hints."""
    body = "\n".join([f.example] + [f"hint: {h}" for h in f.hints])
    return f"{f.property} ({f.sentence}): minimal failing example\n" + (body if not markdown else f"```\n{body}\n```")


def format_findings(findings: list[Finding], *, markdown: bool = False, examples: bool = True) -> str:
    """A table: property, spec item, holds / VIOLATED; then each violation's shrunk example and hints."""
    width = max([len(f.property) for f in findings] + [8])
    lines = []
    if markdown:
        lines += ["| property | spec | verdict |", "|---|---|---|"]
        lines += [f"| {f.property} | {f.spec} | {'holds' if f.holds else '**VIOLATED**'} |" for f in findings]
    else:
        lines += [f"{'property':{width}s}  {'spec':9s}  verdict"]
        lines += [f"{f.property:{width}s}  {f.spec:9s}  {'holds' if f.holds else 'VIOLATED'}" for f in findings]
    if examples:
        lines += ["\n" + explain(f, markdown=markdown) for f in findings if not f.holds]
    return "\n".join(lines)


def findings_json(findings: list[Finding], **about) -> dict:
    """The verdicts as a JSON-ready dict: ``about`` (loss, family, ...), ``holds``, one entry per property."""
    props = [{**asdict(f), "meaning": f.sentence, "example": f.example or None, "hints": list(f.hints)}
             for f in findings]
    for p in props:
        del p["sentence"]
    return {**about, "holds": all(f.holds for f in findings),
            "violated": [f.property for f in findings if not f.holds], "float32_sized": float32_sized(findings),
            "properties": props}


class LossViolatesInvariants(AssertionError):
    """``assert_invariants`` failed; ``findings`` holds every verdict."""

    def __init__(self, message: str, findings: list[Finding]):
        super().__init__(message)
        self.findings = findings


def assert_invariants(loss, like: str, *, seed: int | None = 0, **options) -> list[Finding]:
    """Run ``check_loss`` and raise ``LossViolatesInvariants`` (an AssertionError) naming every violated property
    with its shrunk example and hints; return the findings when every property holds. For a project's own tests:

        def test_my_loss():
            assert_invariants(my_loss, like="dapo")

    ``seed`` is 0 so that CI sees the same examples every run (``seed=None`` draws fresh ones); ``options`` are
    check_loss's (``agg``, ``only``, ``skip``, ``normalizer``, ``tol``, ``max_examples``, ...)."""
    __tracebackhide__ = True                                               # pytest: the failure points at the test
    findings = check_loss(loss, like, seed=seed, **options)
    bad = [f for f in findings if not f.holds]
    if bad:
        name = getattr(loss, "__qualname__", getattr(loss, "__name__", repr(loss)))
        raise LossViolatesInvariants(f"{name}, checked as {like}: {summary(findings)}\n\n"
                                     + "\n\n".join(explain(f) for f in bad), findings)
    return findings
