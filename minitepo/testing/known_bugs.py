"""Losses with known bugs, the kit's yardstick: each must be caught by the properties it names, on every run.

Three are public bugs rebuilt from the one-line descriptions they are known by (written here from the description,
not copied), one is TRL's loss_type=grpo as docs/testing-kit.md reports it, the others are planted the way such bugs
are written. Each is DAPO / GRPO / Dr. GRPO / TEPO with one mistake:

    bug                      from       caught by                       the mistake
    per_micro_batch_norm     trl#3021   micro-batches (both)            each micro-batch divides by its own tokens
    token_sum_as_token_mean  verl#911   on-policy weights               seq-mean-token-sum computed as token-mean
    dr_grpo_padded_width     verl#3741  padding columns, on-policy w.   C = B * T (the padded width), not B * L_max
    empty_rows_counted       planted    empty response                  a per-response mean over every row, B not B'
    rows_times_k             TRL grpo   micro-batches (any split)       divides a micro-batch by its rows times K
    width_mean_tepo          planted    padding columns                 s_i averages the log-ratios over T, not |o_i|
    exp_then_mask            planted    masked junk                     masks after exp: 0 * inf = NaN
    mask_by_multiplying      planted    masked junk                     (logp - old) * m before exp: -inf * 0 = NaN
    entropy_weighted         planted    constants                       weights tokens by an entropy with its graph
    recentred_advantages     planted    zero advantage                  re-centres A inside the loss
    upper_clip_only          planted    clip                            clips the ratio above only

    minitepo check-loss minitepo.testing.known_bugs:per_micro_batch_norm --like dapo

tests/test_check_loss_catch_rate.py runs each one with 20 seeds and asserts 20 catches of 20.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from minitepo.testing.batches import Batch, Step

EPS_LOW, EPS_HIGH = 0.2, 0.28


def _clipped(ratio: torch.Tensor, adv: torch.Tensor, low: float = 1 - EPS_LOW, high: float = 1 + EPS_HIGH):
    """lambda(rho, A) = -min(rho A, clip(rho, 1-eps_l, 1+eps_h) A) per token (spec §1). adv (B,) or (B, T)."""
    adv = adv[:, None] if adv.dim() == 1 else adv
    return torch.maximum(-ratio * adv, -ratio.clamp(low, high) * adv)        # (B, T)


def _ratio(batch: Batch) -> torch.Tensor:
    """exp of the log-ratio, masked positions zeroed before exp (spec §1): the right way."""
    m = batch.bool_mask
    return torch.exp(torch.where(m, batch.logp - batch.old_logp, 0.0).clamp(-20, 20))


def _token_sum(batch: Batch) -> torch.Tensor:
    return torch.where(batch.bool_mask, _clipped(_ratio(batch), batch.seq_adv), 0.0).sum()


def per_micro_batch_norm(batch: Batch, step: Step | None):
    """DAPO whose micro-batch divides by its own real tokens, whatever the step (trl#3021: the accumulated gradient
    weighs a token by 1/(K N_k) instead of 1/N)."""
    return _token_sum(batch) / max(int(batch.bool_mask.sum()), 1)


def token_sum_as_token_mean(batch: Batch, step: Step | None):
    """Asked for seq-mean-token-sum (each response's token sum, averaged over responses: 1/B'), it computes the
    token-mean 1/N (verl#911)."""
    return _token_sum(batch) / (step or Step.of(batch)).n_tokens


def dr_grpo_padded_width(batch: Batch, step: Step | None):
    """Dr. GRPO's constant C taken as B * T, the tensor's width, instead of B * L_max, the response-length limit
    (verl#3741): one more padding column changes the loss."""
    return _token_sum(batch) / ((step or Step.of(batch)).n_rows * batch.T)


def empty_rows_counted(batch: Batch, step: Step | None):
    """GRPO's per-response mean divided by every row, B, instead of B', the responses with a real token."""
    m = batch.bool_mask
    per_token = torch.where(m, _clipped(_ratio(batch), batch.seq_adv), 0.0)
    per_response = per_token.sum(-1) / m.sum(-1).clamp(min=1)                 # (B,)
    return per_response.sum() / (step or Step.of(batch)).n_rows


def rows_times_k(batch: Batch, step: Step | None):
    """GRPO's per-response mean divided by the micro-batch's rows times the number of micro-batches K, as TRL's
    loss_type=grpo does (docs/testing-kit.md): right when every part has the same rows, wrong for unequal parts."""
    m = batch.bool_mask
    per_token = torch.where(m, _clipped(_ratio(batch), batch.seq_adv), 0.0)
    per_response = per_token.sum(-1) / m.sum(-1).clamp(min=1)                 # (B,)
    return per_response.sum() / (batch.B * (step.micro_batches if step else 1))


def width_mean_tepo(logp, old_logp, advantages, mask):
    """TEPO's policy term with s_i averaged over the padded width T instead of |o_i| (lesson 8's suspect)."""
    m = mask.bool()
    x = torch.where(m, logp - old_logp, torch.zeros_like(logp))
    s = torch.exp(x.mean(-1))
    s_tok = s.detach()[:, None] * torch.exp(logp - logp.detach())
    lam = _clipped(s_tok, advantages)
    return torch.where(m, lam, torch.zeros_like(lam)).sum() / m.sum()


def exp_then_mask(logp, old_logp, advantages, mask):
    """DAPO that masks after exp: junk at padding overflows, and 0 * inf is NaN."""
    m = mask.to(logp.dtype)
    return (_clipped(torch.exp(logp - old_logp), advantages) * m).sum() / m.sum()


def mask_by_multiplying(logp, old_logp, advantages, mask):
    """DAPO that masks the log-ratio by multiplying before exp: right for every finite junk value, NaN when padding
    holds -inf or NaN (-inf * 0 = NaN), as real log-prob tensors do."""
    m = mask.to(logp.dtype)
    ratio = torch.exp((logp - old_logp) * m)
    return (_clipped(ratio, advantages) * m).sum() / m.sum()


def entropy_weighted(batch: Batch, step: Step | None):
    """Weights each token by the current entropy without detaching it: gradient leaks into the entropy."""
    m = batch.bool_mask
    w = torch.where(m, batch.entropy, 0.0)
    return -(w * _ratio(batch) * batch.seq_adv[:, None]).sum() / (step or Step.of(batch)).n_tokens


def recentred_advantages(batch: Batch, step: Step | None):
    """DAPO that re-centres the advantages over the batch inside the loss: a response with A = 0 gets gradient."""
    adv = batch.seq_adv - batch.seq_adv.mean()
    per_token = torch.where(batch.bool_mask, _clipped(_ratio(batch), adv), 0.0)
    return per_token.sum() / (step or Step.of(batch)).n_tokens


def upper_clip_only(batch: Batch, step: Step | None):
    """DAPO that clips the ratio above only: a ratio pushed far below 1 - eps_low with A < 0 keeps its gradient."""
    per_token = _clipped(_ratio(batch), batch.seq_adv, low=0.0)
    return torch.where(batch.bool_mask, per_token, 0.0).sum() / (step or Step.of(batch)).n_tokens


@dataclass(frozen=True)
class KnownBug:
    loss: object
    like: str  # the family it claims to be
    caught_by: tuple  # the properties that must catch it, every run
    source: str  # "trl#3021", "verl#911", ... or "planted"
    agg: str | None = None  # the aggregation it claims, when not the family's

    @property
    def name(self) -> str:
        return self.loss.__name__


KNOWN_BUGS = (
    KnownBug(per_micro_batch_norm, "dapo", ("micro-batches", "equal micro-batches"), "trl#3021"),
    KnownBug(token_sum_as_token_mean, "dapo", ("on-policy weights",), "verl#911", agg="seq-mean-token-sum"),
    KnownBug(dr_grpo_padded_width, "dr_grpo", ("padding columns", "on-policy weights"), "verl#3741"),
    KnownBug(empty_rows_counted, "grpo", ("empty response",), "planted"),
    KnownBug(rows_times_k, "grpo", ("micro-batches",), "TRL grpo"),
    KnownBug(width_mean_tepo, "tepo", ("padding columns",), "planted"),
    KnownBug(exp_then_mask, "dapo", ("masked junk",), "planted"),
    KnownBug(mask_by_multiplying, "dapo", ("masked junk",), "planted"),
    KnownBug(entropy_weighted, "dapo", ("constants",), "planted"),
    KnownBug(recentred_advantages, "dapo", ("zero advantage",), "planted"),
    KnownBug(upper_clip_only, "dapo", ("clip",), "planted"),
)
