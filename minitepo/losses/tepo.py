"""TEPO (Token-level Policy Optimization, arXiv 2510.09369 v1 / 2604.12736 v2): minitepo's reading, spec §6.

The whole objective is ``tepo_loss`` below; ``tepo_mask`` is its KL mask over plain tensors, for looking at.
At its defaults, everything it computes is in this file (the input checks aside): the ratio and its clip, the mask,
the token-mean and k3 (``token_mean``, ``k3``: the general forms of these two, for every objective, are
``common.aggregate`` and ``common.kl_penalty``; a test keeps them equal to the bit). The non-default switches (the
other aggregations, the "sequence" clip, the other mask estimators, a reference KL) use ``common.py``'s pieces.
What the public text fixes: (1) a sequence-level likelihood ratio (the length-normalised geometric mean s_i; v1
calls it "Markov likelihood") ties the group reward to each token, and the loss is aggregated at the token level;
(2) a token-level KL mask on tokens with positive advantage and decreasing entropy damps abrupt updates.
Everything else is a reading, and a switch (a named branch in the code):

    ratio_clip      "token_log" (default, GMPO-style) | "sequence" (GSPO-token's s_it, clipped with eps)
    mask_criterion  "measured" (default) | "predicted" | "positive" | "none"
    mask_action     "kl" (default: add beta_M M k to the old policy) | "gate" (a masked token loses its gradient)
    mask_kl         "k3" (default) | "k1_abs" | "k2"

Shape legend: B responses, T padded response width; A_it the (B, T) advantages, 0 at padding.
"""

from __future__ import annotations

import inspect

import torch

from .checks import (TEPO_MASK_ACTIONS, TEPO_MASK_CRITERIA, TEPO_MASK_KL, TEPO_RATIO_CLIPS, check_mask,
                     check_mask_inputs, check_mask_options, check_normalizer, check_tepo_args, checked_per_token,
                     checked_tensors, compute_dtype, plain_tensors)
from .common import (EPS, EPS_HIGH_DAPO, LOG_RATIO_CLAMP, aggregate_clean, clipped_surrogate, kl_penalty, register,
                     routed_ratio)

TEPO_DELTA = 0.4
"""The token_log clip range delta_low = delta_high, in nats: GMPO's e^{+-0.4} (arXiv 2507.20673)."""

# The sampler records old entropies with a KV cache, one token at a time; a loss recomputes them in one
# teacher-forced pass. Same weights, different summation order: in float32 the two differ by ~1e-6 nats.
# Without a guard, TEPO's "entropy decreased" test would flag about half the positive-advantage tokens
# on the first update (theta = theta_old) from round-off alone. Pass mask_tol=0 for the spec's exact criterion.
TEPO_MASK_TOL = 1e-4
"""Round-off guard for the "measured" criterion, in nats: entropy must drop by more than this to count."""

__all__ = ["TEPO_DELTA", "TEPO_MASK_TOL", "TEPO_MASK_ACTIONS", "TEPO_MASK_CRITERIA", "TEPO_MASK_KL", "TEPO_RATIO_CLIPS",
           "tepo_loss", "tepo_mask", "TEPO_DEFAULTS"]


def entropy_decreased(criterion: str, m: torch.Tensor, entropy, old_entropy, tol: float, score) -> torch.Tensor:
    """"Entropy decreased at (i, t)", the condition of TEPO's mask, on checked (B, T) tensors.   (B, T) bool"""
    if criterion == "measured":   # H_theta_it < H_old_it - tol
        return entropy < old_entropy - tol
    if criterion == "predicted":  # S(a) > 0: reinforcing the sampled token a lowers the entropy, to first order
        return score > 0
    if criterion == "positive":   # ablation: no entropy condition
        return torch.ones_like(m)
    return torch.zeros_like(m)    # "none": an empty mask


def token_mean(x: torch.Tensor, m: torch.Tensor, normalizer=None) -> torch.Tensor:
    """TEPO's aggregation (spec §3):  (1/N) sum_i sum_t m_it x_it,  N = the real tokens of the optimizer step:
    ``normalizer`` when given (a micro-batch passes its whole step's N), else this batch's. ``x`` is 0 at padding."""
    n = check_normalizer(normalizer) if normalizer is not None else float(m.sum().item())
    if n == 0:
        raise ValueError("aggregation 'token-mean' found no real tokens (mask is all 0), so there is nothing to "
                         "average; for a micro-batch of a larger step pass that step's normalizer")
    return x.sum() / n


def k3(logp: torch.Tensor, old_logp: torch.Tensor) -> torch.Tensor:
    """k3(l_theta, l_old) = e^u - u - 1 with u = l_old - l_theta (>= 0, 0 with zero gradient at l_theta = l_old): the
    mask's penalty and the approx_kl_old statistic. expm1 keeps the u^2/2 that float32 loses near 0; the clamp
    acts inside the exponential only. (Every estimator, for every objective: ``common.kl_penalty``.)   (B, T)"""
    u = -(logp - old_logp.detach())
    return torch.expm1(u.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)) - u


# L = (1/N) sum_i sum_t m_it [ -A_it ~s_it + beta_M M_it k3(l_theta_it, l_old_it) ]          (the default reading)
# (dynamic sampling is TEPO's data recipe here: the reading search selected it, research/reading-search/README.md)
@register("tepo", dynamic_sampling=True)
def tepo_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
              eps_low: float = EPS, eps_high: float = EPS_HIGH_DAPO, beta: float = 0.0, kl_kind: str = "k3",
              agg: str = "token-mean", dual_clip: float | None = None, max_len: int | None = None,
              ratio_clip: str = "token_log", delta_low: float = TEPO_DELTA, delta_high: float = TEPO_DELTA,
              beta_mask: float = 1.0, mask_criterion: str = "measured", mask_kl: str = "k3", mask_action: str = "kl",
              mask_tol: float = TEPO_MASK_TOL, entropy_drop_score: torch.Tensor | None = None, validate: bool = True):
    """TEPO, minitepo's reading (spec §6). The default (selected by the pre-registered search in
    research/reading-search/README.md):

        ~x_it = l_theta_it - l_old_it, clipped to delta_high = 0.4 if A_it > 0, to -delta_low = -0.4 if A_it < 0
        ~s_it = sg[~s_i] * exp(~x_it - sg[~x_it]),   ~s_i = exp( (1/|o_i|) sum_t m_it ~x_it )
        M_it  = sg[ 1[A_it > 0] * 1[entropy decreased at (i, t)] ] * m_it
        L     = (1/N) sum_i sum_t m_it [ -A_it ~s_it + beta_M M_it k3(l_theta_it, l_old_it) ]

    The keywords (the common ones are described in ``token_level.py``):

      ratio_clip         "token_log" (default): clip each token's log-ratio to [-delta_low, delta_high],
                         pessimistically by the sign of A, then the geometric mean; policy term -A_it ~s_it
                         | "sequence": s_it = sg[s_i] exp(l_theta_it - sg[l_theta_it]) (GSPO-token's), with the
                         policy term lambda(s_it, A_it; eps_low, eps_high)
      eps_low, eps_high  "sequence" only: 0.2 / 0.28 (DAPO's clip-higher); GSPO's 3e-4 / 4e-4 is the other preset
      delta_low, delta_high  "token_log" only: 0.4 / 0.4 nats (GMPO's e^{+-0.4})
      agg                "token-mean" (each response weighs |o_i| / N - the difference from GSPO)
      mask_criterion     "measured" (H_theta < H_old - mask_tol; needs entropy, old_entropy) | "predicted"
                         (S(a) > 0; needs entropy_drop_score) | "positive" (no entropy condition,
                         ablation) | "none" (no mask); see ``tepo_mask``
      mask_tol           "measured" only: entropy must drop by more than this: TEPO_MASK_TOL = 1e-4, because
                         old_entropy comes from the KV-cached sampler, which rounds differently from the
                         teacher-forced pass (~1e-6 nats in fp32); 0 is exactly the spec
      mask_action        "kl": add beta_M * M_it * k(l_theta_it, l_old_it) | "gate": a masked token's policy
                         term keeps its value but carries no gradient, and nothing is added
      mask_kl            "kl" only: estimator against the *old* policy: "k3" | "k1_abs" (|l_theta - l_old|) | "k2"
      beta_mask          beta_M = 1.0; 0 gives exactly the mask-free loss (no entropy input needed then);
                         with "gate" any beta_M > 0 turns the gate on, 0 turns it off
      beta, kl_kind      KL to a reference model, off (0) by default; no entropy bonus
      validate           True: check every hyper-parameter and tensor; the trainer passes False (see token_level.py)

    Why the switches exist (spec §6): on a geometric mean of ~30 token ratios 0.2 / 0.28 almost never binds,
    and on a masked token whose log-probability rose by D, k3 pulls back with beta_M (1 - e^-D) < beta_M
    while the policy term pushes with about s_i A_i: beta_M = 1 cannot stop a token with A >= 1.
    With the default "measured" criterion the mask is empty at the first update after a rollout
    (theta = theta_old): it only acts when a rollout serves several optimizer steps. Under every
    criterion the penalty is inert there anyway: k3, k2 and |k1| all have zero value and zero gradient
    at l_theta = l_old. The trainer computes the "predicted" score under the current theta at each
    optimizer step (not under theta_old), from the same forward pass as logp. The trainer adds dynamic
    sampling (a data recipe, not the loss).
    Statistics: those of every objective, "seq_ratio_mean" (the unclipped s_i), "mask_frac" (fraction of real
    tokens in M; reported whenever the mask can be built) and "mask_kl" (the aggregated penalty beta_M * M * k,
    already included in the loss; 0 for "gate").
    """
    # 0. tensors float32 (float64 stays) and 0 at padding; every hyper-parameter and every tensor checked first,
    #    unless the caller (the trainer) checked them once, when its config was made
    if validate:
        dual_c = check_tepo_args(agg=agg, kl_kind=kl_kind, eps_low=eps_low, eps_high=eps_high, dual_clip=dual_clip,
                                 ratio_clip=ratio_clip, delta_low=delta_low, delta_high=delta_high,
                                 mask_criterion=mask_criterion, mask_tol=mask_tol, mask_kl=mask_kl,
                                 mask_action=mask_action, beta_mask=beta_mask)
        logp, old_logp, A, m, ref_logp, entropy, old_entropy = checked_tensors(
            logp, old_logp, advantages, mask, ref_logp, entropy, old_entropy, beta=beta)   # (B, T) each
        score = checked_per_token(entropy_drop_score, "entropy_drop_score", m, logp.dtype)   # (B, T) or None
        if beta_mask > 0:  # the mask acts, so it needs its criterion's tensors
            check_mask_inputs(mask_criterion, entropy, old_entropy, score)
    else:
        dual_c = float(dual_clip) if dual_clip else None
        logp, old_logp, A, m, ref_logp, entropy, old_entropy = plain_tensors(
            logp, old_logp, advantages, mask, ref_logp, entropy, old_entropy)   # (B, T) each
        score = None if entropy_drop_score is None else torch.where(m, entropy_drop_score.detach().to(logp.dtype), 0.0)
    x = logp - old_logp                                                      # (B, T) log-ratio, 0 at padding
    lengths = m.sum(dim=-1).to(logp.dtype).clamp(min=1)                      # (B,) |o_i|
    zero = torch.zeros((), dtype=logp.dtype, device=logp.device)
    n_tok = m.sum().clamp(min=1).to(logp.dtype)                              # real tokens (>= 1), for the statistics

    def aggregated(v):  # (B, T), 0 at padding -> scalar: TEPO's token-mean; the other modes of spec §3 are common.py's
        return token_mean(v, m, normalizer) if agg == "token-mean" else aggregate_clean(v, m, agg, normalizer, max_len)

    # 1. the ratio and the policy term lambda_it
    if ratio_clip == "token_log":
        # ~x_it = x_it held at delta_high if A_it > 0 and above it, at -delta_low if A_it < 0 and below it
        high, low = x > delta_high, x < -delta_low                           # (B, T) bool each
        clipped = (((A > 0) & high) | ((A < 0) & low)) & m                   # (B, T) bool
        x_clip = torch.where(clipped, x.detach().clamp(-delta_low, delta_high), x)   # (B, T)
        # ~s_it = sg[~s_i] exp(~x_it - sg[~x_it]): the value of ~s_i = exp((1/|o_i|) sum_t m_it ~x_it), the gradient
        # ~s_i d~x_it (none at all for a response whose log ~s_i is beyond the clamp, as for GSPO's s_i)
        log_s = x_clip.sum(dim=-1) / lengths                                 # (B,)
        s_i = torch.exp(log_s.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)).detach()[:, None]   # (B, 1)
        inside = (log_s.abs() <= LOG_RATIO_CLAMP).detach()[:, None]          # (B, 1)
        s_tok = s_i * torch.exp(torch.where(inside, x_clip - x_clip.detach(), torch.zeros_like(x_clip)))   # (B, T)
        # lambda_it = -A_it ~s_it   (no further clip: a clipped token carries no gradient)
        lam = -s_tok * A                                                     # (B, T)
        with torch.no_grad():  # the clip statistics every objective reports: where x_it left [-delta_low, delta_high]
            pos, neg = (A > 0) & m, (A < 0) & m
            stats = {"clip/pos_high": (pos & high).sum() / n_tok, "clip/pos_low": (pos & low).sum() / n_tok,
                     "clip/neg_high": (neg & high).sum() / n_tok, "clip/neg_low": (neg & low).sum() / n_tok,
                     "clip/dual": torch.zeros((), dtype=logp.dtype, device=logp.device),
                     "clip_frac": ((pos & high) | (neg & low)).sum() / n_tok}
    else:  # "sequence": s_it = sg[s_i] exp(l_theta_it - sg[l_theta_it]), s_i = exp((1/|o_i|) sum_t m_it x_it)
        _, s_tok = routed_ratio(x.sum(dim=-1) / lengths, logp)               # (B, T)
        # lambda_it = -min(s_it A_it, clip(s_it, 1 - eps_low, 1 + eps_high) A_it)
        lam, stats = clipped_surrogate(s_tok, A, m, eps_low, eps_high, dual_c)   # (B, T)
    with torch.no_grad():                                                    # the unclipped s_i, for the record
        s = torch.exp((x.sum(dim=-1) / lengths).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))   # (B,)
        nonempty = m.any(dim=-1)
        stats["seq_ratio_mean"] = torch.where(nonempty, s, torch.zeros_like(s)).sum() / nonempty.sum().clamp(min=1)

    # 2. the mask  M_it = sg[ 1[A_it > 0] 1[entropy decreased at (i, t)] ] m_it: built when it acts, and with
    #    beta_mask = 0 still built for its statistic whenever the criterion's inputs were passed
    acts = beta_mask > 0
    inputs_given = {"measured": entropy is not None and old_entropy is not None,
                    "predicted": score is not None}.get(mask_criterion, True)
    M = None
    if acts or inputs_given:
        M = ((A > 0) & entropy_decreased(mask_criterion, m, entropy, old_entropy, mask_tol, score) & m).detach()
        stats["mask_frac"] = (M.sum() / m.sum().clamp(min=1)).to(logp.dtype)
    if acts and mask_action == "gate":
        # lambda_it <- sg[lambda_it] where M_it: a masked token's policy term keeps its value, loses its gradient
        lam = torch.where(M, lam.detach(), lam)

    # 3. L = agg( lambda_it + beta k(l_theta_it, l_ref_it) ); the KL to a reference model is off by default (spec §5)
    kl_ref = None if ref_logp is None else torch.where(m, kl_penalty(logp, ref_logp, kl_kind), zero)   # (B, T)
    per_token = lam + beta * kl_ref if kl_ref is not None and beta > 0 else lam
    loss = aggregated(torch.where(m, per_token, zero))
    with torch.no_grad():  # the statistics every objective reports
        stats["pg_loss"] = aggregated(torch.where(m, lam, zero))                   # the policy term alone
        stats["ratio_mean"] = torch.where(m, torch.exp(x.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)), zero).sum() / n_tok
        stats["approx_kl_old"] = torch.where(m, k3(logp, old_logp), zero).sum() / n_tok
        if kl_ref is not None:
            stats["kl_ref"] = kl_ref.sum() / n_tok

    # 4. "kl":  L <- L + agg( beta_M M_it k(l_theta_it, l_old_it) ), the KL to the OLD policy on masked tokens only
    mask_kl_value = zero
    if acts and mask_action == "kl":
        if mask_kl == "k3":
            k = k3(logp, old_logp)                                           # (B, T)
        elif mask_kl == "k1_abs":                                            # |l_theta - l_old|
            k = kl_penalty(logp, old_logp, "k1").abs()                       # (B, T)
        else:                                                                # "k2"
            k = kl_penalty(logp, old_logp, mask_kl)                          # (B, T)
        mask_kl_value = aggregated(beta_mask * torch.where(M, k, torch.zeros_like(k)))   # aggregated once, on M only
        loss = loss + mask_kl_value

    stats["mask_kl"] = mask_kl_value.detach()
    return loss, stats


def tepo_mask(advantages, mask, *, entropy=None, old_entropy=None, criterion: str = "measured",
              tol: float = TEPO_MASK_TOL, entropy_drop_score=None) -> torch.Tensor:
    """TEPO's KL mask  M_it = 1[A_it > 0] * 1[entropy decreased at (i, t)] * m_it,   (B, T) bool, no gradient.

    The same mask ``tepo_loss`` penalises, over plain tensors, so that you can look at it:
    ``advantages`` (B,) or (B, T), ``mask`` (B, T) bool or 0/1, the rest (B, T).

    criterion:
      "measured"  H_theta_it < H_old_it - tol  (needs ``entropy`` and ``old_entropy``). Empty at the
                  first update after a rollout, where theta = theta_old. ``tol`` (TEPO_MASK_TOL = 1e-4, as in
                  ``tepo_loss``) guards against round-off when old_entropy was recorded by a different
                  computation (the KV-cached sampler) than entropy (a teacher-forced pass); 0 is the spec's
                  exact criterion.
      "predicted" S(a) > 0, the first-order sign of the entropy change that raising the sampled token
                  a would cause (needs ``entropy_drop_score``, from ``predicted_entropy_drop_score``).
      "positive"  ablation: every positive-advantage token, no entropy condition.
      "none"      empty mask (same loss as beta_mask = 0).
    """
    check_mask_options(criterion, tol)
    m = check_mask(mask)
    if m.dim() != 2:
        raise ValueError(f"mask must be (B, T), got shape {tuple(m.shape)}")

    def per_token(x, name, dtype=None):
        if x is None:
            return None
        return checked_per_token(x, name, m, dtype or compute_dtype(x), like="mask")

    if not isinstance(advantages, torch.Tensor) or advantages.dtype == torch.bool:
        raise ValueError("advantages must be a tensor of numbers, (B,) or (B, T)")
    if tuple(advantages.shape) == (m.size(0),):
        A = per_token(advantages[:, None].expand(m.shape), "advantages")
    else:
        A = per_token(advantages, "advantages")
    entropy, old_entropy = per_token(entropy, "entropy"), per_token(old_entropy, "old_entropy")
    score = per_token(entropy_drop_score, "entropy_drop_score", torch.float32)
    check_mask_inputs(criterion, entropy, old_entropy, score)
    decreased = entropy_decreased(criterion, m, entropy, old_entropy, tol, score)
    return ((A > 0) & decreased & m).detach()


TEPO_DEFAULTS = {name: p.default for name, p in inspect.signature(tepo_loss).parameters.items()
                 if p.default is not inspect.Parameter.empty and name not in ("entropy_drop_score", "normalizer",
                                                                             "max_len", "ref_logp", "entropy", "old_entropy")}
"""TEPO's hyper-parameter defaults, read off ``tepo_loss``'s signature, for code that must state them (the verl and
TRL adapters): the defaults live in one place, the loss."""
