"""Token-ratio objectives: GRPO, DAPO, Dr. GRPO, and the DAPO loss driven by entropy-shaped advantages (GTPO, GRPO-S).

All five are one function, ``token_ratio_loss``, with different defaults (``preset``):

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
    validate    True (the default): every hyper-parameter and tensor is checked, with an error that says what is
                allowed. The trainer passes False: it ran these checks once, when its config was made
                (``losses.check_objective_kwargs``), and builds the tensors itself (``checks.plain_tensors``)
Returns ``(loss, stats)``: a scalar to minimise and a dict of detached scalar diagnostics.
"""

from __future__ import annotations

from .checks import prepared_inputs
from .common import EPS, EPS_HIGH_DAPO, clipped_surrogate, objective_loss, preset, token_ratio


# L = agg_{i,t}( lambda(r_it, A_it; eps_low, eps_high) + beta k(l_theta_it, l_ref_it) ),   r_it = exp(l_theta - l_old)
def token_ratio_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None,
                     normalizer=None, eps_low: float = EPS, eps_high: float = EPS, beta: float = 0.0,
                     kl_kind: str = "k3", agg: str = "token-mean", dual_clip: float | None = None,
                     max_len: int | None = None, validate: bool = True):
    """The clipped token-ratio objective of spec §1; ``grpo_loss``, ``dapo_loss``, ``dr_grpo_loss``, ``gtpo_loss``
    and ``grpo_s_loss`` are this function with their papers' defaults."""
    dual_c, (logp, old_logp, A, m, ref_logp, _, _) = prepared_inputs(
        validate, logp, old_logp, advantages, mask, ref_logp, entropy, old_entropy, agg=agg, kl_kind=kl_kind,
        eps_low=eps_low, eps_high=eps_high, dual_clip=dual_clip, beta=beta)   # (B, T) each
    lam, stats = clipped_surrogate(token_ratio(logp, old_logp), A, m, eps_low, eps_high, dual_c)   # (B, T)
    return objective_loss(lam, stats, logp=logp, old_logp=old_logp, m=m, ref_logp=ref_logp, beta=beta,
                          kl_kind=kl_kind, agg=agg, normalizer=normalizer, max_len=max_len)


# GRPO:  L = (1/B') sum_i (1/|o_i|) sum_t m_it [ lambda(r_it, A_i; 0.2, 0.2) + 0.04 k3(l_theta_it, l_ref_it) ]
grpo_loss = preset("grpo", token_ratio_loss, eps_low=EPS, eps_high=EPS, beta=0.04, agg="seq-mean-token-mean", doc="""
    GRPO (DeepSeekMath, arXiv 2402.03300, eq. 3): token ratio, symmetric clip, KL to a reference in the loss.

        L = (1/B') sum_i (1/|o_i|) sum_t m_it [ lambda(r_it, A_i; 0.2, 0.2) + beta k3(l_theta_it, l_ref_it) ]

    A_i: group-relative, std-normalised (``advantages.group_advantages(scale="std")``).
    Defaults: eps_low = eps_high = 0.2, beta = 0.04 with the k3 estimator, ``seq-mean-token-mean``.
    beta > 0 needs ``ref_logp``; beta = 0 removes the reference model entirely.
    Known property of this aggregation: a token of a long response weighs less than one of a short
    response (1/|o_i|), which is what Dr. GRPO and DAPO change.
    """)

# DAPO:  L = (1/N) sum_i sum_t m_it lambda(r_it, A_i; 0.2, 0.28)          N = real tokens in the step
dapo_loss = preset("dapo", token_ratio_loss, facts=dict(dynamic_sampling=True), eps_low=EPS, eps_high=EPS_HIGH_DAPO, beta=0.0, agg="token-mean", doc="""
    DAPO (arXiv 2503.14476, eq. 8): token ratio, clip-higher, token-level mean, no KL.

        L = (1/N) sum_i sum_t m_it lambda(r_it, A_i; 0.2, 0.28)          N = real tokens in the step

    eps_high > eps_low ("clip-higher") leaves low-probability tokens more room to grow, against
    entropy collapse; ``token-mean`` gives every token the same weight, whatever its response's length.
    DAPO's other two techniques act on the data, not the loss: dynamic sampling
    (``advantages.informative_groups``) and overlong reward shaping (``advantages.overlong_penalty``).
    """)

# Dr. GRPO:  L = (1/C) sum_i sum_t m_it lambda(r_it, A_i; 0.2, 0.2)      C = B * L_max, a constant
dr_grpo_loss = preset("dr_grpo", token_ratio_loss, facts=dict(advantages="mean-only"), eps_low=EPS, eps_high=EPS, beta=0.0, agg="seq-mean-token-sum-norm",
                      doc="""
    Dr. GRPO (arXiv 2503.20783, "GRPO done right"): GRPO without its two normalisation biases.

        L = (1/C) sum_i sum_t m_it lambda(r_it, A_i; 0.2, 0.2)           C = B * L_max, a constant

    A_i = R_i - mean_g(R): no division by the group std (``group_advantages(scale="none")``), and no
    division by |o_i|. C must be fixed in advance: pass ``max_len`` = L_max, the sampler's
    response-length limit (not the padded width T), or ``normalizer`` = C for a micro-batch (the
    whole step's B * L_max). No KL by default.
    """)

# GTPO:  L = (1/N) sum_i sum_t m_it lambda(r_it, A_it; 0.2, 0.28)        A_it entropy-shaped, per token
# (GTPO and GRPO-S build on DAPO and its dynamic sampling, as their papers do)
gtpo_loss = preset("gtpo", token_ratio_loss, facts=dict(advantages="gtpo", dynamic_sampling=True), eps_low=EPS, eps_high=EPS_HIGH_DAPO, beta=0.0, agg="token-mean", doc="""
    GTPO (arXiv 2508.04349): DAPO's loss driven by entropy-shaped *token* advantages A_{i,t}.

        L = (1/N) sum_i sum_t m_it lambda(r_it, A_it; 0.2, 0.28)

    This function is DAPO's loss; the method lives in the advantages. Compute them with
    ``minitepo.advantages.gtpo_advantages(rewards, entropy, mask, ..., alpha1=1.0, alpha2=0.1,
    adv_norm="union")`` from the *rollout's* (detached) entropies and pass the (B, T) result here:
    uncertain tokens of correct answers earn more, confident tokens of wrong answers lose more.
    (Not to be confused with the other "GTPO", arXiv 2508.03772, a different method.)
    """)

# GRPO-S:  L = (1/N) sum_i sum_t m_it lambda(r_it, A_i; 0.2, 0.28)       A_i entropy-shaped, per response
grpo_s_loss = preset("grpo_s", token_ratio_loss, facts=dict(advantages="grpo_s", dynamic_sampling=True), eps_low=EPS, eps_high=EPS_HIGH_DAPO, beta=0.0, agg="token-mean",
                     doc="""
    GRPO-S (arXiv 2508.04349): DAPO's loss driven by entropy-shaped *sequence* advantages A_i.

        L = (1/N) sum_i sum_t m_it lambda(r_it, A_i; 0.2, 0.28)

    As for GTPO, the method lives in the advantages: compute the (B,) advantages with
    ``minitepo.advantages.grpo_s_advantages(rewards, entropy, mask, ...)`` (shaped by each response's
    mean token entropy, then group z-scored) and pass them here.
    """)
