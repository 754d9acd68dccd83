"""GMPO (Geometric-Mean Policy Optimization, arXiv 2507.20673, §3): maximise the geometric mean of the token ratios.

GRPO averages the token terms r_it A_i arithmetically, so one outlier ratio moves the whole update. GMPO takes their
geometric mean, which an outlier moves far less, and clips each token in log space *before* the mean, pessimistically
by the advantage's sign (a token can be held back from moving further in A's direction, never the other way):

    x_it   = l_theta_it - l_old_it
    ~x_it  = min(x_it, delta_high) if A_it > 0,   max(x_it, -delta_low) if A_it < 0,   0 if A_it = 0
    ~s_i   = exp( (1/|o_i|) sum_t m_it ~x_it )                      the clipped geometric-mean ratio
    L      = (1/B') sum_i ( -A_i ~s_i )                            (GMPO's objective, as a loss)

With the paper's delta_low = delta_high = 0.4 the token ratios live in (e^-0.4, e^0.4), far wider than GRPO's
(0.8, 1.2): the geometric mean keeps the update stable anyway. A clipped token carries no gradient; the rest of its
response still does, each token through d~s_i / dl_theta_it = ~s_i / |o_i|.

Implementation: the per-response term is written per token, routed as GSPO-token does,
~s_it = sg[~s_i] exp(~x_it - sg[~x_it]) (value ~s_i, gradient ~s_i d~x_it), with the policy term -A_it ~s_it and any
of the four aggregations. With one advantage per response and ``seq-mean-token-mean`` this is the formula above in
value and gradient (each response's |o_i| equal terms averaged); per-token advantages clip and weigh each token by its
own A_it. (TEPO's ``ratio_clip="token_log"`` is this clip; ``tepo_loss(beta_mask=0, agg="seq-mean-token-mean")`` is
``gmpo_loss``, a test keeps them equal.)

The four public versions (the paper's code, verl's ``geo_mean``, TRL's experimental GMPO, this one) differ in six
choices; each is a keyword here or a note in docs/objectives.md:

    delta_low, delta_high  0.4 / 0.4 nats (the paper's e^+-0.4; verl reads the actor's clip_ratio_low / _high)
    zero_adv_clip          how a token with A = 0 is clipped: "zero" (default: the paper's sgn(0) = 0 puts its
                           log-ratio at 0, as verl) | "as_positive" (the paper's code: A >= 0 clipped above)
                           | "as_negative" (TRL: A <= 0 clipped below). The loss and gradient of an A = 0 token
                           are 0 either way; the choice moves ~s_i only when advantages vary within a response
    agg                    sequence weighting: "seq-mean-token-mean" (default: every response 1/B', the paper's
                           1/G) or any of the four (``token-mean`` weighs a response by |o_i| / N, as TEPO)
    empty_rows             fully-masked rows: "skip" (default: B' counts responses with a real token) | "count"
                           (divide by all B rows, as verl's and TRL's mean over the batch; only without an
                           explicit ``normalizer``, and only for the seq-mean modes)
    truncation, entropy    not loss switches: the paper's code drops truncated responses (``ignore_no_eos``) and
                           TRL can drop low-entropy tokens (``top_entropy_quantile``); both are a mask, so pass
                           that mask (with beta = 0 it is exactly their loss)

Numerics, as every objective here: log ~s_i is clamped to [-20, 20] (no gradient beyond), which verl and TRL do not do.
Shape legend: B responses, T padded response width.
"""

from __future__ import annotations

import math

import torch

from .checks import check_choice, check_objective_args, checked_tensors, plain_tensors
from .common import EPS, LOG_RATIO_CLAMP, objective_loss, register

GMPO_DELTA = 0.4
"""GMPO's log-space clip range delta_low = delta_high: token ratios clipped to (e^-0.4, e^0.4) (the paper's, §4)."""
GMPO_ZERO_ADV_CLIPS = ("zero", "as_positive", "as_negative")
"""How GMPO's sign rule treats a token with A = 0 (see the module docstring)."""
GMPO_EMPTY_ROWS = ("skip", "count")
"""Whether GMPO's sequence mean counts fully-masked rows."""


def check_gmpo_args(delta_low, delta_high, zero_adv_clip, empty_rows) -> None:
    for name, value in (("delta_low", delta_low), ("delta_high", delta_high)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value > 0 and math.isfinite(value)):
            raise ValueError(f"{name} (GMPO's clip range, in nats) must be a finite number > 0, got {value!r}")
    check_choice(zero_adv_clip, GMPO_ZERO_ADV_CLIPS, "GMPO zero_adv_clip")
    check_choice(empty_rows, GMPO_EMPTY_ROWS, "GMPO empty_rows")


# L = (1/B') sum_i -A_i ~s_i,   ~s_i = exp( (1/|o_i|) sum_t m_it ~x_it ),  ~x_it = x_it clipped to +-0.4 by sgn(A_it)
@register("gmpo")
def gmpo_loss(*, logp, old_logp, advantages, mask, ref_logp=None, entropy=None, old_entropy=None, normalizer=None,
              delta_low: float = GMPO_DELTA, delta_high: float = GMPO_DELTA, beta: float = 0.0, kl_kind: str = "k3",
              agg: str = "seq-mean-token-mean", zero_adv_clip: str = "zero", empty_rows: str = "skip",
              max_len: int | None = None, validate: bool = True):
    """GMPO (arXiv 2507.20673, §3, the GMPO objective with token-level clipping): the clipped geometric mean.

        ~x_it = min(x_it, delta_high) if A_it > 0,  max(x_it, -delta_low) if A_it < 0,  0 if A_it = 0
        ~s_it = sg[~s_i] exp(~x_it - sg[~x_it]),    ~s_i = exp( (1/|o_i|) sum_t m_it ~x_it )
        L     = (1/B') sum_i (1/|o_i|) sum_t m_it ( -A_it ~s_it )   = (1/B') sum_i -A_i ~s_i  for (B,) advantages

    Defaults: delta_low = delta_high = 0.4, ``seq-mean-token-mean``, no KL. Switches (module docstring):
    ``zero_adv_clip``, ``empty_rows``, ``agg``, ``beta`` / ``kl_kind``.
    Statistics: those of every objective (the clip ones per token, where x_it left [-delta_low, delta_high], by the
    sign of A; ``clip_frac`` the tokens actually clipped) and "seq_ratio_mean" (the unclipped s_i).
    """
    if validate:
        check_objective_args(agg, kl_kind, EPS, EPS, None)
        check_gmpo_args(delta_low, delta_high, zero_adv_clip, empty_rows)
        logp, old_logp, A, m, ref_logp, _, _ = checked_tensors(logp, old_logp, advantages, mask, ref_logp, entropy,
                                                               old_entropy, beta=beta)
    else:
        logp, old_logp, A, m, ref_logp, _, _ = plain_tensors(logp, old_logp, advantages, mask, ref_logp)
    x = logp - old_logp                                                      # (B, T) log-ratio, 0 at padding
    lengths = m.sum(dim=-1).to(logp.dtype).clamp(min=1)                      # (B,) |o_i|
    # 1. the sign rule: which side of [-delta_low, delta_high] may clip each token
    up = A > 0 if zero_adv_clip != "as_positive" else A >= 0                 # (B, T) clipped from above
    down = A < 0 if zero_adv_clip != "as_negative" else A <= 0               # (B, T) clipped from below
    high, low = x > delta_high, x < -delta_low                               # (B, T) bool each
    clipped = ((up & high) | (down & low)) & m                               # (B, T)
    x_clip = torch.where(clipped, x.detach().clamp(-delta_low, delta_high), x)   # (B, T) ~x_it
    if zero_adv_clip == "zero":                                              # sgn(0) = 0: rho^0 = 1
        x_clip = torch.where(A == 0, torch.zeros_like(x_clip), x_clip)
    # 2. ~s_it = sg[~s_i] exp(~x_it - sg[~x_it]): value ~s_i, gradient ~s_i d~x_it (none beyond the +-20 clamp)
    log_s = x_clip.sum(dim=-1) / lengths                                     # (B,)
    s_i = torch.exp(log_s.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)).detach()[:, None]   # (B, 1)
    inside = (log_s.abs() <= LOG_RATIO_CLAMP).detach()[:, None]              # (B, 1)
    s_tok = s_i * torch.exp(torch.where(inside, x_clip - x_clip.detach(), torch.zeros_like(x_clip)))   # (B, T)
    lam = -A * s_tok                                                         # (B, T) lambda_it = -A_it ~s_it
    with torch.no_grad():
        n_tok = m.sum().clamp(min=1).to(logp.dtype)
        pos, neg = (A > 0) & m, (A < 0) & m
        stats = {"clip/pos_high": (pos & high).sum() / n_tok, "clip/pos_low": (pos & low).sum() / n_tok,
                 "clip/neg_high": (neg & high).sum() / n_tok, "clip/neg_low": (neg & low).sum() / n_tok,
                 "clip/dual": torch.zeros((), dtype=logp.dtype, device=logp.device),
                 "clip_frac": clipped.sum() / n_tok}
        s = torch.exp((x.sum(dim=-1) / lengths).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))   # (B,) unclipped s_i
        nonempty = m.any(dim=-1)
        stats["seq_ratio_mean"] = torch.where(nonempty, s, torch.zeros_like(s)).sum() / nonempty.sum().clamp(min=1)
    if empty_rows == "count" and normalizer is None and agg in ("seq-mean-token-mean", "seq-mean-token-sum"):
        normalizer = float(m.shape[0])                                       # all B rows, empty ones included
    return objective_loss(lam, stats, logp=logp, old_logp=old_logp, m=m, ref_logp=ref_logp, beta=beta,
                          kl_kind=kl_kind, agg=agg, normalizer=normalizer, max_len=max_len)
