"""Naive reference implementations ("oracles") of minitepo's objectives and advantages.

Everything here is written straight from ``spec/ALGORITHMS.md`` (section numbers in the
docstrings), one token at a time, with Python floats (IEEE float64) and **hand-derived
gradients**. Nothing is vectorised and nothing uses torch or autograd, so a mistake in the
library cannot be copied into the check that is meant to catch it.

Inputs are nested Python lists (``tensor.tolist()``); ``mask[i][t]`` is truthy on real tokens.
An oracle never *reads* a value at a masked position, so junk there cannot influence it.

Gradients are returned w.r.t. ``logp`` as a (B, T) nested list, zero at masked positions.
"""
from __future__ import annotations

import math

LOG_RATIO_CLAMP = 20.0  # spec section 1: clamp log-ratios to [-20, 20] before exp
AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")


def _zeros(B: int, T: int) -> list[list[float]]:
    return [[0.0] * T for _ in range(B)]


def _lengths(mask) -> list[int]:
    return [sum(1 for m in row if m) for row in mask]


def _adv(advantages, i: int, t: int) -> float:
    """A_i for sequence advantages (B,), A_{i,t} for token advantages (B, T)."""
    a = advantages[i]
    return float(a[t]) if isinstance(a, list) else float(a)


def ratio_from_log_ratio(log_ratio: float) -> tuple[float, float]:
    """exp(clamp(x, -20, 20)) and its derivative w.r.t. x (zero where the clamp is active)."""
    clamped = max(-LOG_RATIO_CLAMP, min(LOG_RATIO_CLAMP, log_ratio))
    ratio = math.exp(clamped)
    return ratio, (ratio if clamped == log_ratio else 0.0)


# --------------------------------------------------------------------------- clipped surrogate


def surrogate(rho: float, adv: float, eps_low: float, eps_high: float, dual_clip=None) -> tuple[float, float]:
    """lambda(rho, A) = -min(rho*A, clip(rho, 1-eps_low, 1+eps_high)*A) and d lambda / d rho.

    The clipped branch is constant in rho, so its derivative is 0. Dual clip (A < 0 only):
    lambda <- min(lambda, -c*A), again flat where it binds.
    """
    clipped = max(1.0 - eps_low, min(1.0 + eps_high, rho))
    if rho * adv <= clipped * adv:
        value, slope = -rho * adv, -adv
    else:
        value, slope = -clipped * adv, 0.0
    if dual_clip is not None and adv < 0 and value > -dual_clip * adv:
        value, slope = -dual_clip * adv, 0.0
    return value, slope


# --------------------------------------------------------------------------- KL estimators (section 5)


def kl_estimate(logp: float, ref_logp: float, kind: str) -> tuple[float, float]:
    """Per-token KL estimator value and its derivative w.r.t. logp (x = ref_logp - logp)."""
    if kind == "k1":
        return logp - ref_logp, 1.0
    if kind == "k2":
        return 0.5 * (logp - ref_logp) ** 2, logp - ref_logp
    if kind == "k3":
        x = ref_logp - logp
        return math.exp(x) - x - 1.0, 1.0 - math.exp(x)
    if kind == "k1_abs":
        d = logp - ref_logp
        return abs(d), (1.0 if d > 0 else -1.0 if d < 0 else 0.0)
    raise ValueError(kind)


def exact_kl(p: list[float], q: list[float]) -> float:
    """KL(p || q) = sum_a p(a) log(p(a)/q(a)) for two categorical distributions."""
    return sum(pa * math.log(pa / qa) for pa, qa in zip(p, q) if pa > 0)


# --------------------------------------------------------------------------- aggregation (section 3)


def step_normalizer(mask, agg: str, max_len=None) -> float:
    """The optimizer step's normaliser: N tokens, B' non-empty sequences, or C = B * L_max."""
    lengths = _lengths(mask)
    if agg == "token-mean":
        return float(sum(lengths))
    if agg in ("seq-mean-token-mean", "seq-mean-token-sum"):
        return float(sum(1 for n in lengths if n > 0))
    if agg == "seq-mean-token-sum-norm":
        width = max_len if max_len is not None else len(mask[0])
        return float(len(mask) * width)
    raise ValueError(agg)


def token_weights(mask, agg: str, normalizer=None, max_len=None) -> list[list[float]]:
    """w[i][t] such that agg(lambda) = sum_i sum_t w[i][t] * lambda[i][t]."""
    if normalizer is None:
        normalizer = step_normalizer(mask, agg, max_len)
    lengths = _lengths(mask)
    w = _zeros(len(mask), len(mask[0]))
    if normalizer == 0:  # no real token anywhere: nothing to average
        return w
    for i, row in enumerate(mask):
        for t, m in enumerate(row):
            if not m:
                continue
            if agg == "seq-mean-token-mean":
                w[i][t] = 1.0 / (lengths[i] * normalizer)
            else:  # token-mean, seq-mean-token-sum, seq-mean-token-sum-norm: a plain sum over a constant
                w[i][t] = 1.0 / normalizer
    return w


def aggregate(per_token, mask, agg: str, normalizer=None, max_len=None) -> float:
    w = token_weights(mask, agg, normalizer, max_len)
    return sum(w[i][t] * per_token[i][t] for i in range(len(mask)) for t in range(len(mask[0])) if mask[i][t])


# --------------------------------------------------------------------------- token-ratio objectives (section 4)


def token_ratio_loss(logp, old_logp, advantages, mask, *, eps_low, eps_high, agg, beta=0.0, ref_logp=None,
                     kl_kind="k3", dual_clip=None, normalizer=None, max_len=None):
    """agg( lambda(r_{i,t}, A) + beta * k(logp, ref_logp) ): GRPO, DAPO, Dr. GRPO, GTPO, GRPO-S."""
    B, T = len(mask), len(mask[0])
    w = token_weights(mask, agg, normalizer, max_len)
    loss, grad = 0.0, _zeros(B, T)
    for i in range(B):
        for t in range(T):
            if not mask[i][t]:
                continue
            r, dr = ratio_from_log_ratio(logp[i][t] - old_logp[i][t])
            lam, dlam = surrogate(r, _adv(advantages, i, t), eps_low, eps_high, dual_clip)
            value, slope = lam, dlam * dr
            if beta:
                k, dk = kl_estimate(logp[i][t], ref_logp[i][t], kl_kind)
                value, slope = value + beta * k, slope + beta * dk
            loss += w[i][t] * value
            grad[i][t] = w[i][t] * slope
    return loss, grad


def grpo_loss(logp, old_logp, advantages, mask, *, eps_low=0.2, eps_high=0.2, beta=0.04, ref_logp=None,
              kl_kind="k3", agg="seq-mean-token-mean", dual_clip=None, normalizer=None, max_len=None):
    return token_ratio_loss(logp, old_logp, advantages, mask, eps_low=eps_low, eps_high=eps_high, agg=agg,
                            beta=beta, ref_logp=ref_logp, kl_kind=kl_kind, dual_clip=dual_clip,
                            normalizer=normalizer, max_len=max_len)


def dapo_loss(logp, old_logp, advantages, mask, *, eps_low=0.2, eps_high=0.28, beta=0.0, ref_logp=None,
              kl_kind="k3", agg="token-mean", dual_clip=None, normalizer=None, max_len=None):
    return token_ratio_loss(logp, old_logp, advantages, mask, eps_low=eps_low, eps_high=eps_high, agg=agg,
                            beta=beta, ref_logp=ref_logp, kl_kind=kl_kind, dual_clip=dual_clip,
                            normalizer=normalizer, max_len=max_len)


def dr_grpo_loss(logp, old_logp, advantages, mask, *, eps_low=0.2, eps_high=0.2, beta=0.0, ref_logp=None,
                 kl_kind="k3", agg="seq-mean-token-sum-norm", dual_clip=None, normalizer=None, max_len=None):
    return token_ratio_loss(logp, old_logp, advantages, mask, eps_low=eps_low, eps_high=eps_high, agg=agg,
                            beta=beta, ref_logp=ref_logp, kl_kind=kl_kind, dual_clip=dual_clip,
                            normalizer=normalizer, max_len=max_len)


gtpo_loss = dapo_loss  # section 7: "Loss: DAPO's ... with A_{i,t}"
grpo_s_loss = dapo_loss


# --------------------------------------------------------------------------- sequence-ratio objectives


def _reference_kl(logp, ref_logp, mask, w, beta, kl_kind):
    """sum_{i,t} w_{i,t} * beta * k(l, l_ref) and its gradient, for objectives that add it to their token loss."""
    B, T = len(mask), len(mask[0])
    loss, grad = 0.0, _zeros(B, T)
    if not beta:
        return loss, grad
    for i in range(B):
        for t in range(T):
            if mask[i][t]:
                k, dk = kl_estimate(logp[i][t], ref_logp[i][t], kl_kind)
                loss += w[i][t] * beta * k
                grad[i][t] = w[i][t] * beta * dk
    return loss, grad


def _plus(loss_grad, extra):
    (l1, g1), (l2, g2) = loss_grad, extra
    return l1 + l2, [[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(g1, g2)]


def sequence_log_ratio(logp_row, old_row, mask_row):
    """(1/|o_i|) sum_t m_{i,t} (logp - old_logp), or None for a response without real tokens."""
    diffs = [lp - lo for lp, lo, m in zip(logp_row, old_row, mask_row) if m]
    return sum(diffs) / len(diffs) if diffs else None


def sequence_ratios(logp, old_logp, mask) -> list:
    """s_i (geometric-mean sequence ratio), None for an empty response."""
    out = []
    for i in range(len(mask)):
        x = sequence_log_ratio(logp[i], old_logp[i], mask[i])
        out.append(None if x is None else ratio_from_log_ratio(x)[0])
    return out


def gspo_loss(logp, old_logp, advantages, mask, *, eps_low=3e-4, eps_high=4e-4, agg="seq-mean-token-mean",
              dual_clip=None, normalizer=None, max_len=None, beta=0.0, ref_logp=None, kl_kind="k3"):
    """(1/B') sum_i lambda(s_i, A_i): the gradient reaches every real token through s_i,
    d s_i / d l_{i,t} = s_i / |o_i|.

    Written as a token loss lambda(s_i, A_{i,t}) that is constant along each response and aggregated
    with `agg`: under seq-mean-token-mean that is exactly the formula above, and any other mode (or
    token advantages) re-weights the same per-sequence terms. Unlike GSPO-token, the gradient of the
    term at (i, t') spreads evenly over all tokens of o_i.
    """
    B, T = len(mask), len(mask[0])
    lengths = _lengths(mask)
    w = token_weights(mask, agg, normalizer, max_len)
    loss, grad = 0.0, _zeros(B, T)
    for i in range(B):
        x = sequence_log_ratio(logp[i], old_logp[i], mask[i])
        if x is None:
            continue
        s, ds = ratio_from_log_ratio(x)
        slope_of_s = 0.0  # d(loss)/d s_i, collected over the response's terms
        for t in range(T):
            if mask[i][t]:
                lam, dlam = surrogate(s, _adv(advantages, i, t), eps_low, eps_high, dual_clip)
                loss += w[i][t] * lam
                slope_of_s += w[i][t] * dlam
        for t in range(T):
            if mask[i][t]:
                grad[i][t] = slope_of_s * ds / lengths[i]
    return _plus((loss, grad), _reference_kl(logp, ref_logp, mask, w, beta, kl_kind))


def gspo_token_loss(logp, old_logp, advantages, mask, *, eps_low=3e-4, eps_high=4e-4, agg="seq-mean-token-mean",
                    dual_clip=None, normalizer=None, max_len=None, beta=0.0, ref_logp=None, kl_kind="k3"):
    """agg( lambda(s_{i,t}, A_{i,t}) ), s_{i,t} = sg[s_i] exp(l - sg[l]): value s_i, d/d l_{i,t} = s_i."""
    B, T = len(mask), len(mask[0])
    w = token_weights(mask, agg, normalizer, max_len)
    loss, grad = 0.0, _zeros(B, T)
    for i in range(B):
        x = sequence_log_ratio(logp[i], old_logp[i], mask[i])
        if x is None:
            continue
        s, ds = ratio_from_log_ratio(x)
        for t in range(T):
            if not mask[i][t]:
                continue
            lam, dlam = surrogate(s, _adv(advantages, i, t), eps_low, eps_high, dual_clip)
            loss += w[i][t] * lam
            grad[i][t] = w[i][t] * dlam * ds
    return _plus((loss, grad), _reference_kl(logp, ref_logp, mask, w, beta, kl_kind))


def tepo_mask(advantages, mask, *, mask_criterion="measured", entropy=None, old_entropy=None,
              entropy_drop_score=None, mask_tol=0.0) -> list[list[bool]]:
    """M_{i,t} = 1[A > 0] * 1[entropy decreased at (i,t)] * m_{i,t} (section 6); "decreased" by more than
    mask_tol for the measured criterion (minitepo's round-off guard, 0 in the spec)."""
    B, T = len(mask), len(mask[0])
    out = [[False] * T for _ in range(B)]
    for i in range(B):
        for t in range(T):
            if not mask[i][t] or not _adv(advantages, i, t) > 0:
                continue
            if mask_criterion == "measured":
                out[i][t] = entropy[i][t] < old_entropy[i][t] - mask_tol
            elif mask_criterion == "predicted":
                out[i][t] = entropy_drop_score[i][t] > 0
            else:
                raise ValueError(mask_criterion)
    return out


def token_log_ratio(logp_row, old_row, adv_row_fn, mask_row, delta_low, delta_high):
    """TEPO's ratio_clip="token_log" for one response (section 6): per token x = l - l_old, clipped pessimistically
    by the sign of A (A > 0: x above delta_high becomes delta_high; A < 0: x below -delta_low becomes -delta_low);
    ~s = exp(clamp(mean of the clipped x)). Returns (~s, d~s/d(mean), [token carries gradient?]) or None if empty."""
    xs, keeps = [], []
    for t, m in enumerate(mask_row):
        if not m:
            keeps.append(False)
            continue
        x, a = logp_row[t] - old_row[t], adv_row_fn(t)
        if a > 0 and x > delta_high:
            xs.append(delta_high)
            keeps.append(False)
        elif a < 0 and x < -delta_low:
            xs.append(-delta_low)
            keeps.append(False)
        else:
            xs.append(x)
            keeps.append(True)
    if not xs:
        return None
    s, ds = ratio_from_log_ratio(sum(xs) / len(xs))
    return s, ds, keeps


def tepo_loss(logp, old_logp, advantages, mask, *, entropy=None, old_entropy=None, entropy_drop_score=None,
              eps_low=0.2, eps_high=0.28, beta_mask=1.0, mask_criterion="measured", mask_kl="k3", mask_tol=0.0,
              ratio_clip="token_log", delta_low=0.4, delta_high=0.4, mask_action="kl",
              agg="token-mean", dual_clip=None, normalizer=None, max_len=None, beta=0.0, ref_logp=None, kl_kind="k3"):
    """(1/N) sum_i sum_t m [ lambda(s_{i,t}, A_i) + beta_M M_{i,t} k(l, l_old) ] (section 6).

    ratio_clip="token_log": the policy term is -A ~s_{i,t} instead, whose derivative w.r.t. l_{i,t} is -A ~s_i on a
    token that was not clipped and 0 on one that was (the routed form sends token t's gradient to token t only).
    mask_action="gate": a masked token keeps its policy value, its policy slope is 0, and no KL is added.
    (beta > 0 adds the optional reference KL beta * k(l, l_ref) per token, as for every objective; off by default.)
    """
    B, T = len(mask), len(mask[0])
    w = token_weights(mask, agg, normalizer, max_len)
    M = tepo_mask(advantages, mask, mask_criterion=mask_criterion, entropy=entropy, old_entropy=old_entropy,
                  entropy_drop_score=entropy_drop_score, mask_tol=mask_tol)
    loss, grad = 0.0, _zeros(B, T)
    for i in range(B):
        if ratio_clip == "token_log":
            clipped = token_log_ratio(logp[i], old_logp[i], lambda t: _adv(advantages, i, t), mask[i],
                                      delta_low, delta_high)
            if clipped is None:
                continue
            s, ds, keeps = clipped
        else:
            x = sequence_log_ratio(logp[i], old_logp[i], mask[i])
            if x is None:
                continue
            s, ds = ratio_from_log_ratio(x)
        for t in range(T):
            if not mask[i][t]:
                continue
            a = _adv(advantages, i, t)
            if ratio_clip == "token_log":
                value, slope = -a * s, (-a * ds if keeps[t] else 0.0)
            else:
                lam, dlam = surrogate(s, a, eps_low, eps_high, dual_clip)
                value, slope = lam, dlam * ds
            if beta_mask and M[i][t]:
                if mask_action == "gate":
                    slope = 0.0
                else:
                    k, dk = kl_estimate(logp[i][t], old_logp[i][t], mask_kl)
                    value, slope = value + beta_mask * k, slope + beta_mask * dk
            loss += w[i][t] * value
            grad[i][t] = w[i][t] * slope
    return _plus((loss, grad), _reference_kl(logp, ref_logp, mask, w, beta, kl_kind))


def cispo_loss(logp, old_logp, advantages, mask, *, eps_low=0.2, eps_high=4.0, is_clip="upper", agg="token-mean",
               normalizer=None, max_len=None, beta=0.0, ref_logp=None, kl_kind="k3"):
    """MiniMax-M1 eqs. 4-5: agg( -w A l ), w = min(r, 1 + eps_high) ("upper") or clip(r, 1 - eps_low, 1 + eps_high)
    ("both"), a constant: the derivative w.r.t. l is -w A, whatever r is."""
    B, T = len(mask), len(mask[0])
    w = token_weights(mask, agg, normalizer, max_len)
    loss, grad = 0.0, _zeros(B, T)
    for i in range(B):
        for t in range(T):
            if not mask[i][t]:
                continue
            r, _ = ratio_from_log_ratio(logp[i][t] - old_logp[i][t])
            weight = min(r, 1.0 + eps_high)
            if is_clip == "both":
                weight = max(weight, 1.0 - eps_low)
            a = _adv(advantages, i, t)
            loss += w[i][t] * (-weight * a * logp[i][t])
            grad[i][t] = w[i][t] * (-weight * a)
    return _plus((loss, grad), _reference_kl(logp, ref_logp, mask, w, beta, kl_kind))


def sapo_loss(logp, old_logp, advantages, mask, *, tau_pos=1.0, tau_neg=1.05, agg="seq-mean-token-mean",
              normalizer=None, max_len=None, beta=0.0, ref_logp=None, kl_kind="k3"):
    """SAPO: agg( -(4/tau) sigmoid(tau (r - 1)) A ), tau = tau_pos if A > 0 else tau_neg.
    d/dl = -(4/tau) * tau * sig (1 - sig) * dr/dl * A = -4 sig (1 - sig) r A (0 beyond the +-20 clamp)."""
    B, T = len(mask), len(mask[0])
    w = token_weights(mask, agg, normalizer, max_len)
    loss, grad = 0.0, _zeros(B, T)
    for i in range(B):
        for t in range(T):
            if not mask[i][t]:
                continue
            r, dr = ratio_from_log_ratio(logp[i][t] - old_logp[i][t])
            a = _adv(advantages, i, t)
            tau = tau_pos if a > 0 else tau_neg
            sig = 1.0 / (1.0 + math.exp(-tau * (r - 1.0)))
            loss += w[i][t] * (-(4.0 / tau) * sig * a)
            grad[i][t] = w[i][t] * (-4.0 * sig * (1.0 - sig) * dr * a)
    return _plus((loss, grad), _reference_kl(logp, ref_logp, mask, w, beta, kl_kind))


def gmpo_loss(logp, old_logp, advantages, mask, *, delta_low=0.4, delta_high=0.4, zero_adv_clip="zero",
              empty_rows="skip", agg="seq-mean-token-mean", normalizer=None, max_len=None, beta=0.0, ref_logp=None,
              kl_kind="k3"):
    """GMPO: per response, each token's log-ratio x clipped by the sign of its advantage (A > 0: at most delta_high;
    A < 0: at least -delta_low; A = 0: per zero_adv_clip), ~s = exp(clamp(mean of the clipped x)); the token term is
    -A ~s (routed: its derivative w.r.t. l_t is -A ~s on an unclipped token, 0 on a clipped one or an A = 0 token
    under "zero"). empty_rows="count" divides the seq-mean modes by all rows."""
    B, T = len(mask), len(mask[0])
    if empty_rows == "count" and normalizer is None and agg in ("seq-mean-token-mean", "seq-mean-token-sum"):
        normalizer = float(B)
    w = token_weights(mask, agg, normalizer, max_len)
    loss, grad = 0.0, _zeros(B, T)
    for i in range(B):
        xs, keeps = [], {}
        for t in range(T):
            if not mask[i][t]:
                continue
            x, a = logp[i][t] - old_logp[i][t], _adv(advantages, i, t)
            up = a > 0 or (a == 0 and zero_adv_clip == "as_positive")
            down = a < 0 or (a == 0 and zero_adv_clip == "as_negative")
            if a == 0 and zero_adv_clip == "zero":
                xs.append(0.0)
                keeps[t] = False
            elif up and x > delta_high:
                xs.append(delta_high)
                keeps[t] = False
            elif down and x < -delta_low:
                xs.append(-delta_low)
                keeps[t] = False
            else:
                xs.append(x)
                keeps[t] = True
        if not xs:
            continue
        s, ds = ratio_from_log_ratio(sum(xs) / len(xs))
        for t, keep in keeps.items():
            a = _adv(advantages, i, t)
            loss += w[i][t] * (-a * s)
            grad[i][t] = w[i][t] * (-a * ds) if keep else 0.0
    return _plus((loss, grad), _reference_kl(logp, ref_logp, mask, w, beta, kl_kind))


ORACLES = {
    "grpo": grpo_loss, "dapo": dapo_loss, "dr_grpo": dr_grpo_loss, "gspo": gspo_loss,
    "gspo_token": gspo_token_loss, "tepo": tepo_loss, "gtpo": gtpo_loss, "grpo_s": grpo_s_loss,
    "cispo": cispo_loss, "sapo": sapo_loss, "gmpo": gmpo_loss,
}


# --------------------------------------------------------------------------- advantages (sections 2 and 7)


def _groups(group_ids) -> dict:
    groups: dict = {}
    for i, g in enumerate(group_ids):
        groups.setdefault(g, []).append(i)
    return groups


def _mean(values) -> float:
    return sum(values) / len(values)


def _bessel_std(values) -> float:
    mu = _mean(values)
    return math.sqrt(sum((v - mu) ** 2 for v in values) / (len(values) - 1))


def zscore(values, eps: float, scale: str = "std") -> list[float]:
    """(v - mean) / (std + eps) with Bessel's std; exactly 0 when all values are equal (incl. one value)."""
    if all(v == values[0] for v in values):
        return [0.0] * len(values)
    mu = _mean(values)
    if scale == "none":
        return [v - mu for v in values]
    sd = _bessel_std(values)
    return [(v - mu) / (sd + eps) for v in values]


def group_advantages(rewards, group_ids, *, scale="std", eps=1e-6) -> list[float]:
    out = [0.0] * len(rewards)
    for idx in _groups(group_ids).values():
        for i, a in zip(idx, zscore([rewards[i] for i in idx], eps, scale)):
            out[i] = a
    return out


def informative_groups(rewards, group_ids) -> list[bool]:
    out = [False] * len(rewards)
    for idx in _groups(group_ids).values():
        varied = any(rewards[i] != rewards[idx[0]] for i in idx)
        for i in idx:
            out[i] = varied
    return out


def overlong_penalty(length: int, max_len: int, cache_len: int) -> float:
    """DAPO's soft overlong punishment R_len(y) (section 4)."""
    if length <= max_len - cache_len:
        return 0.0
    if length <= max_len:
        return ((max_len - cache_len) - length) / cache_len
    return -1.0


def _wrong_weight(h, wrong_weight):
    return 1.0 / h if wrong_weight == "inverse_entropy" else h


def gtpo_token_rewards(rewards, correct, entropy, mask, group_ids, *, alpha1=1.0, alpha2=0.1,
                       wrong_weight="inverse_entropy"):
    """Shaped token rewards r~_{i,t} of GTPO (section 7), without any epsilon (entropies must be > 0).

    Position-aligned: at each index t, a correct response shares alpha2 * d_t in proportion to its
    entropy among the correct responses still running; a wrong one shares alpha2 * h_t in proportion
    to its inverse entropy among the wrong responses still running. Masked positions get 0.
    """
    B, T = len(mask), len(mask[0])
    out = _zeros(B, T)
    for idx in _groups(group_ids).values():
        for t in range(T):
            pos = [i for i in idx if correct[i] and mask[i][t]]
            neg = [j for j in idx if not correct[j] and mask[j][t]]
            total_h = sum(entropy[k][t] for k in pos)
            total_w = sum(_wrong_weight(entropy[k][t], wrong_weight) for k in neg)
            for i in pos:
                out[i][t] = alpha1 * rewards[i] + alpha2 * entropy[i][t] / total_h * len(pos)
            for j in neg:
                out[j][t] = -alpha1 - alpha2 * _wrong_weight(entropy[j][t], wrong_weight) / total_w * len(neg)
    return out


def gtpo_advantages(rewards, correct, entropy, mask, group_ids, *, alpha1=1.0, alpha2=0.1, adv_norm="union",
                    eps=1e-6, equal_groups="shape", wrong_weight="inverse_entropy"):
    """z-score of the shaped token rewards over the group's real tokens ("union"), or within O+ and O- ("split");
    with equal_groups="zero", 0 for every token of a group whose outcome rewards are all equal."""
    shaped = gtpo_token_rewards(rewards, correct, entropy, mask, group_ids, alpha1=alpha1, alpha2=alpha2,
                                wrong_weight=wrong_weight)
    B, T = len(mask), len(mask[0])
    out = _zeros(B, T)
    for idx in _groups(group_ids).values():
        if equal_groups == "zero" and len({rewards[i] for i in idx}) == 1:
            continue  # all right or all wrong: no outcome signal, advantages stay 0
        if adv_norm == "union":
            parts = [idx]
        elif adv_norm == "split":
            parts = [[i for i in idx if correct[i]], [i for i in idx if not correct[i]]]
        else:
            raise ValueError(adv_norm)
        for part in parts:
            cells = [(i, t) for i in part for t in range(T) if mask[i][t]]
            if not cells:
                continue
            for (i, t), a in zip(cells, zscore([shaped[i][t] for i, t in cells], eps)):
                out[i][t] = a
    return out


def mean_token_entropy(entropy, mask) -> list:
    out = []
    for row_h, row_m in zip(entropy, mask):
        vals = [h for h, m in zip(row_h, row_m) if m]
        out.append(_mean(vals) if vals else None)
    return out


def grpo_s_rewards(rewards, correct, entropy, mask, group_ids, *, alpha1=1.0, alpha2=0.1,
                   wrong_weight="inverse_entropy"):
    """GRPO-S sequence rewards with the mean token entropy H^_i of each response (section 7)."""
    h_hat = mean_token_entropy(entropy, mask)
    out = [0.0] * len(rewards)
    for idx in _groups(group_ids).values():
        pos = [i for i in idx if correct[i]]
        neg = [j for j in idx if not correct[j]]
        total_h = sum(h_hat[k] for k in pos)
        total_w = sum(_wrong_weight(h_hat[k], wrong_weight) for k in neg)
        for i in pos:
            out[i] = alpha1 * rewards[i] + alpha2 * h_hat[i] / total_h * len(pos)
        for j in neg:
            out[j] = -alpha1 - alpha2 * _wrong_weight(h_hat[j], wrong_weight) / total_w * len(neg)
    return out


def grpo_s_advantages(rewards, correct, entropy, mask, group_ids, *, alpha1=1.0, alpha2=0.1, eps=1e-6,
                      equal_groups="shape", wrong_weight="inverse_entropy"):
    shaped = grpo_s_rewards(rewards, correct, entropy, mask, group_ids, alpha1=alpha1, alpha2=alpha2,
                            wrong_weight=wrong_weight)
    out = group_advantages(shaped, group_ids, eps=eps)
    if equal_groups == "zero":
        for idx in _groups(group_ids).values():
            if len({rewards[i] for i in idx}) == 1:
                for i in idx:
                    out[i] = 0.0
    return out


# --------------------------------------------------------------------------- entropy (section 6 / invariant 16)


def softmax(logits: list[float]) -> list[float]:
    top = max(logits)
    e = [math.exp(z - top) for z in logits]
    total = sum(e)
    return [v / total for v in e]


def entropy(logits: list[float]) -> float:
    """-sum_v p_v log p_v, with 0 log 0 = 0."""
    return -sum(p * math.log(p) for p in softmax(logits) if p > 0)


def entropy_drop_score(logits: list[float], action: int) -> float:
    """S(a) = pi_a (log pi_a + H) - sum_v pi_v^2 (log pi_v + H); > 0 iff a positive-advantage step on a lowers H."""
    p = softmax(logits)
    h = entropy(logits)
    own = p[action] * (math.log(p[action]) + h)
    return own - sum(pv * pv * (math.log(pv) + h) for pv in p if pv > 0)
