"""The math every objective is built from: aggregation, KL estimators, the clipped surrogate.

Every objective in ``minitepo.losses`` is the same pipeline (notation of spec/ALGORITHMS.md):

    0. check the inputs and replace every value at a masked position by 0   (`checks.checked_tensors`;
       `checks.plain_tensors` without the checks, for tensors a trainer built and checked once)
    1. build a ratio rho: the token ratio r_{i,t}, the sequence ratio s_i, or s_{i,t}
    2. per-token loss   lambda(rho, A) + beta * k(logp, ref_logp) [+ TEPO's masked KL]
                                                            (`clipped_surrogate`, `kl_penalty`)
    3. aggregate the (B, T) token loss to a scalar                          (`aggregate`)

Shape legend:
    B   sequences (responses) in the batch or micro-batch
    T   padded response width; position t of response i is real iff mask[i, t] == 1

Numerics (spec §1): ratios and KL values are computed in float32, or in float64 when the input is
float64. Junk at masked positions is replaced by 0 *before* any arithmetic (``checks.clean``),
because masking a product afterwards does not stop 0 * inf = NaN in the backward pass. Log-ratios
are clamped to [-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP] before ``exp``; beyond the clamp a token's ratio
carries no gradient (a ratio of e^20 is far outside any trust region anyway).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from .checks import AGG_MODES, KL_KINDS, check_choice, check_mask, check_normalizer, compute_dtype

LOG_RATIO_CLAMP = 20.0

# The clip ranges of the papers, each written once; the objectives' signatures take their defaults from here.
EPS = 0.2
"""PPO's clip range: GRPO's and Dr. GRPO's eps_low = eps_high, and the eps_low of DAPO, GTPO, GRPO-S and TEPO."""
EPS_HIGH_DAPO = 0.28
"""DAPO's "clip-higher" upper bound eps_high (also GTPO's, GRPO-S's and TEPO's "sequence" reading's)."""
EPS_LOW_GSPO, EPS_HIGH_GSPO = 3e-4, 4e-4
"""GSPO's clip range on the sequence ratio s_i (tiny, because s_i is a geometric mean)."""


# ----------------------------------------------------------------------------------------------
# 0. the registry: every objective, by name (what the trainer, the CLI and the testing kit look up)
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ObjectiveFacts:
    """What a trainer needs to know about an objective besides its function, filed with it by ``register``, so that
    no trainer branches on an objective's name."""

    advantages: str = "z-score"
    """Which advantages its paper trains on: "z-score" (group-relative, std-normalised), "mean-only" (Dr. GRPO: no
    division by the group's std), or "gtpo" / "grpo_s" (entropy-shaped, ``advantages.SHAPED_ADVANTAGES``)."""
    dynamic_sampling: bool = False
    """Whether its recipe drops groups whose answers are all right or all wrong (DAPO's dynamic sampling)."""
    clips_sequences: bool = False
    """Whether its clip acts on whole sequences (GSPO), so that its clip statistics count sequences, not tokens."""


OBJECTIVES: dict = {}
"""name -> objective function; filled by ``register`` and ``preset`` as the objective files are imported."""
OBJECTIVE_FACTS: dict[str, ObjectiveFacts] = {}
"""name -> its ``ObjectiveFacts``, filed beside it."""


def register(name: str, **facts):
    """Decorator: file the objective below under ``name`` in ``OBJECTIVES``, and its ``facts`` (``ObjectiveFacts``
    fields) in ``OBJECTIVE_FACTS``."""
    def add(fn):
        OBJECTIVES[name], OBJECTIVE_FACTS[name] = fn, ObjectiveFacts(**facts)
        return fn
    return add


def preset(name: str, fn, doc: str, facts: dict | None = None, **defaults):
    """``fn`` with other defaults (a paper's hyper-parameters), named ``{name}_loss`` and registered under ``name``
    with ``facts``. The same code, so no copy of ``fn``'s signature: ``inspect.signature`` shows the preset's
    defaults."""
    loss = functools.partial(fn, **defaults)
    loss.__name__, loss.__qualname__, loss.__doc__ = f"{name}_loss", f"{name}_loss", doc
    return register(name, **(facts or {}))(loss)


# ----------------------------------------------------------------------------------------------
# 1. aggregation: (B, T) token loss -> scalar   (spec §3)
# ----------------------------------------------------------------------------------------------

def step_normalizer(mask: torch.Tensor, mode: str, max_len: int | None = None) -> float:
    """The normaliser of ``mode`` for an optimizer step whose responses are the rows of ``mask``:
    N (real tokens) for token-mean, B' (rows with a real token) for the seq-mean modes, C = B * L_max
    for seq-mean-token-sum-norm. With gradient accumulation, compute it once on the whole step and
    pass it as ``normalizer`` to every micro-batch."""
    m = mask.bool() if mask.dtype != torch.bool else mask
    if mode == "token-mean":
        return float(m.sum().item())
    if mode in ("seq-mean-token-mean", "seq-mean-token-sum"):
        return float(m.any(dim=-1).sum().item())
    if mode == "seq-mean-token-sum-norm":
        if max_len is None:
            raise ValueError("'seq-mean-token-sum-norm' divides by the constant C = (number of sequences) x L_max, "
                             "where L_max is the sampler's response-length limit, not the padded width T; "
                             "pass max_len=L_max, or normalizer=C (for a micro-batch: the whole step's B x L_max)")
        if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len <= 0:
            raise ValueError(f"max_len must be a positive int (the response-length limit L_max), got {max_len!r}")
        return float(m.shape[0] * max_len)
    check_choice(mode, AGG_MODES, "aggregation mode")
    raise AssertionError  # unreachable


def aggregate_clean(x: torch.Tensor, m: torch.Tensor, mode: str, normalizer=None, max_len=None) -> torch.Tensor:
    """`aggregate` for inputs already checked and zeroed at masked positions (used by the objectives).

    Every mode is ``(sum over this batch's sequences of a per-sequence term) / normaliser``, so a
    micro-batch that divides by the optimizer step's global normaliser contributes exactly its share
    of the full-batch loss, and accumulated gradients equal the full-batch gradient.
    """
    if mode == "token-mean":
        # (1/N) sum_i sum_t m_it lambda_it            N = real tokens in the optimizer step
        total = x.sum()
    elif mode == "seq-mean-token-mean":
        # (1/B') sum_i (1/|o_i|) sum_t m_it lambda_it   |o_i| is local to a sequence; only B' is global
        lengths = m.sum(dim=-1).clamp(min=1).to(x.dtype)                     # (B,)
        total = (x.sum(dim=-1) / lengths).sum()
    elif mode in ("seq-mean-token-sum", "seq-mean-token-sum-norm"):
        # (1/B') or (1/C) times sum_i sum_t m_it lambda_it      C = B * L_max, a constant (Dr. GRPO)
        total = x.sum()
    else:
        check_choice(mode, AGG_MODES, "aggregation mode")
        raise AssertionError  # unreachable
    denom = check_normalizer(normalizer) if normalizer is not None else step_normalizer(m, mode, max_len)
    if denom == 0:
        raise ValueError(f"aggregation '{mode}' found no real tokens (mask is all 0), so there is nothing to "
                         "average; for a micro-batch of a larger step pass that step's normalizer")
    return total / denom


def aggregate(per_token: torch.Tensor, mask: torch.Tensor, mode: str, normalizer=None, max_len=None) -> torch.Tensor:
    """Reduce a (B, T) per-token loss to a scalar with one of the four modes of spec §3.

    ============================ ======================================= ====================
    mode                         formula                                 weight of sequence i
    ============================ ======================================= ====================
    ``token-mean``               (1/N)  sum_i sum_t m_it x_it             |o_i| / N
    ``seq-mean-token-mean``      (1/B') sum_i (1/|o_i|) sum_t m_it x_it   1 / B'
    ``seq-mean-token-sum``       (1/B') sum_i sum_t m_it x_it             |o_i| / B'
    ``seq-mean-token-sum-norm``  (1/C)  sum_i sum_t m_it x_it             |o_i| / C
    ============================ ======================================= ====================

    N = real tokens, B' = sequences with at least one real token, C = B * max_len (B = all rows,
    max_len = the response-length limit L_max, *not* the padded width; required for that mode unless
    ``normalizer`` is given). ``normalizer`` overrides N, B' or C: with gradient accumulation pass the
    value of the whole optimizer step to every micro-batch. Values at masked positions are ignored,
    whatever they are (NaN included).
    """
    if not isinstance(per_token, torch.Tensor) or per_token.dim() != 2:
        raise ValueError("per_token must be a (B, T) tensor")
    m = check_mask(mask, tuple(per_token.shape))
    check_choice(mode, AGG_MODES, "aggregation mode")
    x = torch.where(m, per_token, torch.zeros((), dtype=per_token.dtype, device=per_token.device))
    return aggregate_clean(x, m, mode, normalizer, max_len)


# ----------------------------------------------------------------------------------------------
# 2. KL estimators (spec §5)
# ----------------------------------------------------------------------------------------------

def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor, kind: str = "k3") -> torch.Tensor:
    """Per-token estimate of KL(pi_theta || pi_ref) from the log-probs of sampled tokens.

    With x = ref_logp - logp:

    ====  =========================  ==========================
    kind  value                      gradient w.r.t. logp
    ====  =========================  ==========================
    k1    logp - ref_logp            1
    k2    (logp - ref_logp)^2 / 2    logp - ref_logp
    k3    e^x - x - 1   (>= 0)       1 - e^x
    ====  =========================  ==========================

    Values: on tokens sampled from pi_theta, k1 and k3 are unbiased for KL(pi_theta || pi_ref) and k3
    never goes negative (DeepSeekMath, arXiv 2402.03300, uses k3); k2 is biased but low-variance.
    Gradients are what a loss actually uses, and they differ: on tokens sampled from pi_theta, k1's
    gradient (the score function) averages to zero, so k1 as a loss term does nothing on average;
    k2's gradient is an unbiased estimate of grad KL(pi_theta || pi_ref); k3's is an unbiased estimate
    of grad KL(pi_ref || pi_theta), the other direction. For TEPO's masked KL the tokens come from
    pi_old, not pi_theta, and the "reference" is pi_old itself: all three then have zero value and
    zero gradient at theta = theta_old (for k1 as |k1|).

    ``ref_logp`` is treated as a constant; the result keeps ``logp``'s graph (a KL computed under
    ``no_grad`` would silently do nothing). Shapes: any, equal; returns float32 (float64 for float64 input).
    """
    check_choice(kind, KL_KINDS, "KL estimator")
    if tuple(logp.shape) != tuple(ref_logp.shape):
        raise ValueError(f"logp {tuple(logp.shape)} and ref_logp {tuple(ref_logp.shape)} must have the same shape")
    dtype = compute_dtype(logp)
    diff = logp.to(dtype) - ref_logp.detach().to(dtype)                      # l_theta - l_ref
    if kind == "k1":
        return diff
    if kind == "k2":
        return 0.5 * diff.square()
    x = -diff
    # e^x - x - 1 written as expm1(x) - x: near x = 0, e^x - 1 in float32 loses the x^2/2 that k3 is made of and came
    # out about -6e-8 on 74 of 100k tokens at |x| ~ 1e-3; expm1 keeps it. The clamp acts only inside the exponential
    # (e^x overflows for junk-sized x; the linear part is safe).
    return torch.expm1(x.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)) - x


# ----------------------------------------------------------------------------------------------
# 3. ratios (spec §1)
# ----------------------------------------------------------------------------------------------

def token_ratio(logp: torch.Tensor, old_logp: torch.Tensor) -> torch.Tensor:
    """r_it = exp(l_theta_it - l_old_it), log-ratio clamped to +-20; 1 at padding.   (B, T)"""
    return torch.exp((logp - old_logp).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))


def sequence_log_ratio(logp: torch.Tensor, old_logp: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """log s_i = (1/|o_i|) sum_t m_it (l_theta_it - l_old_it); 0 for a response with no real token.   (B,)"""
    return (logp - old_logp).sum(dim=-1) / m.sum(dim=-1).to(logp.dtype).clamp(min=1)


def routed_ratio(log_s: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(s_i, s_it) from a per-response log-ratio ``log_s`` (B,) and the per-token quantity ``x`` (B, T) whose
    gradient it routes: s_i = exp(clamp(log_s)), s_it = sg[s_i] * exp(x_it - sg[x_it]) (value s_i, gradient
    s_i dx_it at token t). GSPO-token routes l_theta; TEPO's token_log reading its clipped log-ratios."""
    s = torch.exp(log_s.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))            # (B,)
    # GSPO's s_i has no gradient once its log is clamped; cut the routed gradient at the same place,
    # so that GSPO-token matches GSPO even for a wildly off-policy response.
    inside = (log_s.abs() <= LOG_RATIO_CLAMP).detach()[:, None]              # (B, 1)
    route = torch.where(inside, x - x.detach(), torch.zeros_like(x))        # value 0, gradient that of x
    return s, s.detach()[:, None] * torch.exp(route)                         # (B,), (B, T)


# ----------------------------------------------------------------------------------------------
# 4. the clipped surrogate (spec §1) and its diagnostics
# ----------------------------------------------------------------------------------------------

def clipped_surrogate(rho: torch.Tensor, adv: torch.Tensor, valid: torch.Tensor, eps_low: float, eps_high: float,
                      dual_clip: float | None) -> tuple[torch.Tensor, dict]:
    """PPO's clipped loss  lambda(rho, A) = -min(rho A, clip(rho, 1-eps_low, 1+eps_high) A), elementwise.

    With ``dual_clip = c`` (off when None): for A < 0, lambda <- min(lambda, -c A), which bounds the
    loss of a negative-advantage token whose ratio has grown far above 1 (Ye et al. 2020, "dual-clip PPO").

    ``rho``, ``adv`` and ``valid`` share one shape: (B, T) for token ratios, (B,) for GSPO's
    sequence ratios. Returns lambda and the clip statistics, measured over ``valid`` entries:

    * ``clip_frac`` - fraction where clipping removed the gradient: A > 0 and rho > 1 + eps_high,
      A < 0 and rho < 1 - eps_low, or (dual clip) A < 0 and rho > c.
    * ``clip/{pos,neg}_{high,low}`` - fraction with A > 0 (pos) or A < 0 (neg) whose ratio is above
      1 + eps_high (high) or below 1 - eps_low (low). pos_high and neg_low are the clipped (gradient
      removed) cases; pos_low and neg_high keep their gradient, because min picks the unclipped term
      there - they show the policy moving the wrong way, out of the trust region.
    * ``clip/dual`` - fraction where the dual clip removed the gradient.
    """
    clipped_rho = rho.clamp(1.0 - eps_low, 1.0 + eps_high)
    lam = torch.maximum(-rho * adv, -clipped_rho * adv)                      # = -min(rho A, clip(rho) A)
    dual = torch.zeros_like(valid)
    if dual_clip is not None:
        dual = (adv < 0) & (rho > dual_clip) & valid
        lam = torch.where(adv < 0, torch.minimum(lam, -dual_clip * adv), lam)

    stats = clip_stats(adv, valid, rho > 1.0 + eps_high, rho < 1.0 - eps_low, dual, rho.dtype)
    return lam, stats


@torch.no_grad()
def clip_stats(adv: torch.Tensor, valid: torch.Tensor, high: torch.Tensor, low: torch.Tensor, dual: torch.Tensor,
               dtype: torch.dtype) -> dict:
    """The clip diagnostics of ``clipped_surrogate`` (see there) from where the ratio lies above (``high``) or
    below (``low``) its clip range and where a dual clip bound (``dual``); fractions of the ``valid`` entries."""
    count = valid.sum().clamp(min=1).to(dtype)
    pos, neg = (adv > 0) & valid, (adv < 0) & valid
    frac = lambda hit: hit.sum() / count                                     # noqa: E731
    return {"clip/pos_high": frac(pos & high), "clip/pos_low": frac(pos & low), "clip/neg_high": frac(neg & high),
            "clip/neg_low": frac(neg & low), "clip/dual": frac(dual),
            "clip_frac": frac((pos & high) | (neg & low) | dual)}


# ----------------------------------------------------------------------------------------------
# 5. the end every objective shares: the reference KL, the aggregation, the shared statistics
# ----------------------------------------------------------------------------------------------

def objective_loss(lam: torch.Tensor, stats: dict, *, logp: torch.Tensor, old_logp: torch.Tensor, m: torch.Tensor,
                   ref_logp: torch.Tensor | None, beta: float, kl_kind: str, agg: str, normalizer,
                   max_len) -> tuple[torch.Tensor, dict]:
    """An objective's policy term lambda_it (B, T) plus the reference KL, aggregated (spec §1, §3, §5):

        L = agg( lambda_it + beta k(l_theta_it, l_ref_it) )

    and ``stats`` completed with what every objective reports: "pg_loss" (agg(lambda) alone), "ratio_mean" and
    "approx_kl_old" (token means of r_it and of k3 to the old policy), "kl_ref" when ``ref_logp`` is given."""
    zero = torch.zeros((), dtype=logp.dtype, device=logp.device)
    kl_ref = None if ref_logp is None else torch.where(m, kl_penalty(logp, ref_logp, kl_kind), zero)   # (B, T)
    per_token = lam + beta * kl_ref if kl_ref is not None and beta > 0 else lam
    loss = aggregate_clean(torch.where(m, per_token, zero), m, agg, normalizer, max_len)
    with torch.no_grad():
        n_tok = m.sum().clamp(min=1).to(logp.dtype)
        tok_mean = lambda x: torch.where(m, x, zero).sum() / n_tok           # noqa: E731
        stats["pg_loss"] = aggregate_clean(torch.where(m, lam, zero), m, agg, normalizer, max_len)
        stats["ratio_mean"] = tok_mean(token_ratio(logp, old_logp))
        stats["approx_kl_old"] = tok_mean(kl_penalty(logp, old_logp, "k3"))
        if kl_ref is not None:
            stats["kl_ref"] = tok_mean(kl_ref)
    return loss, stats
