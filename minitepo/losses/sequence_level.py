"""Sequence-ratio objectives: GSPO and GSPO-token (TEPO, which builds on them, has its own file: ``tepo.py``).

They replace the token ratio r_{i,t} by the length-normalised sequence ratio (a geometric mean)

    s_i = exp( (1/|o_i|) sum_t m_it (l_theta_it - l_old_it) )                          (B,)

so that every token of a response is judged by one number: either all of its tokens are clipped or none is.
The common keyword arguments are described in ``token_level.py``; the ones specific to this file are below.

Two ways to use s_i:

* GSPO: one clipped term per *sequence*, lambda(s_i, A_i), averaged over sequences.
* GSPO-token (and TEPO): a per-token ratio whose value is s_i but whose gradient enters at token t,

      s_it = sg[s_i] * exp(l_theta_it - sg[l_theta_it])       value s_i,  d s_it = s_i d l_theta_it

  then one clipped term per *token*. With a sequence-constant advantage A_i, summing over the tokens
  of o_i gives the gradient of |o_i| * lambda(s_i, A_i): GSPO-token averaged per sequence
  (``seq-mean-token-mean``) has GSPO's gradient; TEPO averaged per token (``token-mean``) weighs
  response i by |o_i| / N instead of 1 / B'. With token advantages A_it the routing matters: each
  token is clipped and weighted by its own advantage.
"""

from __future__ import annotations

import torch

from .checks import prepared_inputs, sequence_advantages
from .common import (EPS_HIGH_GSPO, EPS_LOW_GSPO, LOG_RATIO_CLAMP, clipped_surrogate, objective_loss, register,
                     routed_ratio, sequence_log_ratio)


def seq_ratio_mean(s: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """The statistic "seq_ratio_mean": the mean of s_i over responses with a real token (detached scalar)."""
    nonempty = m.any(dim=-1)                                                 # (B,)
    return (torch.where(nonempty, s, torch.zeros_like(s)).sum() / nonempty.sum().clamp(min=1)).detach()


# L = (1/B') sum_i lambda(s_i, A_i; 3e-4, 4e-4),   s_i = exp( (1/|o_i|) sum_t m_it (l_theta_it - l_old_it) )
@register("gspo", clips_sequences=True)
def gspo_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
              eps_low: float = EPS_LOW_GSPO, eps_high: float = EPS_HIGH_GSPO, beta: float = 0.0, kl_kind: str = "k3",
              agg: str = "seq-mean-token-mean", dual_clip: float | None = None, max_len: int | None = None,
              validate: bool = True):
    """GSPO (Group Sequence Policy Optimization, arXiv 2507.18071, eqs. 5-7): one clipped term per sequence.

        L = (1/B') sum_i lambda(s_i, A_i; 3e-4, 4e-4)

    The clip range is tiny because s_i is a geometric mean: a per-token drift of 1e-3 already moves it
    by about 1e-3. Implemented as the constant-per-sequence token loss lambda(s_i, A_i) averaged with
    ``seq-mean-token-mean``, which is exactly the formula above and lets ``agg`` and the reference KL
    work as for every other objective. With (B,) advantages the clip statistics count *sequences*;
    with (B, T) advantages each token gets lambda(s_i, A_it) and the statistics count tokens.
    """
    dual_c, (logp, old_logp, A, m, ref_logp, _, _) = prepared_inputs(
        validate, logp, old_logp, advantages, mask, ref_logp, entropy, old_entropy, agg=agg, kl_kind=kl_kind,
        eps_low=eps_low, eps_high=eps_high, dual_clip=dual_clip, beta=beta)   # (B, T) each
    s = torch.exp(sequence_log_ratio(logp, old_logp, m).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))   # (B,)
    if advantages.dim() == 1:
        # one clipped term per response, repeated along its tokens
        lam_seq, stats = clipped_surrogate(s, sequence_advantages(advantages, m, logp.dtype), m.any(dim=-1),
                                           eps_low, eps_high, dual_c)        # (B,)
        lam = lam_seq[:, None].expand_as(logp)                               # (B, T), constant along t
    else:
        lam, stats = clipped_surrogate(s[:, None].expand_as(logp), A, m, eps_low, eps_high, dual_c)   # (B, T)
    stats["seq_ratio_mean"] = seq_ratio_mean(s, m)
    return objective_loss(lam, stats, logp=logp, old_logp=old_logp, m=m, ref_logp=ref_logp, beta=beta,
                          kl_kind=kl_kind, agg=agg, normalizer=normalizer, max_len=max_len)


# L = (1/B') sum_i (1/|o_i|) sum_t m_it lambda(s_it, A_it; 3e-4, 4e-4),  s_it = sg[s_i] exp(l_theta_it - sg[l_theta_it])
@register("gspo_token")
def gspo_token_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None,
                    normalizer=None, eps_low: float = EPS_LOW_GSPO, eps_high: float = EPS_HIGH_GSPO, beta: float = 0.0,
                    kl_kind: str = "k3", agg: str = "seq-mean-token-mean", dual_clip: float | None = None,
                    max_len: int | None = None, validate: bool = True):
    """GSPO-token (arXiv 2507.18071, eqs. 13-14): GSPO's ratio routed to every token, for token advantages.

        s_it = sg[s_i] * exp(l_theta_it - sg[l_theta_it])
        L    = (1/B') sum_i (1/|o_i|) sum_t m_it lambda(s_it, A_it; 3e-4, 4e-4)

    With A_it = A_i for every t the gradient is identical to ``gspo_loss``'s.
    """
    dual_c, (logp, old_logp, A, m, ref_logp, _, _) = prepared_inputs(
        validate, logp, old_logp, advantages, mask, ref_logp, entropy, old_entropy, agg=agg, kl_kind=kl_kind,
        eps_low=eps_low, eps_high=eps_high, dual_clip=dual_clip, beta=beta)   # (B, T) each
    s, s_tok = routed_ratio(sequence_log_ratio(logp, old_logp, m), logp)      # (B,), (B, T)
    lam, stats = clipped_surrogate(s_tok, A, m, eps_low, eps_high, dual_c)   # (B, T)
    stats["seq_ratio_mean"] = seq_ratio_mean(s, m)
    return objective_loss(lam, stats, logp=logp, old_logp=old_logp, m=m, ref_logp=ref_logp, beta=beta,
                          kl_kind=kl_kind, agg=agg, normalizer=normalizer, max_len=max_len)
