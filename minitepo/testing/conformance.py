"""The conformance table: each loss TRL and verl ship beside the minitepo objective it claims to be, compared.

    python -m minitepo.testing.conformance                               # the page, to standard output (~20 s)
    python -m minitepo.testing.conformance --write docs/conformance.md   # rewrite the committed page
    python -m minitepo.testing.conformance --check docs/conformance.md   # exit 1 if a rerun differs from it

Every pair is run through the kit's harnesses (``verl_policy_loss``, ``trl_grpo_loss``: what each framework does
around its loss, nothing more) on the same seeded batches, and asked three questions:

1. **whole step**: on every batch, do the two give the same loss and the same gradient d loss / d logp, to 1e-6
   (relative to the larger of 1 and the value)?
2. **micro-batches**: cut into K = 2 micro-batches, each given the step's counts as its framework receives them
   (verl's ``global_batch_info``, TRL's ``num_items_in_batch`` and accumulation steps), do the parts still agree?
3. **the kit**: which of the invariants of spec §8 that apply to the objective does the peer violate
   (``check_loss``, seed 0), with hypothesis's smallest failing batch for each?

The batches are drawn by the kit's ``batches`` strategy, derandomized, so the page regenerates byte for byte on one
machine with the pinned versions (TRL 1.16.0, verl 0.9.1: ci/integrations-lock.txt). Needs the verl and trl extras.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
from hypothesis import HealthCheck, given, settings

from minitepo.losses import OBJECTIVES
from minitepo.testing.adapters import evaluate, objective, trl_grpo_loss, verl_policy_loss
from minitepo.testing.batches import Batch, Step, batches
from minitepo.testing.verdicts import check_loss

TOL = 1e-6
EXAMPLES = 40
"""Batches per pair for the whole-step and micro-batch comparisons."""


@dataclass
class Pair:
    peer: str                  # e.g. "verl vanilla, token-mean"
    framework: str             # "verl" or "trl"
    make: object               # () -> the peer loss in the kit's convention
    objective: str             # the minitepo objective it is compared with
    settings: dict = field(default_factory=dict)   # the objective's keywords that match the peer's configuration
    config: str = ""           # the peer's configuration, in words


def _verl(mode: str, agg: str, loss_scale_factor=None, **actor):
    def make():
        from verl.trainer.ppo.core_algos import get_policy_loss_fn

        from minitepo.testing.frameworks import verl_actor_config
        config = dataclasses.replace(verl_actor_config(actor.pop("clip_ratio_low", 0.2),
                                                       actor.pop("clip_ratio_high", 0.28)), **actor)
        return verl_policy_loss(get_policy_loss_fn(mode), config, agg, loss_scale_factor=loss_scale_factor)
    return make


_TRAINER = []


def _trl(loss_type: str, gmpo: bool = False, **attributes):
    """TRL's GRPOTrainer loss (or the experimental GMPOTrainer's) with the trainer's ``attributes`` set for each call."""
    def make():
        from minitepo.testing.frameworks import trl_compute_loss, trl_trainer
        if not _TRAINER:
            _TRAINER.append(trl_trainer())
        trainer = _TRAINER[0]
        compute = trl_compute_loss(trainer, loss_type, gmpo=gmpo, **attributes)
        return trl_grpo_loss(trainer, loss_type, compute_loss=compute)
    return make


PAIRS = (
    Pair("verl vanilla, token-mean", "verl", _verl("vanilla", "token-mean"), "dapo",
         dict(eps_low=0.2, eps_high=0.28, dual_clip=3.0), "clip 0.2 / 0.28, dual clip 3"),
    Pair("verl vanilla, seq-mean-token-mean", "verl", _verl("vanilla", "seq-mean-token-mean"), "grpo",
         dict(eps_low=0.2, eps_high=0.28, dual_clip=3.0, beta=0.0), "clip 0.2 / 0.28, dual clip 3, no KL"),
    Pair("verl vanilla, seq-mean-token-sum-norm, loss_scale_factor = L_max", "verl",
         _verl("vanilla", "seq-mean-token-sum-norm", "max_len"), "dr_grpo", dict(eps_low=0.2, eps_high=0.28, dual_clip=3.0),
         "clip 0.2 / 0.28, dual clip 3"),
    Pair("verl vanilla, seq-mean-token-sum-norm (default scale: the padded width)", "verl",
         _verl("vanilla", "seq-mean-token-sum-norm"), "dr_grpo", dict(eps_low=0.2, eps_high=0.28, dual_clip=3.0),
         "clip 0.2 / 0.28, dual clip 3"),
    Pair("verl gspo", "verl", _verl("gspo", "seq-mean-token-mean", clip_ratio_low=3e-4, clip_ratio_high=4e-4), "gspo",
         {}, "clip 3e-4 / 4e-4"),
    Pair("verl cispo, token-mean", "verl", _verl("cispo", "token-mean"), "cispo",
         dict(is_clip="both", eps_low=0.2, eps_high=0.28), "clip 0.2 / 0.28"),
    Pair("verl sapo", "verl", _verl("sapo", "seq-mean-token-mean", tau_pos=1.0, tau_neg=1.05), "sapo", {},
         "tau 1.0 / 1.05"),
    Pair("verl geo_mean, seq-mean-token-mean", "verl",
         _verl("geo_mean", "seq-mean-token-mean", clip_ratio_low=0.4, clip_ratio_high=0.4), "gmpo", {},
         "clip 0.4 / 0.4 (log space)"),
    Pair("TRL grpo", "trl", _trl("grpo"), "grpo", dict(eps_low=0.2, eps_high=0.2, beta=0.0), "epsilon 0.2, beta 0"),
    Pair("TRL bnpo", "trl", _trl("bnpo"), "dapo", dict(eps_low=0.2, eps_high=0.2), "epsilon 0.2"),
    Pair("TRL dr_grpo", "trl", _trl("dr_grpo"), "dr_grpo", dict(eps_low=0.2, eps_high=0.2), "epsilon 0.2"),
    Pair("TRL dapo", "trl", _trl("dapo"), "dapo", dict(eps_low=0.2, eps_high=0.2), "epsilon 0.2"),
    Pair("TRL cispo", "trl", _trl("cispo", epsilon_high=5.0), "cispo", dict(eps_high=4.0),
         "epsilon_high 5.0 (the weight's cap)"),
    Pair("TRL sapo", "trl", _trl("sapo"), "sapo", {}, "temperatures 1.0 / 1.05"),
    Pair("TRL experimental GMPO", "trl", _trl("grpo", gmpo=True, epsilon_low=0.4, epsilon_high=0.4), "gmpo", {},
         "epsilon 0.4 / 0.4 (log space)"),
)
"""Each pair's configurations agree on every hyper-parameter; a difference the page reports is one of behaviour."""


def _worst(found: dict, key: str, a: torch.Tensor, b: torch.Tensor, batch: Batch) -> None:
    scale = max(1.0, float(b.abs().max()) if b.numel() else 1.0)
    both_nan = torch.isnan(a) & torch.isnan(b)
    gap = torch.where(both_nan, 0.0, (a - b).abs()).nan_to_num(nan=float("inf")).max().item() / scale
    if gap > found.get(key, (0.0, None))[0]:
        found[key] = (gap, batch)


def compare(pair: Pair, peer, examples: int = EXAMPLES) -> dict:
    """The largest relative difference (loss and gradient) over ``examples`` seeded batches, with the batch where it
    occurred, for three cases: ``"whole"`` (the whole step, every response with a real token), ``"empty"`` (the
    whole step, some responses empty) and ``"micro"`` (every response non-empty, K = 2 micro-batches)."""
    ours = objective(pair.objective)
    found: dict = {}

    def both(key, batch, step=None):
        theirs, mine = evaluate(peer, batch, step), evaluate(ours, batch, step, **pair.settings)
        _worst(found, key, theirs.loss, mine.loss, batch)
        _worst(found, key, theirs.grad, mine.grad, batch)

    def run(strategy, body):
        settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                 suppress_health_check=list(HealthCheck))(given(strategy)(body))()

    def whole_and_micro(batch):
        both("whole", batch)
        step = Step.of(batch, micro_batches=2)
        for rows in torch.arange(batch.B).tensor_split(2):
            both("micro", batch.rows(rows), step)

    run(batches(min_rows=2, empty_rows=False), whole_and_micro)
    run(batches(min_rows=2).filter(lambda b: 0 in b.lengths), lambda batch: both("empty", batch))
    return found


def verdict(found: dict, key: str) -> str:
    gap = found.get(key, (0.0, None))[0]
    return f"equal to {TOL:g}" if gap <= TOL else f"**differ**: {gap:.1e}"


def run_pair(pair: Pair, examples: int = EXAMPLES) -> dict:
    """One row of the table: the pair's comparisons and the kit's findings on the peer."""
    peer = pair.make()
    found = compare(pair, peer, examples)
    findings = check_loss(peer, like=pair.objective, seed=0)
    return dict(pair=pair, found=found, findings=findings)


def versions() -> str:
    import trl
    import verl
    return f"TRL {trl.__version__}, verl {verl.__version__}, torch {torch.__version__.split('+')[0]}"


def page(rows: list[dict]) -> str:
    """The markdown page for ``rows`` (``run_pair``'s)."""
    peerless = sorted(set(OBJECTIVES) - {r["pair"].objective for r in rows})
    lines = [
        "# Conformance: minitepo's objectives against TRL's and verl's",
        "",
        "<!-- Generated by `python -m minitepo.testing.conformance --write docs/conformance.md`; do not edit. -->",
        "",
        f"Each loss that TRL or verl ships, run beside the minitepo objective with the same hyper-parameters on "
        f"{EXAMPLES} seeded batches of the invariant kit for each column ({versions()}). **Whole step**: the loss "
        f"and its gradient d loss / d logp, largest difference relative to max(1, |minitepo's|), on batches whose "
        f"every response has a real token. **With empty responses**: the same on batches where some response has "
        f"none (minitepo's per-response means divide by B', the responses with a token; a framework that divides by "
        f"every row differs there). **Micro-batches**: every batch cut into 2 micro-batches that receive the step's "
        f"counts as the framework does, each compared. **Invariants**: the "
        f"properties of spec §8 that apply to the objective and that the peer violates, found by "
        f"[`check-loss`](testing-kit.md) with seed 0 (its smallest failing batch for each is below). How to read "
        f"a difference, and what each framework chose: [objectives.md](objectives.md).",
        "",
        "| peer loss | its configuration | minitepo objective | whole step | with empty responses | micro-batches "
        "(K = 2) | invariants it violates |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p, found = r["pair"], r["found"]
        settings_text = ", ".join(f"{k}={v!r}" for k, v in p.settings.items()) or "defaults"
        violated = [f.property for f in r["findings"] if not f.holds]
        lines.append(f"| {p.peer} | {p.config} | `{p.objective}` ({settings_text}) | {verdict(found, 'whole')} | "
                     f"{verdict(found, 'empty')} | {verdict(found, 'micro')} | {', '.join(violated) or 'none'} |")
    lines += ["", f"Objectives with no peer in either framework: {', '.join(f'`{n}`' for n in peerless)}.", ""]
    for r in rows:
        bad = [f for f in r["findings"] if not f.holds]
        gaps = [(k, v) for k, v in sorted(r["found"].items()) if v[0] > TOL]
        if not bad and not gaps:
            continue
        lines += [f"## {r['pair'].peer} (against `{r['pair'].objective}`)", ""]
        for key, (gap, batch) in gaps:
            what = {"whole": "whole-step", "empty": "with-empty-responses", "micro": "micro-batch"}[key]
            lines += [f"Largest {what} difference {gap:.3e}, on:", "",
                      "```", batch.summary(), "```", ""]
        for f in bad:
            lines += [f"**{f.property}** ({f.sentence}):", "", "```", f.example, "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minitepo.testing.conformance",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", metavar="PATH", help="write the page here")
    parser.add_argument("--check", metavar="PATH", help="exit 1 if the page a rerun makes differs from this file")
    parser.add_argument("--only", default=None, help="peer labels containing this text (e.g. 'verl'); the page is "
                                                     "then partial, so --write and --check refuse it")
    args = parser.parse_args(argv)
    pairs = [p for p in PAIRS if args.only is None or args.only in p.peer]
    if not pairs:
        parser.error(f"no pair's peer contains {args.only!r}; the peers are: {', '.join(p.peer for p in PAIRS)}")
    if args.only and (args.write or args.check):
        parser.error("--only makes a partial page: it cannot be written or checked")
    text = page([run_pair(p) for p in pairs])
    if args.check:
        committed = Path(args.check).read_text()
        if committed != text:
            print(f"{args.check} differs from a rerun: python -m minitepo.testing.conformance --write {args.check}")
            return 1
        print(f"{args.check} matches a rerun")
        return 0
    if args.write:
        Path(args.write).write_text(text)
        print(f"wrote {args.write}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
