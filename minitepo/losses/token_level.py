"""Token-ratio objectives: GRPO, DAPO, Dr. GRPO, and the DAPO loss driven by entropy-shaped advantages (GTPO, GRPO-S).

All five are the same computation with different defaults:

    r_{i,t} = exp(l_theta_{i,t} - l_old_{i,t})                                  token ratio   (B, T)
    L       = agg_{i,t}( lambda(r_{i,t}, A_{i,t}; eps_low, eps_high) + beta * k(l_theta, l_ref) )

where lambda is the clipped surrogate of spec §1 and agg one of the four modes of spec §3. What
distinguishes them is the advantage (computed by ``minitepo.advantages``), the clip range and the
aggregation - the table in docs/objectives.md puts them side by side.

Common keyword arguments (every objective in ``minitepo.losses`` accepts these):
    logp        (B, T) log pi_theta of the sampled tokens; carries the gradient
    old_logp    (B, T) log pi_old, recorded by the sampler (constant)
    advantages  (B,) one per response, or (B, T) one per token (constant)
    mask        (B, T) bool or float 0/1: 1 on real response tokens
    ref_logp    (B, T) log pi_ref, needed when beta > 0; when given, stats["kl_ref"] is reported
    entropy, old_entropy  (B, T) full-vocabulary entropies; checked, used only by TEPO's mask
    normalizer  the optimizer step's N / B' / C for the chosen ``agg`` (gradient accumulation);
                computed from ``mask`` when omitted
    max_len     L_max, the response-length limit; needed by ``agg="seq-mean-token-sum-norm"``
    dual_clip   None (off) or c > 1: for A < 0, lambda <- min(lambda, -c A)
Returns ``(loss, stats)``: a scalar to minimise and a dict of detached scalar diagnostics.
"""

from __future__ import annotations

from .checks import checked_inputs
from .common import clipped_surrogate, policy_loss, token_ratio


def _token_objective(*, logp, old_logp, advantages, mask, ref_logp, entropy, old_entropy, normalizer,
                     eps_low, eps_high, beta, kl_kind, agg, dual_clip, max_len):
    b, dual_c = checked_inputs(locals())
    ratio = token_ratio(b)                                                   # (B, T)
    lam, stats = clipped_surrogate(ratio, b.adv_tok, b.m, eps_low, eps_high, dual_c)   # (B, T)
    return policy_loss(b, lam, stats, beta=beta, kl_kind=kl_kind, agg=agg, normalizer=normalizer, max_len=max_len)


def grpo_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
              eps_low: float = 0.2, eps_high: float = 0.2, beta: float = 0.04, kl_kind: str = "k3",
              agg: str = "seq-mean-token-mean", dual_clip: float | None = None, max_len: int | None = None):
    """GRPO (DeepSeekMath, arXiv 2402.03300, eq. 3): token ratio, symmetric clip, KL to a reference in the loss.

        L = (1/B') sum_i (1/|o_i|) sum_t m_it [ lambda(r_it, A_i; 0.2, 0.2) + beta k3(l_theta_it, l_ref_it) ]

    A_i: group-relative, std-normalised (``advantages.group_advantages(scale="std")``).
    Defaults: eps_low = eps_high = 0.2, beta = 0.04 with the k3 estimator, ``seq-mean-token-mean``.
    beta > 0 needs ``ref_logp``; beta = 0 removes the reference model entirely.
    Known property of this aggregation: a token of a long response weighs less than one of a short
    response (1/|o_i|), which is what Dr. GRPO and DAPO change.
    """
    return _token_objective(**locals())  # all the arguments above, unchanged


def dapo_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
              eps_low: float = 0.2, eps_high: float = 0.28, beta: float = 0.0, kl_kind: str = "k3",
              agg: str = "token-mean", dual_clip: float | None = None, max_len: int | None = None):
    """DAPO (arXiv 2503.14476, eq. 8): token ratio, clip-higher, token-level mean, no KL.

        L = (1/N) sum_i sum_t m_it lambda(r_it, A_i; 0.2, 0.28)          N = real tokens in the step

    eps_high > eps_low ("clip-higher") leaves low-probability tokens more room to grow, against
    entropy collapse; ``token-mean`` gives every token the same weight, whatever its response's length.
    DAPO's other two techniques act on the data, not the loss: dynamic sampling
    (``advantages.informative_groups``) and overlong reward shaping (``advantages.overlong_penalty``).
    """
    return _token_objective(**locals())  # all the arguments above, unchanged


def dr_grpo_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
                 eps_low: float = 0.2, eps_high: float = 0.2, beta: float = 0.0, kl_kind: str = "k3",
                 agg: str = "seq-mean-token-sum-norm", dual_clip: float | None = None, max_len: int | None = None):
    """Dr. GRPO (arXiv 2503.20783, "GRPO done right"): GRPO without its two normalisation biases.

        L = (1/C) sum_i sum_t m_it lambda(r_it, A_i; 0.2, 0.2)           C = B * L_max, a constant

    A_i = R_i - mean_g(R): no division by the group std (``group_advantages(scale="none")``), and no
    division by |o_i|. C must be fixed in advance: pass ``max_len`` = L_max, the sampler's
    response-length limit (not the padded width T), or ``normalizer`` = C for a micro-batch (the
    whole step's B * L_max). No KL by default.
    """
    return _token_objective(**locals())  # all the arguments above, unchanged


def gtpo_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
              eps_low: float = 0.2, eps_high: float = 0.28, beta: float = 0.0, kl_kind: str = "k3",
              agg: str = "token-mean", dual_clip: float | None = None, max_len: int | None = None):
    """GTPO (arXiv 2508.04349): DAPO's loss driven by entropy-shaped *token* advantages A_{i,t}.

        L = (1/N) sum_i sum_t m_it lambda(r_it, A_it; 0.2, 0.28)

    This function is DAPO's loss; the method lives in the advantages. Compute them with
    ``minitepo.advantages.gtpo_advantages(rewards, entropy, mask, ..., alpha1=1.0, alpha2=0.1,
    adv_norm="union")`` from the *rollout's* (detached) entropies and pass the (B, T) result here:
    uncertain tokens of correct answers earn more, confident tokens of wrong answers lose more.
    (Not to be confused with the other "GTPO", arXiv 2508.03772, a different method.)
    """
    return _token_objective(**locals())  # all the arguments above, unchanged


def grpo_s_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
                eps_low: float = 0.2, eps_high: float = 0.28, beta: float = 0.0, kl_kind: str = "k3",
                agg: str = "token-mean", dual_clip: float | None = None, max_len: int | None = None):
    """GRPO-S (arXiv 2508.04349): DAPO's loss driven by entropy-shaped *sequence* advantages A_i.

        L = (1/N) sum_i sum_t m_it lambda(r_it, A_i; 0.2, 0.28)

    As for GTPO, the method lives in the advantages: compute the (B,) advantages with
    ``minitepo.advantages.grpo_s_advantages(rewards, entropy, mask, ...)`` (shaped by each response's
    mean token entropy, then group z-scored) and pass them here.
    """
    return _token_objective(**locals())  # all the arguments above, unchanged
