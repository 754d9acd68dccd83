"""The invariants of spec section 8 as checks that take any loss.

Each ``check_*`` function states one equation-level property, draws random ragged batches with hypothesis,
and either returns quietly or raises ``InvariantViolation`` whose message holds hypothesis's *shrunk*
counter-example (the smallest batch it found that still breaks the property) and the numbers that differ.

    from minitepo.testing import check_micro_batches, objective
    check_micro_batches(objective("dapo"))           # quiet: the property holds on every batch drawn

Every check takes:

    loss          a callable in the kit's convention ``loss(batch, step, **config)`` (see adapters.py)
    configs       a hypothesis strategy of keyword dicts for the loss (its hyper-parameters), or a function
                  batch -> such a strategy; None: no keywords
    max_examples  how many batches hypothesis tries
    seed          an int for a reproducible run (None: hypothesis's own randomness, or the loaded profile's)
    database      where hypothesis keeps failing examples: None (default) writes nothing; a path or a
                  ``hypothesis.database`` object to remember them between runs
    tol           dict(rtol=..., atol=...) for "equal" (default TIGHT: float64 round-off)

``INVARIANTS`` lists them with the spec item each proves and the loss families it applies to; ``check_loss``
(verdicts.py) runs every one that applies to a family and returns a ``Finding`` per property.
"""
from __future__ import annotations

import contextlib
import math
import os
import tempfile
from dataclasses import dataclass

import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from minitepo.losses import OBJECTIVES
from minitepo.testing.adapters import evaluate
from minitepo.testing.batches import (FLOAT_TENSORS, JUNK, NONFINITE_JUNK, TOKEN_TENSORS, Batch, Step, batches,
                                      concat, fill_masked, policy_gradient_weights)
from minitepo.testing.hints import precision_hint

TIGHT = dict(rtol=1e-10, atol=1e-12)
"""'Equal' in float64: a few units of round-off."""


CURRENT_POLICY_INPUTS = ("entropy", "entropy_drop_score")
"""Inputs other than logp that a trainer computes from the current policy *with* its graph (TEPO's mask reads
them): gradient through them would reach the model. Old and reference log-probs and advantages come from no-grad
passes in every trainer, so a graph through them is harmless; ``inputs=FLOAT_TENSORS`` checks them too."""


class InvariantViolation(AssertionError):
    """A property failed; the message is hypothesis's shrunk counter-example with the numbers that differ, then
    any hint at the cause (``hints``)."""

    def __init__(self, prop: str, message: str, hints: tuple = ()):
        super().__init__(f"{prop} violated:\n{message}" + "".join(f"\nhint: {h}" for h in hints))
        self.property = prop
        self.detail = message
        self.hints = tuple(hints)


class _Violation(AssertionError):
    """Raised inside a property on one example; the runner turns the shrunk one into an InvariantViolation."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


# --------------------------------------------------------------------------- comparing, with the numbers


def _fail(what: str, batch: Batch, hint: str | None = None, **context):
    extra = "".join(f"\n{k}: {v}" for k, v in context.items() if v is not None)
    raise _Violation(f"{what}\nexample:\n{batch.summary()}{extra}", hint)


def _differ(a: torch.Tensor, b: torch.Tensor, tol: dict) -> str | None:
    """None when a and b are equal within tol; else where and by how much they differ."""
    a, b = a.detach().double(), b.detach().double()
    if a.shape != b.shape:
        return f"shapes {tuple(a.shape)} and {tuple(b.shape)}"
    if torch.equal(torch.isnan(a), torch.isnan(b)) and torch.allclose(a, b, equal_nan=True, **tol):
        return None
    diff = (a - b).abs().nan_to_num(float("inf"))
    if a.dim() == 0:
        return f"{a.item():.10g} vs {b.item():.10g} (|diff| {diff.item():.3g})"
    idx = tuple(int(i) for i in torch.unravel_index(diff.reshape(-1).argmax(), diff.shape))
    return (f"max |diff| {diff.max().item():.3g} at {idx if len(idx) > 1 else idx[0]}: "
            f"{a[idx].item():.10g} vs {b[idx].item():.10g}")


def _same(name: str, a, b, tol, batch, **context):
    where = _differ(a, b, tol)
    if where is not None:
        _fail(f"{name}: {where}", batch, hint=precision_hint(a, b, tol), **context)


def _finite(result, batch, keys=FLOAT_TENSORS, **context):
    if not torch.isfinite(result.loss):
        _fail(f"the loss is {result.loss.item()}", batch, **context)
    for key, g in result.grads.items():
        if key in keys and not torch.isfinite(g).all():
            _fail(f"the gradient w.r.t. {key} is not finite: {g.tolist()}", batch, **context)


# --------------------------------------------------------------------------- running a property with hypothesis


def _settings(max_examples: int, seed, database) -> settings:
    phases = [p for p in settings.default.phases if p != Phase.explain]   # "explain" traces coverage: slow
    return settings(settings.default, max_examples=max_examples, database=database, deadline=None, phases=phases,
                    derandomize=settings.default.derandomize and seed is None and database is None,
                    report_multiple_bugs=False,
                    print_blob=False, suppress_health_check=list(HealthCheck))


def _run(prop_name: str, body, *, max_examples: int, seed, database):
    """Run ``body(data)`` under hypothesis; the shrunk failure becomes an InvariantViolation."""
    if isinstance(database, str):
        from hypothesis.database import DirectoryBasedExampleDatabase
        database = DirectoryBasedExampleDatabase(database)

    def test(data):
        _drawn.clear()
        try:
            body(data)
        except _Violation:
            raise
        except Exception as e:  # the loss itself raised on this batch: a violation too, reported as such
            what = f"the loss raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            drawn = _drawn.get("batch")
            raise _Violation(what + (f"\nexample:\n{drawn.summary()}" if drawn is not None else "")) from e

    run = _settings(max_examples, seed, database)(given(data=st.data())(test))
    if seed is not None:
        run = hypothesis_seed(seed)(run)
    try:
        with _no_storage_in_the_working_tree():
            run()
    except _Violation as v:  # hypothesis re-raises the shrunk example's error last
        raise InvariantViolation(prop_name, str(v), (v.hint,) if v.hint else ()) from None


@contextlib.contextmanager
def _no_storage_in_the_working_tree():
    """Hypothesis caches things under ./.hypothesis (e.g. constants read from source), with or without a database;
    point its storage at a temporary folder for the run, unless the user chose a place
    ($HYPOTHESIS_STORAGE_DIRECTORY). A database given as a path is opened at that path, not under the storage."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    from hypothesis import configuration
    saved = getattr(configuration, "__hypothesis_home_directory", None)
    with tempfile.TemporaryDirectory(prefix="minitepo-hypothesis-") as tmp:
        configuration.set_hypothesis_home_dir(tmp)
        try:
            yield
        finally:
            configuration.set_hypothesis_home_dir(saved)


def _config(data, configs, batch):
    if configs is None:
        return {}
    strategy = configs if isinstance(configs, SearchStrategy) else configs(batch)
    return dict(data.draw(strategy, label="config"))


_drawn: dict = {}   # the batch of the example running now, for the report when the loss itself raises


def _batch(data, batch_options, **defaults):
    _drawn["batch"] = data.draw(batches(**{**defaults, **(batch_options or {})}), label="batch")
    return _drawn["batch"]


# --------------------------------------------------------------------------- the invariants


def check_permutation(loss, *, configs=None, max_examples=10, seed=None, database=None, tol=TIGHT,
                      batch_options=None):
    """Spec §8.1. Permuting the responses of a step (every tensor jointly) leaves the loss unchanged and permutes
    every gradient along."""
    def body(data):
        batch = _batch(data, batch_options)
        config = _config(data, configs, batch)
        perm = torch.tensor(data.draw(st.permutations(range(batch.B)), label="permutation"))
        before = evaluate(loss, batch, **config)
        after = evaluate(loss, batch.rows(perm), **config)
        ctx = dict(permutation=perm.tolist(), config=config or None)
        _same("loss after permuting the responses", after.loss, before.loss, tol, batch, **ctx)
        for key in before.grads:
            _same(f"gradient w.r.t. {key} after permuting", after.grads[key], before.grads[key][perm], tol, batch,
                  **ctx)

    _run("permutation", body, max_examples=max_examples, seed=seed, database=database)


def check_masked_junk(loss, *, inputs=CURRENT_POLICY_INPUTS, configs=None, max_examples=10, seed=None,
                      database=None, tol=TIGHT, batch_options=None):
    """Spec §8.2 and §1. Changing any value at a masked position (log-probs, entropies, advantages; +-1e4 included)
    changes neither the loss nor any gradient, both stay finite, and no padded position gets gradient. With +-inf or
    NaN junk (real log-probs hold -inf at padding) the same holds for the loss and the gradients that reach the
    model, w.r.t. logp and ``inputs`` (default: the current entropies); a gradient w.r.t. the old or reference
    log-probs or the advantages, which trainers compute without a graph, may turn NaN. ``inputs=FLOAT_TENSORS``
    makes it the strict form."""
    def body(data):
        batch = _batch(data, batch_options)
        config = _config(data, configs, batch)
        # each tensor gets its own junk, so that e.g. logp - old_logp at a padded position is junk too
        junk = {name: data.draw(st.sampled_from(JUNK + NONFINITE_JUNK), label=f"junk in {name}")
                for name in TOKEN_TENSORS}
        other = batch.replace(**{name: fill_masked(getattr(batch, name), batch.mask, value)
                                 for name, value in junk.items()})
        a, b = evaluate(loss, batch, **config), evaluate(loss, other, **config)
        ctx = dict(junk=f"padding refilled with {junk}", config=config or None)
        finite = all(math.isfinite(value) for value in junk.values())
        keys = FLOAT_TENSORS if finite else ("logp", *inputs)
        _finite(a, batch, **ctx)
        _finite(b, other, keys, **ctx)
        _same("loss after changing the junk at padding", b.loss, a.loss, tol, batch, **ctx)
        for key in keys:
            _same(f"gradient w.r.t. {key} after changing the junk", b.grads[key], a.grads[key], tol, batch, **ctx)
        padding = ~batch.bool_mask
        if (a.grad[padding] != 0).any():
            _fail(f"a padded position got gradient {a.grad[padding][a.grad[padding] != 0].tolist()}", batch, **ctx)

    _run("masked junk", body, max_examples=max_examples, seed=seed, database=database)


def check_padding_columns(loss, *, configs=None, max_examples=10, seed=None, database=None, tol=TIGHT,
                          batch_options=None):
    """Spec §8.2. Adding padding columns full of junk changes neither the loss nor any gradient (L_max, the
    response-length limit, is unchanged: it is not the padded width)."""
    def body(data):
        batch = _batch(data, batch_options)
        config = _config(data, configs, batch)
        extra = data.draw(st.integers(1, 3), label="extra columns")
        junk = data.draw(st.sampled_from(JUNK), label="junk")

        def widen(x):
            pad_value = 0 if x is batch.mask else junk
            return torch.cat([x, torch.full((x.shape[0], extra), pad_value, dtype=x.dtype)], dim=1)

        batch = batch.replace(max_len=batch.max_len + extra)    # so that the wide batch still fits in L_max
        wide = batch.map_tokens(widen)
        a, b = evaluate(loss, batch, **config), evaluate(loss, wide, **config)
        ctx = dict(padding=f"{extra} column(s) of {junk} added (T {batch.T} -> {wide.T})", config=config or None)
        _finite(b, wide, **ctx)
        _same("loss after adding padding columns", b.loss, a.loss, tol, batch, **ctx)
        for key in a.grads:
            got = b.grads[key][:, :batch.T] if a.grads[key].dim() == 2 else b.grads[key]
            _same(f"gradient w.r.t. {key} after adding padding columns", got, a.grads[key], tol, batch, **ctx)
        if (b.grad[:, batch.T:] != 0).any():
            _fail("a new padding column got gradient", batch, **ctx)

    _run("padding columns", body, max_examples=max_examples, seed=seed, database=database)


def check_empty_response(loss, *, configs=None, max_examples=10, seed=None, database=None, tol=TIGHT,
                         batch_options=None):
    """Spec §3 and §8.2. Adding a fully padded response (no real token, junk everywhere) changes neither the loss
    nor the other responses' gradients, and it gets none: it counts in neither N nor B'."""
    def body(data):
        batch = _batch(data, batch_options)
        config = _config(data, configs, batch)
        empty = batch.rows([0]).map_tokens(lambda x: torch.full_like(x, 1e4) if x.is_floating_point() else x)
        empty = empty.replace(mask=torch.zeros_like(batch.mask[:1]))
        bigger = concat(batch, empty)
        a, b = evaluate(loss, batch, **config), evaluate(loss, bigger, **config)
        ctx = dict(added="one response with no real token (row B)", config=config or None)
        _finite(b, bigger, **ctx)
        _same("loss after adding an empty response", b.loss, a.loss, tol, batch, **ctx)
        _same("gradient after adding an empty response", b.grad[:batch.B], a.grad, tol, batch, **ctx)
        if (b.grad[batch.B:] != 0).any():
            _fail("the empty response got gradient", batch, **ctx)

    _run("empty response", body, max_examples=max_examples, seed=seed, database=database)


def check_micro_batches(loss, *, equal=False, configs=None, max_examples=6, seed=None, database=None, tol=TIGHT,
                        batch_options=None):
    """Spec §3 and §8.3. Cutting an optimizer step into micro-batches (gradient accumulation), each told the step it
    belongs to: the summed loss and the concatenated gradient equal the full step's. ``equal=True`` cuts into K parts
    of equal row count only (as trainers with a fixed micro-batch size do); otherwise at any rows."""
    def body(data):
        # a step of one row cannot be cut; "any split" wants parts of different sizes, so at least three rows
        batch = _batch(data, batch_options, min_rows=2 if equal else 3)
        config = _config(data, configs, batch)
        if equal:
            sizes = [k for k in range(2, batch.B + 1) if batch.B % k == 0] or [1]
            k = data.draw(st.sampled_from(sizes), label="micro-batches")
            bounds = [i * batch.B // k for i in range(k + 1)]
        else:
            cuts = set(data.draw(st.sets(st.integers(1, max(1, batch.B - 1)), min_size=1, max_size=batch.B),
                                 label="cuts"))
            bounds = [0, *sorted(c for c in cuts if 0 < c < batch.B), batch.B]
            if len({hi - lo for lo, hi in zip(bounds, bounds[1:])}) == 1 and batch.B > 2:
                # equal parts are the other check's; a loss that is right only for them (it divides by its rows
                # times K) must meet an unequal split here
                bounds = bounds[:-2] + bounds[-1:] if len(bounds) > 3 else sorted({*bounds, 1})
        parts = len(bounds) - 1
        full = evaluate(loss, batch, Step.of(batch), **config)
        step = Step.of(batch, micro_batches=parts)
        results = [evaluate(loss, batch.rows(range(lo, hi)), step, **config) for lo, hi in zip(bounds, bounds[1:])]
        ctx = dict(micro_batches=f"rows {[(lo, hi) for lo, hi in zip(bounds, bounds[1:])]}, "
                                 f"real tokens {[int(batch.bool_mask[lo:hi].sum()) for lo, hi in zip(bounds, bounds[1:])]}",
                   config=config or None)
        _same("summed micro-batch loss vs full-step loss", sum(r.loss for r in results), full.loss, tol, batch, **ctx)
        for key in full.grads:
            _same(f"accumulated gradient w.r.t. {key} vs full step", torch.cat([r.grads[key] for r in results]),
                  full.grads[key], tol, batch, **ctx)

    _run("equal micro-batches" if equal else "micro-batches", body, max_examples=max_examples, seed=seed,
         database=database)


def check_token_order(loss, *, configs=None, max_examples=10, seed=None, database=None, tol=TIGHT,
                      batch_options=None):
    """Spec §8.11. Shuffling the positions inside each response (padding included, every (B, T) tensor jointly)
    leaves the loss unchanged and shuffles the gradients along (not for GTPO / GRPO-S: position-aligned shaping)."""
    def body(data):
        batch = _batch(data, batch_options)
        config = _config(data, configs, batch)
        perms = torch.stack([torch.tensor(data.draw(st.permutations(range(batch.T)), label=f"row {i} order"))
                             for i in range(batch.B)])                      # (B, T)
        shuffled = batch.map_tokens(lambda x: torch.gather(x, 1, perms))
        a, b = evaluate(loss, batch, **config), evaluate(loss, shuffled, **config)
        ctx = dict(orders=perms.tolist(), config=config or None)
        _same("loss after shuffling tokens", b.loss, a.loss, tol, batch, **ctx)
        for key in a.grads:
            if a.grads[key].dim() == 2:
                _same(f"gradient w.r.t. {key} after shuffling", b.grads[key], torch.gather(a.grads[key], 1, perms),
                      tol, batch, **ctx)

    _run("token order", body, max_examples=max_examples, seed=seed, database=database)


def check_constants(loss, *, inputs=CURRENT_POLICY_INPUTS, configs=None, max_examples=8, seed=None, database=None,
                    tol=TIGHT, batch_options=None):
    """Spec §6 (sg[.]). No gradient reaches ``inputs`` (default: the current entropies and TEPO's predicted score,
    which a trainer computes from the current policy): the mask and every weight are constants of the update.
    ``inputs=FLOAT_TENSORS`` makes it the strict form: only logp receives gradient."""
    def body(data):
        batch = _batch(data, batch_options, perturb=0.3)
        config = _config(data, configs, batch)
        result = evaluate(loss, batch, **config)
        for key, g in result.grads.items():
            if key != "logp" and key in inputs and (g != 0).any():
                _fail(f"gradient flowed into {key}: {g.tolist()}", batch, config=config or None)

    _run("constants", body, max_examples=max_examples, seed=seed, database=database)


def check_zero_advantage(loss, *, configs=None, max_examples=8, seed=None, database=None, tol=TIGHT,
                         batch_options=None):
    """Spec §8.4. A response whose advantage is 0 (an all-equal group's) gets exactly zero gradient, however far
    off-policy. The reference log-probs are set to the current ones, so a k3 or k2 reference KL is inert."""
    def body(data):
        batch = _batch(data, batch_options, perturb=1.0)
        config = _config(data, configs, batch)
        zero = torch.tensor(data.draw(st.lists(st.booleans(), min_size=batch.B, max_size=batch.B), label="A=0 rows"))
        batch = batch.sequence_advantages_everywhere(torch.where(zero, 0.0, batch.seq_adv))
        batch = batch.replace(ref_logp=batch.logp, old_entropy=batch.entropy + 1.0)   # entropy fell everywhere
        result = evaluate(loss, batch, **config)
        if (result.grad[zero] != 0).any():
            _fail(f"rows {torch.nonzero(zero).flatten().tolist()} have A = 0 but got gradient "
                  f"{result.grad[zero].tolist()}", batch, config=config or None)

    _run("zero advantage", body, max_examples=max_examples, seed=seed, database=database)


def check_on_policy_weights(loss, *, agg: str, configs=None, max_examples=10, seed=None, database=None, tol=TIGHT,
                            batch_options=None):
    """Spec §8.5 and §3. On-policy (logp = old_logp = ref_logp everywhere, entropies unchanged, no empty response, so no ratio is clipped, no KL
    and no TEPO mask acts) the gradient is the plain policy gradient with the aggregation's weights:
    d L / d logp_it = -A_i w_i, w_i = 1/N (token-mean), 1/(B'|o_i|) (seq-mean-token-mean), 1/B'
    (seq-mean-token-sum) or 1/(B L_max) (seq-mean-token-sum-norm). So TEPO and DAPO share it (§8.5)."""
    def body(data):
        batch = _batch(data, batch_options, perturb=0.0, empty_rows=False)
        config = _config(data, configs, batch)
        batch = batch.sequence_advantages_everywhere()
        batch = batch.replace(old_logp=batch.logp, ref_logp=batch.logp,
                              old_entropy=batch.entropy, entropy_drop_score=-batch.entropy_drop_score.abs() - 1)
        result = evaluate(loss, batch, **config)
        expected = -batch.seq_adv[:, None] * policy_gradient_weights(batch, agg)
        _same(f"on-policy gradient vs -A_i w_i ({agg})", result.grad, expected, tol, batch, config=config or None)

    _run("on-policy weights", body, max_examples=max_examples, seed=seed, database=database)


def check_clip(loss, *, configs=None, max_examples=8, seed=None, database=None, tol=TIGHT, batch_options=None,
               push: float = 2.0):
    """Spec §1, §6 and §8.7. Every real token whose log-ratio is pushed ``push`` nats past 0 in its advantage's
    direction (up for A > 0, down for A < 0: far outside any clip range) gets exactly zero gradient: the clipped
    branch is flat. The reference equals the current policy and the entropies did not change (no KL acts)."""
    def body(data):
        batch = _batch(data, batch_options, empty_rows=False)
        config = _config(data, configs, batch)
        adv = torch.where(batch.seq_adv == 0, 1.0, batch.seq_adv)
        shift = torch.where(adv > 0, push, -push)[:, None]
        batch = batch.sequence_advantages_everywhere(adv)
        batch = batch.replace(old_logp=fill_masked(batch.logp - shift, batch.mask, batch.old_logp),
                              ref_logp=batch.logp, old_entropy=batch.entropy,
                              entropy_drop_score=-batch.entropy_drop_score.abs() - 1)
        result = evaluate(loss, batch, **config)
        if (result.grad != 0).any():
            _fail(f"a token clipped in its advantage's direction got gradient: {result.grad.tolist()}", batch,
                  config=config or None)

    _run("clip", body, max_examples=max_examples, seed=seed, database=database)


def check_mask_containment(loss, *, configs=None, max_examples=10, seed=None, database=None, tol=TIGHT,
                           batch_options=None):
    """Spec §6 and §8.8 (TEPO). The entropy mask acts only on real tokens with A_i > 0 whose entropy fell
    (H < H_old, or the predicted score S > 0): against the same batch with the mask emptied (H_old = H, S < 0),
    the gradient differs nowhere else."""
    def body(data):
        batch = _batch(data, batch_options, perturb=0.3).sequence_advantages_everywhere()
        config = _config(data, configs, batch)
        empty = batch.replace(old_entropy=batch.entropy, entropy_drop_score=-batch.entropy_drop_score.abs() - 1)
        with_mask, without = evaluate(loss, batch, **config), evaluate(loss, empty, **config)
        fell = (batch.entropy < batch.old_entropy) | (batch.entropy_drop_score > 0)
        allowed = batch.bool_mask & (batch.seq_adv > 0)[:, None] & fell
        moved = (with_mask.grad - without.grad) != 0
        if (moved & ~allowed).any():
            _fail(f"the mask changed the gradient outside {{A>0}} & {{entropy fell}} & {{m=1}} at "
                  f"{torch.nonzero(moved & ~allowed).tolist()}", batch, config=config or None)

    _run("mask containment", body, max_examples=max_examples, seed=seed, database=database)


# --------------------------------------------------------------------------- the registry and check_loss


@dataclass(frozen=True)
class Invariant:
    name: str
    spec: str  # the spec/ALGORITHMS.md item it proves
    sentence: str
    check: object
    families: tuple = tuple(OBJECTIVES)  # the loss families it applies to
    needs_agg: bool = False
    skip_aggs: tuple = ()  # aggregation modes it does not apply to


POSITION_ALIGNED = ("gtpo", "grpo_s")
"""Families whose token shaping is aligned by position (§8.11: not token-order invariant)."""
NOT_CLIPPED = ("cispo", "sapo")
"""Families that are not clipped surrogates: CISPO clips a stop-gradient weight and SAPO gates softly, so a ratio
far outside the range still gets gradient, by design (the clip property does not apply)."""

INVARIANTS = (
    Invariant("permutation", "§8.1", "permuting responses changes neither loss nor gradients", check_permutation),
    Invariant("masked junk", "§8.2", "values at masked positions change nothing and stay finite", check_masked_junk),
    Invariant("padding columns", "§8.2", "extra padding columns change nothing", check_padding_columns),
    Invariant("empty response", "§3, §8.2", "a fully padded response counts nowhere", check_empty_response,
              skip_aggs=("seq-mean-token-sum-norm",)),   # C = B * L_max counts every row by definition
    Invariant("micro-batches", "§3, §8.3", "accumulating any micro-batch split gives the full-step gradient",
              check_micro_batches),
    Invariant("equal micro-batches", "§3, §8.3", "accumulating equal-size micro-batches gives the full-step gradient",
              lambda loss, **kw: check_micro_batches(loss, equal=True, **kw)),
    Invariant("token order", "§8.11", "shuffling tokens inside a response changes nothing", check_token_order,
              families=tuple(f for f in OBJECTIVES if f not in POSITION_ALIGNED)),
    Invariant("constants", "§6", "no gradient reaches the current entropies (the mask is a constant)",
              check_constants),
    Invariant("zero advantage", "§8.4", "a response with A = 0 gets zero gradient", check_zero_advantage),
    Invariant("on-policy weights", "§8.5, §3", "on-policy gradient is -A_i times the aggregation weight",
              check_on_policy_weights, needs_agg=True),
    Invariant("clip", "§1, §8.7", "a ratio pushed past the clip edge in A's direction gets zero gradient",
              check_clip, families=tuple(f for f in OBJECTIVES if f not in NOT_CLIPPED)),
    Invariant("mask containment", "§8.8", "TEPO's mask acts only on A>0 tokens whose entropy fell",
              check_mask_containment, families=("tepo",)),
)
FAMILIES = tuple(OBJECTIVES)
"""The loss families a user can name (``--like``): minitepo's objectives."""


def applies(inv: Invariant, like: str, agg: str) -> bool:
    """Whether invariant ``inv`` applies to a loss of family ``like`` aggregating with ``agg``."""
    return like in inv.families and agg not in inv.skip_aggs


__all__ = ["TIGHT", "InvariantViolation", "Invariant", "INVARIANTS", "FAMILIES", "applies", "policy_gradient_weights",
           "check_permutation", "check_masked_junk", "check_padding_columns", "check_empty_response",
           "check_micro_batches", "check_token_order", "check_constants", "check_zero_advantage",
           "check_on_policy_weights", "check_clip", "check_mask_containment", "CURRENT_POLICY_INPUTS"]
