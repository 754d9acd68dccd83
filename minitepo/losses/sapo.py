"""SAPO (Soft Adaptive Policy Optimization, Qwen, arXiv 2511.20347, §3): a soft gate instead of a hard clip.

Each token's ratio r_it passes through a sigmoid gate whose slope is 1 at r = 1 and decays smoothly as r leaves 1, so
an off-policy token is down-weighted, never cut off (GRPO's clip) and never takes its whole response with it (GSPO's):

    f_tau(r) = (4 / tau) sigma( tau (r - 1) )                  the gate; f_tau(1) = 2 / tau, f_tau'(1) = 1
    tau_it   = tau_pos if A_it > 0 else tau_neg                 negative advantages decay faster (tau_neg > tau_pos)
    L        = agg_{i,t}( -f_{tau_it}(r_it) A_it + beta k(l_theta_it, l_ref_it) )

    dL/dl_theta_it = -A_it * g_it * r_it,   g_it = 4 sigma (1 - sigma) in (0, 1]:  g = 1 on-policy, so SAPO's
    on-policy gradient is GRPO's; g is the soft trust region, reported as the statistic "gate_mean".

The common keyword arguments are described in ``token_level.py``. The paper's defaults: tau_pos = 1.0, tau_neg = 1.05
(the values TRL and verl ship), and its objective averages each response's tokens, then the responses
(``seq-mean-token-mean``). What is a reading: a token with A = 0 takes tau_neg (as TRL and verl; its term is 0 anyway).

Shape legend: B responses, T padded response width.
"""

from __future__ import annotations

import math

import torch

from .checks import check_objective_args, checked_tensors, plain_tensors
from .common import EPS, objective_loss, register, token_ratio

SAPO_TAU_POS, SAPO_TAU_NEG = 1.0, 1.05
"""SAPO's gate temperatures for positive and for non-positive advantages (the paper's defaults)."""


def check_temperatures(tau_pos, tau_neg) -> None:
    for name, tau in (("tau_pos", tau_pos), ("tau_neg", tau_neg)):
        if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not (tau > 0 and math.isfinite(tau)):
            raise ValueError(f"{name} (a SAPO gate temperature) must be a finite number > 0, got {tau!r}")


# L = (1/B') sum_i (1/|o_i|) sum_t m_it ( -(4/tau_it) sigma(tau_it (r_it - 1)) A_it )
@register("sapo")
def sapo_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
              tau_pos: float = SAPO_TAU_POS, tau_neg: float = SAPO_TAU_NEG, beta: float = 0.0, kl_kind: str = "k3",
              agg: str = "seq-mean-token-mean", max_len: int | None = None, validate: bool = True):
    """SAPO (arXiv 2511.20347, §3, the SAPO objective and its gate f): a temperature-controlled sigmoid gate on r_it.

        f_it = (4 / tau_it) sigma( tau_it (r_it - 1) ),   tau_it = tau_pos (1.0) if A_it > 0 else tau_neg (1.05)
        L    = (1/B') sum_i (1/|o_i|) sum_t m_it ( -f_it A_it )

    Keywords: ``tau_pos``, ``tau_neg`` (the larger, the faster a gradient decays as r leaves 1), ``agg``
    (``seq-mean-token-mean``, the paper's), ``beta`` / ``kl_kind`` (reference KL, off). No hard clip: the clip
    statistics are 0, and "gate_mean" (token mean of g_it = 4 sigma (1 - sigma), 1 on-policy) shows the soft one.
    """
    if validate:
        check_objective_args(agg, kl_kind, EPS, EPS, None)
        check_temperatures(tau_pos, tau_neg)
        logp, old_logp, A, m, ref_logp, _, _ = checked_tensors(logp, old_logp, advantages, mask, ref_logp, entropy,
                                                               old_entropy, beta=beta)
    else:
        logp, old_logp, A, m, ref_logp, _, _ = plain_tensors(logp, old_logp, advantages, mask, ref_logp)
    r = token_ratio(logp, old_logp)                                          # (B, T), with gradient
    tau = torch.where(A > 0, torch.full_like(A, tau_pos), torch.full_like(A, tau_neg))   # (B, T), in A's dtype
    sigma = torch.sigmoid(tau * (r - 1.0))                                   # (B, T)
    lam = -(4.0 / tau) * sigma * A                                           # (B, T) lambda_it = -f_it A_it
    with torch.no_grad():
        zero = torch.zeros((), dtype=logp.dtype, device=logp.device)
        n_tok = m.sum().clamp(min=1).to(logp.dtype)
        stats = {key: zero.clone() for key in ("clip_frac", "clip/pos_high", "clip/pos_low", "clip/neg_high",
                                               "clip/neg_low", "clip/dual")}
        stats["gate_mean"] = torch.where(m, 4.0 * sigma * (1.0 - sigma), zero).sum() / n_tok
    return objective_loss(lam, stats, logp=logp, old_logp=old_logp, m=m, ref_logp=ref_logp, beta=beta,
                          kl_kind=kl_kind, agg=agg, normalizer=normalizer, max_len=max_len)
