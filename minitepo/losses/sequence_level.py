"""Sequence-ratio objectives: GSPO, GSPO-token and TEPO.

They replace the token ratio r_{i,t} by the length-normalised sequence ratio (a geometric mean)

    s_i = exp( (1/|o_i|) sum_t m_it (l_theta_it - l_old_it) )                          (B,)

so that every token of a response is judged by one number: either all of its tokens are clipped or none is.
The common keyword arguments are described in ``token_level.py``; the ones specific to this file are below.

Two ways to use s_i:

* GSPO: one clipped term per *sequence*, lambda(s_i, A_i), averaged over sequences.
* GSPO-token and TEPO: a per-token ratio whose value is s_i but whose gradient enters at token t,

      s_it = sg[s_i] * exp(l_theta_it - sg[l_theta_it])       value s_i,  d s_it = s_i d l_theta_it

  then one clipped term per *token*. With a sequence-constant advantage A_i, summing over the tokens
  of o_i gives the gradient of |o_i| * lambda(s_i, A_i): GSPO-token averaged per sequence
  (``seq-mean-token-mean``) has GSPO's gradient; TEPO averaged per token (``token-mean``) weighs
  response i by |o_i| / N instead of 1 / B'. With token advantages A_it the routing matters: each
  token is clipped and weighted by its own advantage.
"""

from __future__ import annotations

import inspect
import math

import torch

from .checks import (Batch, check_choice, check_mask, check_objective_args, checked_inputs, checked_per_token,
                     compute_dtype)
from .common import LOG_RATIO_CLAMP, aggregate_clean, clip_stats, clipped_surrogate, kl_penalty, policy_loss

TEPO_MASK_CRITERIA = ("measured", "predicted", "positive", "none")
TEPO_MASK_KL = ("k3", "k1_abs", "k2")
TEPO_MASK_ACTIONS = ("kl", "gate")
"""What TEPO's mask does to a masked token: add beta_M * k to the old policy ("kl"), or take away the
gradient of its policy term ("gate")."""
TEPO_RATIO_CLIPS = ("sequence", "token_log")
"""Where TEPO clips: the sequence ratio s_i with eps_low / eps_high ("sequence"), or each token's log-ratio
with delta_low / delta_high before the geometric mean ("token_log", GMPO-style)."""


def sequence_log_ratio(b: Batch) -> torch.Tensor:
    """log s_i = (1/|o_i|) sum_t m_it (l_theta_it - l_old_it); 0 for a response with no real token.   (B,)"""
    return (b.logp - b.old_logp).sum(dim=-1) / b.lengths.clamp(min=1)


def routed_ratio(log_s: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(s_i, s_it) from a per-response log-ratio ``log_s`` (B,) and the per-token quantity ``x`` (B, T) whose
    gradient it routes: s_i = exp(clamp(log_s)), s_it = sg[s_i] * exp(x_it - sg[x_it]) (value s_i, gradient
    s_i dx_it at token t)."""
    s = torch.exp(log_s.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))            # (B,)
    # GSPO's s_i has no gradient once its log is clamped; cut the routed gradient at the same place,
    # so that GSPO-token matches GSPO even for a wildly off-policy response.
    inside = (log_s.abs() <= LOG_RATIO_CLAMP).detach()[:, None]              # (B, 1)
    route = torch.where(inside, x - x.detach(), torch.zeros_like(x))        # value 0, gradient that of x
    s_tok = s.detach()[:, None] * torch.exp(route)                           # (B, T)
    return s, s_tok


def token_routed_sequence_ratio(b: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """(s_i, s_it): the sequence ratio (B,) with its graph, and its token-routed form (B, T)."""
    return routed_ratio(sequence_log_ratio(b), b.logp)


def token_log_clipped_ratio(b: Batch, delta_low: float, delta_high: float) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """TEPO's ``ratio_clip="token_log"`` (GMPO-style, arXiv 2507.20673; spec §6): clip each token's log-ratio
    in log space, pessimistically by the sign of its advantage, *then* take the geometric mean.

        x_it  = l_theta_it - l_old_it
        ~x_it = delta_high (no gradient)    if A_it > 0 and x_it > delta_high   (already raised enough)
                -delta_low (no gradient)    if A_it < 0 and x_it < -delta_low   (already lowered enough)
                x_it                        otherwise (also when A_it = 0, whose policy term is 0 anyway)
        ~s_i  = exp( (1/|o_i|) sum_t m_it ~x_it )                                              (B,)
        ~s_it = sg[~s_i] * exp(~x_it - sg[~x_it])           value ~s_i, gradient ~s_i at an unclipped token

    Returns (~s_i, ~s_it, clip statistics over real tokens). The policy term is then -A_it ~s_it, with no
    further clip: a clipped token carries no gradient, the rest of its response keeps theirs.
    """
    x = b.logp - b.old_logp                                                  # (B, T), 0 at padding
    high, low = x > delta_high, x < -delta_low
    clipped = (((b.adv_tok > 0) & high) | ((b.adv_tok < 0) & low)) & b.m    # (B, T) bool
    x_clip = torch.where(clipped, x.detach().clamp(-delta_low, delta_high), x)   # (B, T)
    s, s_tok = routed_ratio(x_clip.sum(dim=-1) / b.lengths.clamp(min=1), x_clip)   # (B,), (B, T)
    return s, s_tok, clip_stats(b.adv_tok, b.m, high, low, torch.zeros_like(b.m), b.dtype)


def _seq_stats(b: Batch, s: torch.Tensor, stats: dict) -> dict:
    stats["seq_ratio_mean"] = (torch.where(b.nonempty, s, torch.zeros_like(s)).sum()
                               / b.nonempty.sum().clamp(min=1)).detach()
    return stats


def gspo_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
              eps_low: float = 3e-4, eps_high: float = 4e-4, beta: float = 0.0, kl_kind: str = "k3",
              agg: str = "seq-mean-token-mean", dual_clip: float | None = None, max_len: int | None = None):
    """GSPO (Group Sequence Policy Optimization, arXiv 2507.18071, eqs. 5-7): one clipped term per sequence.

        L = (1/B') sum_i lambda(s_i, A_i; 3e-4, 4e-4)

    The clip range is tiny because s_i is a geometric mean: a per-token drift of 1e-3 already moves it
    by about 1e-3. Implemented as the constant-per-sequence token loss lambda(s_i, A_i) averaged with
    ``seq-mean-token-mean``, which is exactly the formula above and lets ``agg`` and the reference KL
    work as for every other objective. With (B,) advantages the clip statistics count *sequences*;
    with (B, T) advantages each token gets lambda(s_i, A_it) and the statistics count tokens.
    """
    b, dual_c = checked_inputs(locals())
    s = torch.exp(sequence_log_ratio(b).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))   # (B,)
    if b.adv.dim() == 1:
        lam_seq, stats = clipped_surrogate(s, b.adv, b.nonempty, eps_low, eps_high, dual_c)  # (B,)
        lam = lam_seq[:, None].expand_as(b.logp)                             # (B, T), constant along t
    else:
        rho = s[:, None].expand_as(b.logp)                                   # (B, T)
        lam, stats = clipped_surrogate(rho, b.adv_tok, b.m, eps_low, eps_high, dual_c)
    _seq_stats(b, s, stats)
    return policy_loss(b, lam, stats, beta=beta, kl_kind=kl_kind, agg=agg, normalizer=normalizer, max_len=max_len)


def gspo_token_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None,
                    normalizer=None, eps_low: float = 3e-4, eps_high: float = 4e-4, beta: float = 0.0,
                    kl_kind: str = "k3", agg: str = "seq-mean-token-mean", dual_clip: float | None = None,
                    max_len: int | None = None):
    """GSPO-token (arXiv 2507.18071, eqs. 13-14): GSPO's ratio routed to every token, for token advantages.

        s_it = sg[s_i] * exp(l_theta_it - sg[l_theta_it])
        L    = (1/B') sum_i (1/|o_i|) sum_t m_it lambda(s_it, A_it; 3e-4, 4e-4)

    With A_it = A_i for every t the gradient is identical to ``gspo_loss``'s.
    """
    b, dual_c = checked_inputs(locals())
    s, s_tok = token_routed_sequence_ratio(b)                                # (B,), (B, T)
    lam, stats = clipped_surrogate(s_tok, b.adv_tok, b.m, eps_low, eps_high, dual_c)   # (B, T)
    _seq_stats(b, s, stats)
    return policy_loss(b, lam, stats, beta=beta, kl_kind=kl_kind, agg=agg, normalizer=normalizer, max_len=max_len)


# The sampler records old entropies with a KV cache, one token at a time; a loss recomputes them in one
# teacher-forced pass. Same weights, different summation order: in float32 the two differ by ~1e-6 nats.
# Without a guard, TEPO's "entropy decreased" test would flag about half the positive-advantage tokens
# on the first update (theta = theta_old) from round-off alone: call tepo_loss / tepo_mask with
# mask_tol=TEPO_MASK_TOL whenever old_entropy came from the sampler. The trainer does.
TEPO_MASK_TOL = 1e-4
"""Round-off guard for the "measured" criterion, in nats: entropy must drop by more than this to count."""


def _entropy_decreased(criterion: str, m: torch.Tensor, entropy, old_entropy, tol: float,
                       entropy_drop_score) -> torch.Tensor:
    """The entropy condition of TEPO's mask on checked (B, T) tensors, 0 at padding.   (B, T) bool"""
    if criterion == "measured":
        if entropy is None or old_entropy is None:
            raise ValueError("TEPO's 'measured' mask criterion compares entropy (current policy) with old_entropy "
                             "(recorded by the sampler): pass both, or choose mask_criterion='predicted'")
        return entropy < old_entropy - tol
    if criterion == "predicted":
        if entropy_drop_score is None:
            raise ValueError("TEPO's 'predicted' mask criterion needs entropy_drop_score = S(a), computed from the "
                             "full next-token distribution with losses.predicted_entropy_drop_score")
        return entropy_drop_score > 0
    if criterion == "positive":
        return torch.ones_like(m)
    return torch.zeros_like(m)                                               # "none"


def _kl_mask(adv_tok: torch.Tensor, decreased: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """M_it = 1[A_it > 0] * 1[entropy decreased] * m_it, with no gradient.   (B, T) bool"""
    return ((adv_tok > 0) & decreased & m).detach()


def _check_mask_options(criterion: str, tol: float) -> None:
    check_choice(criterion, TEPO_MASK_CRITERIA, "TEPO mask criterion")
    if not (tol >= 0 and math.isfinite(tol)):
        raise ValueError(f"mask_tol must be a finite number >= 0, got {tol}")


def tepo_mask(advantages, mask, *, entropy=None, old_entropy=None, criterion: str = "measured", tol: float = 0.0,
              entropy_drop_score=None) -> torch.Tensor:
    """TEPO's KL mask  M_it = 1[A_it > 0] * 1[entropy decreased at (i, t)] * m_it,   (B, T) bool, no gradient.

    The same mask ``tepo_loss`` penalises, over plain tensors, so that you can look at it:
    ``advantages`` (B,) or (B, T), ``mask`` (B, T) bool or 0/1, the rest (B, T).

    criterion:
      "measured"  H_theta_it < H_old_it - tol  (needs ``entropy`` and ``old_entropy``). Empty at the
                  first update after a rollout, where theta = theta_old. ``tol`` (default 0, the spec's
                  exact criterion) guards against round-off when old_entropy was recorded by a different
                  computation (the KV-cached sampler) than entropy (a teacher-forced pass): use TEPO_MASK_TOL.
      "predicted" S(a) > 0, the first-order sign of the entropy change that raising the sampled token
                  a would cause (needs ``entropy_drop_score``, from ``predicted_entropy_drop_score``).
      "positive"  ablation: every positive-advantage token, no entropy condition.
      "none"      empty mask (same loss as beta_mask = 0).
    """
    _check_mask_options(criterion, tol)
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
        adv_tok = per_token(advantages[:, None].expand(m.shape), "advantages")
    else:
        adv_tok = per_token(advantages, "advantages")
    decreased = _entropy_decreased(criterion, m, per_token(entropy, "entropy"), per_token(old_entropy, "old_entropy"),
                                   tol, per_token(entropy_drop_score, "entropy_drop_score", torch.float32))
    return _kl_mask(adv_tok, decreased, m)


def _check_tepo_args(a: dict) -> float | None:
    """Every hyper-parameter of ``tepo_loss`` (its arguments ``a``) checked, with an error that says what is
    allowed; returns the dual-clip constant."""
    dual_c = check_objective_args(a["agg"], a["kl_kind"], a["eps_low"], a["eps_high"], a["dual_clip"])
    check_choice(a["ratio_clip"], TEPO_RATIO_CLIPS, "TEPO ratio clip")
    for name in ("delta_low", "delta_high"):
        value = a[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value > 0 and math.isfinite(value)):
            raise ValueError(f"{name} (the token_log clip range, in nats) must be a finite number > 0, got {value!r}")
    if a["ratio_clip"] == "token_log" and dual_c is not None:
        raise ValueError("dual_clip applies to ratio_clip='sequence' only: with 'token_log' every token's log-ratio is "
                         "already bounded on the pessimistic side; pass dual_clip=None")
    _check_mask_options(a["mask_criterion"], a["mask_tol"])
    check_choice(a["mask_kl"], TEPO_MASK_KL, "TEPO mask KL estimator")
    check_choice(a["mask_action"], TEPO_MASK_ACTIONS, "TEPO mask action")
    if not (a["beta_mask"] >= 0 and math.isfinite(a["beta_mask"])):
        raise ValueError(f"beta_mask must be a finite number >= 0, got {a['beta_mask']}")
    return dual_c


def tepo_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
              eps_low: float = 0.2, eps_high: float = 0.28, beta: float = 0.0, kl_kind: str = "k3",
              agg: str = "token-mean", dual_clip: float | None = None, max_len: int | None = None,
              ratio_clip: str = "token_log", delta_low: float = 0.4, delta_high: float = 0.4,
              beta_mask: float = 1.0, mask_criterion: str = "measured", mask_kl: str = "k3", mask_action: str = "kl",
              mask_tol: float = 0.0, entropy_drop_score: torch.Tensor | None = None):
    """TEPO (Token-level Policy Optimization, arXiv 2510.09369 v1 / 2604.12736 v2) - minitepo's reading, spec §6.

    The default reading (selected by the pre-registered search in docs/reading-search.md):

        ~x_it = l_theta_it - l_old_it, clipped to delta_high = 0.4 if A_it > 0, to -delta_low = -0.4 if A_it < 0
        ~s_it = sg[~s_i] * exp(~x_it - sg[~x_it]),   ~s_i = exp( (1/|o_i|) sum_t m_it ~x_it )
        M_it  = sg[ 1[A_it > 0] * 1[entropy decreased at (i, t)] ] * m_it
        L     = (1/N) sum_i sum_t m_it [ -A_it ~s_it + beta_M M_it k3(l_theta_it, l_old_it) ]

    and the first reading, ``ratio_clip="sequence"``: s_it = sg[s_i] exp(l_theta_it - sg[l_theta_it]) with the
    policy term lambda(s_it, A_it; eps_low, eps_high). The trainer adds dynamic sampling (a data recipe, not the loss).

    What the public text fixes: (1) a sequence-level likelihood ratio (the length-normalised geometric
    mean s_i; v1 calls it "Markov likelihood") ties the group reward to each token, and the loss is
    aggregated at the token level; (2) a token-level KL mask on tokens with positive advantage and
    decreasing entropy damps abrupt updates. Everything else is this reading, and a switch:

      ratio_clip         "token_log" (default; GMPO-style): clip each token's log-ratio to [-delta_low, delta_high]
                         pessimistically by the sign of A, then the geometric mean, policy term -A_it ~s_it
                         (``token_log_clipped_ratio``) | "sequence": clip s_it with eps_low / eps_high
      eps_low, eps_high  "sequence" only: 0.2 / 0.28 (DAPO's clip-higher); GSPO's 3e-4 / 4e-4 is the other preset
      delta_low, delta_high  "token_log" only: 0.4 / 0.4 nats (GMPO's e^{+-0.4})
      agg                "token-mean" (each response weighs |o_i| / N - the difference from GSPO)
      mask_criterion     "measured" (H_theta < H_old; needs entropy, old_entropy) | "predicted"
                         (S(a) > 0; needs entropy_drop_score) | "positive" (no entropy condition,
                         ablation) | "none" (no mask); see ``tepo_mask``
      mask_tol           "measured" only: entropy must drop by more than this (default 0, exactly the spec);
                         pass TEPO_MASK_TOL when old_entropy comes from the KV-cached sampler, which rounds
                         differently from the teacher-forced pass (~1e-6 nats in fp32). The trainer does.
      mask_action        "kl": add beta_M * M_it * k(l_theta_it, l_old_it) | "gate": a masked token's policy
                         term keeps its value but carries no gradient, and nothing is added
      mask_kl            "kl" only: estimator against the *old* policy: "k3" | "k1_abs" (|l_theta - l_old|) | "k2"
      beta_mask          beta_M = 1.0; 0 gives exactly the mask-free loss (no entropy input needed then);
                         with "gate" any beta_M > 0 turns the gate on, 0 turns it off
      beta, kl_kind      KL to a reference model, off (0) by default; no entropy bonus

    Why the switches exist (spec §6): on a geometric mean of ~30 token ratios 0.2 / 0.28 almost never binds,
    and on a masked token whose log-probability rose by D, k3 pulls back with beta_M (1 - e^-D) < beta_M
    while the policy term pushes with about s_i A_i: beta_M = 1 cannot stop a token with A >= 1.
    With the default "measured" criterion the mask is empty at the first update after a rollout
    (theta = theta_old): it only acts when a rollout serves several optimizer steps. Under every
    criterion the penalty is inert there anyway: k3, k2 and |k1| all have zero value and zero gradient
    at l_theta = l_old. The trainer computes the "predicted" score under the current theta at each
    optimizer step (not under theta_old), from the same forward pass as logp.
    Extra statistics: "mask_frac" (fraction of real tokens in M; reported whenever the mask can be
    built) and "mask_kl" (the aggregated penalty beta_M * M * k, already included in the loss; 0 for "gate").
    """
    # 0. the prelude: every hyper-parameter and every tensor checked, tensors float32 and 0 at padding
    b, dual_c = checked_inputs(locals(), check_args=_check_tepo_args)
    score = checked_per_token(entropy_drop_score, "entropy_drop_score", b.m, b.dtype)   # (B, T) or None

    # 1. the ratio and the policy term lambda_it
    if ratio_clip == "sequence":
        # log s_i = (1/|o_i|) sum_t m_it (l_theta_it - l_old_it);   s_it = sg[s_i] exp(l_theta_it - sg[l_theta_it])
        s, s_tok = token_routed_sequence_ratio(b)                            # (B,), (B, T)
        # lambda_it = -min(s_it A_it, clip(s_it, 1 - eps_low, 1 + eps_high) A_it)
        lam, stats = clipped_surrogate(s_tok, b.adv_tok, b.m, eps_low, eps_high, dual_c)   # (B, T)
    else:
        # ~x_it = l_theta_it - l_old_it, held at delta_high if A > 0 and above it, at -delta_low if A < 0 and below;
        # ~s_it = sg[~s_i] exp(~x_it - sg[~x_it]),  ~s_i = exp((1/|o_i|) sum_t m_it ~x_it)
        _, s_tok, stats = token_log_clipped_ratio(b, delta_low, delta_high)  # (B, T)
        # lambda_it = -A_it ~s_it   (no further clip: a clipped token carries no gradient)
        lam = -s_tok * b.adv_tok                                             # (B, T)
        s = torch.exp(sequence_log_ratio(b).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))   # unclipped s_i, for stats
    _seq_stats(b, s, stats)

    # 2. the mask  M_it = sg[ 1[A_it > 0] 1[entropy decreased at (i, t)] ] m_it  (see ``tepo_mask``): built when it
    #    acts, and with beta_mask = 0 still built for its statistic whenever the criterion's inputs were passed
    acts = beta_mask > 0
    inputs_given = {"measured": b.entropy is not None and b.old_entropy is not None,
                    "predicted": score is not None}.get(mask_criterion, True)
    M = None
    if acts or inputs_given:
        M = _kl_mask(b.adv_tok, _entropy_decreased(mask_criterion, b.m, b.entropy, b.old_entropy, mask_tol, score),
                     b.m)                                                    # (B, T) bool
        stats["mask_frac"] = (M.sum() / b.m.sum().clamp(min=1)).to(b.dtype)
    if acts and mask_action == "gate":
        # gate: lambda_it <- sg[lambda_it] where M_it: a masked token's policy term keeps its value, loses its gradient
        lam = torch.where(M, lam.detach(), lam)

    # 3. L = agg( lambda_it + beta k(l_theta_it, l_ref_it) )   (the reference KL, off by default; spec §1, §3, §5)
    loss, stats = policy_loss(b, lam, stats, beta=beta, kl_kind=kl_kind, agg=agg, normalizer=normalizer,
                              max_len=max_len)

    # 4. "kl":  L <- L + agg( beta_M M_it k(l_theta_it, l_old_it) ), the KL to the OLD policy on masked tokens only
    mask_kl_value = torch.zeros((), dtype=b.dtype, device=b.logp.device)
    if acts and mask_action == "kl":
        k = kl_penalty(b.logp, b.old_logp, "k1" if mask_kl == "k1_abs" else mask_kl)   # (B, T)
        k = k.abs() if mask_kl == "k1_abs" else k                            # k1_abs: |l_theta - l_old|
        penalty = beta_mask * torch.where(M, k, torch.zeros_like(k))          # (B, T), on M only
        mask_kl_value = aggregate_clean(penalty, b.m, agg, normalizer, max_len)   # aggregated once
        loss = loss + mask_kl_value
    stats["mask_kl"] = mask_kl_value.detach()
    return loss, stats


TEPO_DEFAULTS = {name: p.default for name, p in inspect.signature(tepo_loss).parameters.items()
                 if p.default is not inspect.Parameter.empty and name not in ("entropy_drop_score", "normalizer",
                                                                             "max_len", "ref_logp", "entropy", "old_entropy")}
"""TEPO's hyper-parameter defaults, read off ``tepo_loss``'s signature, for code that must state them (the verl and
TRL adapters): the defaults live in one place, the loss."""
