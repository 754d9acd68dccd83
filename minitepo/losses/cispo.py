"""CISPO (Clipped IS-weight Policy Optimization, MiniMax-M1, arXiv 2506.13585, §3.1): clip the weight, keep the token.

PPO, GRPO and DAPO clip the *update*: a token whose ratio left [1 - eps_low, 1 + eps_high] in its advantage's
direction loses its gradient. CISPO clips the importance-sampling *weight* instead and stops its gradient, so that
every token keeps a REINFORCE gradient, scaled by a bounded weight:

    w_it = sg[ clip(r_it, 1 - eps_low, 1 + eps_high) ]                     (paper eq. 5: r-hat, the clipped IS weight)
    L    = agg_{i,t}( -w_it A_it l_theta_it + beta k(l_theta_it, l_ref_it) )      (paper eq. 4, as a loss)

    dL/dl_theta_it = -w_it A_it (times the aggregation weight): never 0 unless A_it = 0.

The value is -w A l_theta, the log-probability itself, not a ratio: the paper writes it so, and TRL and verl compute
the same value. It is not 0 on-policy; only its gradient means anything.
The common keyword arguments are described in ``token_level.py``. What is a reading, each a keyword:

    is_clip   "upper" (default): w = min(r, 1 + eps_high): the paper "did not impose a lower bound on the IS weight"
              (eps_low^IS set very large), as TRL's cispo | "both": clip(r, 1 - eps_low, 1 + eps_high), as verl's
    eps_high  CISPO_EPS_HIGH = 4.0, a weight cap of 5: the paper tuned eps_high^IS but prints no value; 5 is the cap
              ScaleRL (arXiv 2510.13786) runs CISPO with, and TRL's recommended epsilon_high for its cispo (TRL's
              epsilon_high is the cap itself, ours is cap - 1)
    eps_low   "both" only: 0.2
    agg       "token-mean" (the paper's 1 / sum_i |o_i|)

Shape legend: B responses, T padded response width.
"""

from __future__ import annotations

import torch

from .checks import check_choice, check_objective_args, checked_tensors, plain_tensors
from .common import EPS, clip_stats, objective_loss, register, token_ratio

CISPO_EPS_HIGH = 4.0
"""CISPO's default eps_high: the IS weight is capped at 1 + 4 = 5 (ScaleRL's epsilon_max; the paper gives no value)."""
CISPO_IS_CLIPS = ("upper", "both")
"""Which sides of the IS weight CISPO clips: the upper bound only (the paper's practice, TRL), or both (verl)."""


# L = agg( -sg[min(r_it, 1 + eps_high)] A_it l_theta_it + beta k(l_theta_it, l_ref_it) )
@register("cispo")
def cispo_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
               eps_low: float = EPS, eps_high: float = CISPO_EPS_HIGH, beta: float = 0.0, kl_kind: str = "k3",
               agg: str = "token-mean", is_clip: str = "upper", max_len: int | None = None, validate: bool = True):
    """CISPO (MiniMax-M1, arXiv 2506.13585, §3.1, eqs. 4-5): REINFORCE with a clipped, stop-gradient IS weight.

        w_it = sg[ min(r_it, 1 + eps_high) ]            (is_clip="upper"; "both": clip(r_it, 1 - eps_low, 1 + eps_high))
        L    = (1/N) sum_i sum_t m_it ( -w_it A_it l_theta_it )

    Defaults: eps_high = 4.0 (weight cap 5, ScaleRL's; a reading), the upper bound only, ``token-mean``, no KL.
    Unlike PPO's clip, no token ever loses its gradient: a capped weight only shrinks it.
    Statistics: those of every objective; ``clip_frac`` is the fraction of real tokens whose weight was capped (its
    gradient shrunk, never removed), ``clip/{pos,neg}_{high,low}`` where r left [1 - eps_low, 1 + eps_high] on a
    clipped side, by the sign of A.
    """
    # 0. checked plain tensors (B, T), 0 at padding; the hyper-parameters checked unless the caller did so once
    if validate:
        check_objective_args(agg, kl_kind, eps_low, eps_high, None)
        check_choice(is_clip, CISPO_IS_CLIPS, "CISPO is_clip")
        logp, old_logp, A, m, ref_logp, _, _ = checked_tensors(logp, old_logp, advantages, mask, ref_logp, entropy,
                                                               old_entropy, beta=beta)
    else:
        logp, old_logp, A, m, ref_logp, _, _ = plain_tensors(logp, old_logp, advantages, mask, ref_logp)
    # 1. the clipped IS weight w_it, a constant of the update
    r = token_ratio(logp, old_logp).detach()                                 # (B, T)
    low_bound = 1.0 - eps_low if is_clip == "both" else 0.0                 # "upper": r > 0 is never below 0
    w = r.clamp(low_bound, 1.0 + eps_high)                                   # (B, T)
    # 2. lambda_it = -w_it A_it l_theta_it: its gradient is -w_it A_it at every real token
    lam = -w * A * logp                                                      # (B, T)
    with torch.no_grad():
        high, low = r > 1.0 + eps_high, r < low_bound
        stats = clip_stats(A, m, high, low, torch.zeros_like(m), logp.dtype)
        stats["clip_frac"] = ((high | low) & m).sum() / m.sum().clamp(min=1).to(logp.dtype)
    return objective_loss(lam, stats, logp=logp, old_logp=old_logp, m=m, ref_logp=ref_logp, beta=beta,
                          kl_kind=kl_kind, agg=agg, normalizer=normalizer, max_len=max_len)
