"""Advantages and the data-side reward techniques: group baselines, DAPO's helpers, GTPO / GRPO-S reward shaping.

Everything here is a pure function of detached tensors; nothing carries gradient.

Shape legend:
    B   responses in the batch, grouped by prompt: responses of one prompt form a *group*
    T   padded response width (mask (B, T): 1 on real tokens)

Groups are given either as ``group_ids`` (B,) integer labels in any order (responses of a group
need not be adjacent), or as ``group_size`` G when the batch is B/G consecutive blocks of G
responses, the layout the sampler produces. With neither, the whole batch is one group.

Which responses are "correct" (GTPO / GRPO-S's O+ versus O-): by default R_i > 0, which is right for
the binary 0/1 rewards of the toy tasks (and for +-1 rewards). Pass ``correct`` (a (B,) bool tensor)
when correctness is not the sign of the reward, e.g. after an overlong penalty made a right answer's
reward negative.
"""

from __future__ import annotations

import math

import torch

from .losses.checks import check_choice, check_mask

ADV_SCALES = ("std", "none")
ADV_EPS = 1e-6
"""The z-score's eps: A_i = (R_i - mean) / (std + eps)."""
GTPO_ADV_NORMS = ("union", "split")
EQUAL_GROUPS = ("zero", "shape")            # what GTPO / GRPO-S do with a group whose outcome rewards are all equal
WRONG_WEIGHTS = ("inverse_entropy", "entropy")  # how a wrong answer's penalty is spread over its tokens (a reading)


# ----------------------------------------------------------------------------------------------
# groups and z-scores
# ----------------------------------------------------------------------------------------------

def _check_rewards(rewards) -> torch.Tensor:
    if not isinstance(rewards, torch.Tensor):
        rewards = torch.as_tensor(rewards)
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be a (B,) tensor, one reward per response, got shape {tuple(rewards.shape)}")
    if rewards.dtype == torch.bool or rewards.is_complex():
        raise ValueError(f"rewards must be real numbers, got {rewards.dtype}")
    rewards = rewards.detach().to(torch.float64 if rewards.dtype == torch.float64 else torch.float32)
    if not bool(torch.isfinite(rewards).all()):
        raise ValueError("rewards contain NaN or inf")
    return rewards


def group_index(B: int, group_ids=None, group_size=None, device=None) -> tuple[torch.Tensor, int]:
    """Map each response to its group number 0..G-1.   -> (index (B,) long, number of groups G)"""
    if group_ids is not None and group_size is not None:
        raise ValueError("pass group_ids (a (B,) tensor of prompt labels) or group_size (responses per prompt, "
                         "for consecutive blocks), not both")
    if group_ids is None and group_size is None:                             # the whole batch is one group
        return torch.zeros(B, dtype=torch.long, device=device), 1
    if group_size is not None:
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size <= 0:
            raise ValueError(f"group_size must be a positive int, got {group_size!r}")
        if B % group_size:
            raise ValueError(f"batch of {B} responses does not split into groups of {group_size}")
        return torch.arange(B, device=device) // group_size, B // group_size
    ids = torch.as_tensor(group_ids, device=device)
    if tuple(ids.shape) != (B,) or ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise ValueError(f"group_ids must be a ({B},) integer tensor of group labels, got "
                         f"{ids.dtype} of shape {tuple(ids.shape)}")
    labels, index = torch.unique(ids, return_inverse=True)
    return index, labels.numel()


def _segment_sum(x: torch.Tensor, seg: torch.Tensor, n_seg: int) -> torch.Tensor:
    """Sum of x over each segment: (K, ...) with seg (K,) in [0, n_seg) -> (n_seg, ...)."""
    return torch.zeros((n_seg,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device).index_add_(0, seg, x)


def _zscore(x: torch.Tensor, seg: torch.Tensor, n_seg: int, scale: str, eps: float) -> torch.Tensor:
    """(x - mean_seg) / (std_seg + eps) within each segment, Bessel std; all-equal segments give exactly 0.

    x, seg: (K,). A segment of one element has std := 1 and centred value 0, so it also gets 0. The
    explicit all-equal test matters: the mean of three copies of 0.1 is not exactly 0.1 in floating
    point, and (round-off) / (tiny std + eps) is not 0.
    """
    n = _segment_sum(torch.ones_like(x), seg, n_seg)                         # (n_seg,)
    mean = _segment_sum(x, seg, n_seg) / n.clamp(min=1)                      # (n_seg,)
    centred = x - mean[seg]                                                  # (K,)
    hi = torch.full((n_seg,), -math.inf, dtype=x.dtype, device=x.device).scatter_reduce(0, seg, x, "amax")
    lo = torch.full((n_seg,), math.inf, dtype=x.dtype, device=x.device).scatter_reduce(0, seg, x, "amin")
    all_equal = (hi == lo)[seg]                                              # (K,)
    if scale == "std":
        var = _segment_sum(centred.square(), seg, n_seg) / (n - 1).clamp(min=1)   # Bessel: divide by n - 1
        std = torch.where(n > 1, var.sqrt(), torch.ones_like(var))          # (n_seg,)
        centred = centred / (std[seg] + eps)
    return torch.where(all_equal, torch.zeros_like(centred), centred)


def group_advantages(rewards, group_ids=None, group_size=None, *, scale: str = "std",
                     eps: float = ADV_EPS) -> torch.Tensor:
    """Group-relative advantages (spec §2).   rewards (B,) -> A (B,)

        scale="std"  (GRPO, DAPO, GSPO, TEPO):  A_i = (R_i - mean_g R) / (std_g R + eps),  Bessel std
        scale="none" (Dr. GRPO):                A_i =  R_i - mean_g R

    A group whose rewards are all equal - including a group of one - gets exactly A = 0: it carries
    no learning signal (everyone was right, or everyone wrong).
    """
    if scale not in ADV_SCALES:
        raise ValueError(f"unknown advantage scale {scale!r}; allowed: {', '.join(repr(a) for a in ADV_SCALES)}")
    if not (eps >= 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be a finite number >= 0, got {eps}")
    R = _check_rewards(rewards)                                              # (B,)
    idx, G = group_index(R.numel(), group_ids, group_size, R.device)         # (B,)
    return _zscore(R, idx, G, scale, eps)


# ----------------------------------------------------------------------------------------------
# DAPO's data-side techniques (arXiv 2503.14476)
# ----------------------------------------------------------------------------------------------

def informative_groups(rewards, group_ids=None, group_size=None) -> torch.Tensor:
    """Dynamic sampling's filter: True for responses whose group's rewards are not all equal.   (B,) bool

    A group that is all right or all wrong has zero advantages and gives no gradient; DAPO keeps
    sampling until the batch is full of informative groups (with a cap on extra rounds, in the trainer).
    """
    R = _check_rewards(rewards)
    idx, G = group_index(R.numel(), group_ids, group_size, R.device)
    hi = torch.full((G,), -math.inf, dtype=R.dtype, device=R.device).scatter_reduce(0, idx, R, "amax")
    lo = torch.full((G,), math.inf, dtype=R.dtype, device=R.device).scatter_reduce(0, idx, R, "amin")
    return (hi != lo)[idx]


def overlong_penalty(lengths, max_len: int, cache_len: int) -> torch.Tensor:
    """DAPO's soft overlong punishment R_len (eq. 13), added to the task reward.   lengths (B,) -> (B,)

        R_len(y) = 0                                   if |y| <= L_max - L_cache
                 = ((L_max - L_cache) - |y|) / L_cache  if L_max - L_cache < |y| <= L_max
                 = -1                                  if |y| > L_max

    The penalty ramps linearly from 0 to -1 over the last ``cache_len`` tokens before ``max_len``.
    """
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len <= 0:
        raise ValueError(f"max_len must be a positive int, got {max_len!r}")
    if isinstance(cache_len, bool) or not isinstance(cache_len, int) or not 0 < cache_len <= max_len:
        raise ValueError(f"cache_len must be an int in (0, max_len={max_len}], got {cache_len!r}")
    L = torch.as_tensor(lengths)
    L = L.to(torch.float64 if L.dtype == torch.float64 else torch.float32)
    if L.dim() != 1 or bool((L < 0).any()):
        raise ValueError("lengths must be a (B,) tensor of non-negative response lengths")
    start = max_len - cache_len
    ramp = (start - L) / cache_len                                           # (B,)
    return torch.where(L <= start, torch.zeros_like(L), torch.where(L <= max_len, ramp, -torch.ones_like(L)))


# ----------------------------------------------------------------------------------------------
# GTPO and GRPO-S: entropy-weighted reward shaping (arXiv 2508.04349, spec §7)
#
# A reading, not the paper's text. The public description fixes only the weight H_it / sum_k H_kt
# for correct answers "and similar variants". Everything else here is minitepo's reading, each a
# switch: the weights of wrong answers (``wrong_weight``: 1/H by default, which punishes *confident*
# wrong tokens most; "entropy" follows the later version's wording, which suppresses the
# *high-entropy* tokens of wrong answers), the d_t / h_t factors, -alpha1 for wrong answers,
# alpha1 = 1 and alpha2 = 0.1, ``union`` / ``split`` normalisation, and the eps guard. The default
# 1/H is the spec's default: it keeps the shaping symmetric (correct answers reward uncertainty,
# wrong ones punish confidence) and it is what every result here was measured with.
#
# Groups whose outcome rewards are all equal (all right, or all wrong) get exactly zero advantages
# by default (``equal_groups="zero"``), as in GRPO: without that, the z-score would blow the
# alpha2-sized entropy differences up to unit-size advantages and train on groups with no outcome
# signal at all (reinforcing the high-entropy tokens of wrong answers). The papers build on DAPO,
# whose dynamic sampling removes such groups before shaping; the trainer does that too by default.
# ----------------------------------------------------------------------------------------------

def _shaping_inputs(rewards, entropy, mask, correct, alpha1, alpha2, eps):
    R = _check_rewards(rewards)                                              # (B,)
    B = R.numel()
    if not isinstance(entropy, torch.Tensor) or entropy.dim() != 2 or entropy.shape[0] != B:
        got = tuple(entropy.shape) if isinstance(entropy, torch.Tensor) else type(entropy).__name__
        raise ValueError(f"entropy must be a (B, T) tensor with B = {B} rows (one per reward), got {got}")
    m = check_mask(mask, tuple(entropy.shape))
    if m.device != entropy.device:
        raise ValueError(f"mask is on {m.device} but entropy is on {entropy.device}")
    R = R.to(entropy.device)                                                 # rewards often arrive on the CPU
    H = entropy.detach().to(R.dtype)
    bad = m & ~(torch.isfinite(H) & (H >= -1e-6))
    if bool(bad.any()):
        raise ValueError("entropy must be finite and >= 0 at every real (mask=1) position")
    H = torch.where(m, H.clamp(min=0), torch.zeros_like(H))                  # (B, T)
    if correct is None:
        pos = R > 0                                                          # binary 0/1 rewards: R > 0 is right
    else:
        if not isinstance(correct, torch.Tensor) or correct.dtype != torch.bool or tuple(correct.shape) != (B,):
            raise ValueError(f"correct must be a ({B},) bool tensor (True for right answers)")
        pos = correct.to(R.device)
    for name, value in (("alpha1", alpha1), ("alpha2", alpha2), ("eps", eps)):
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return R, H, m, pos


def _check_shaping_options(equal_groups: str, wrong_weight: str) -> None:
    check_choice(equal_groups, EQUAL_GROUPS, "equal_groups option")
    check_choice(wrong_weight, WRONG_WEIGHTS, "wrong_weight option")


def _wrong_weights(H: torch.Tensor, wrong_weight: str, eps: float) -> torch.Tensor:
    """The weight each wrong-answer token (or response) gets before normalising to shares: 1/H or H."""
    return 1.0 / H.clamp(min=max(eps, 1e-30)) if wrong_weight == "inverse_entropy" else H


def _shares(w: torch.Tensor, members: torch.Tensor, seg: torch.Tensor, n_seg: int) -> torch.Tensor:
    """w_k / sum of w over the members of k's segment, for members (0 elsewhere). Each segment's shares sum to 1.

    w, members: (B, ...) with seg (B,) the group of each row; sums run over rows (dim 0) per group.
    If every member weight of a segment is 0, the share is split equally.
    """
    w = torch.where(members, w, torch.zeros_like(w))
    total = _segment_sum(w, seg, n_seg)[seg]                                 # (B, ...)
    count = _segment_sum(members.to(w.dtype), seg, n_seg)[seg]               # (B, ...)
    equal = 1.0 / count.clamp(min=1)
    share = torch.where(total > 0, w / torch.where(total > 0, total, torch.ones_like(total)), equal)
    return torch.where(members, share, torch.zeros_like(share))


def gtpo_token_rewards(rewards, entropy, mask, group_ids=None, group_size=None, *, correct=None,
                       alpha1: float = 1.0, alpha2: float = 0.1, eps: float = 1e-6,
                       wrong_weight: str = "inverse_entropy") -> torch.Tensor:
    """GTPO's entropy-weighted token rewards.   rewards (B,), entropy (B, T), mask (B, T) -> (B, T), 0 at padding

    Within a group, at each position t, among the responses still running at t:

        correct i in O+_t:   r+_it = alpha1 R_i + alpha2 * H_it / sum_{k in O+_t} H_kt * d_t        d_t = |O+_t|
        wrong   j in O-_t:   r-_jt = -alpha1   - alpha2 * (1/H_jt) / sum_{k in O-_t} (1/H_kt) * h_t   h_t = |O-_t|

    The entropy terms are shares that sum to 1 over O+_t (or O-_t), so the bonus alpha2 is only
    redistributed (conservation): sum_{O+_t} r+ = alpha1 sum_{O+_t} R_i + alpha2 d_t, which is
    (alpha1 + alpha2) d_t for rewards of 1, and sum_{O-_t} r- = -(alpha1 + alpha2) h_t. ``eps`` only
    guards 1/H at H = 0 (1/max(H, eps)); an all-zero-entropy O+_t splits its bonus equally.
    ``wrong_weight="entropy"`` replaces 1/H_jt by H_jt for wrong answers (see the reading above).
    Positions are aligned by index t across responses, so the result depends on token order.
    """
    _check_shaping_options("zero", wrong_weight)
    R, H, m, pos = _shaping_inputs(rewards, entropy, mask, correct, alpha1, alpha2, eps)
    idx, G = group_index(R.numel(), group_ids, group_size, R.device)         # (B,)
    return _gtpo_rewards(R, H, m, pos, idx, G, alpha1, alpha2, eps, wrong_weight)


def _gtpo_rewards(R, H, m, pos, idx, G, alpha1, alpha2, eps, wrong_weight):
    in_pos = m & pos[:, None]                                                # (B, T) real tokens of O+
    in_neg = m & ~pos[:, None]                                               # (B, T) real tokens of O-
    d = _segment_sum(in_pos.to(R.dtype), idx, G)[idx]                        # (B, T) d_t of i's group
    h = _segment_sum(in_neg.to(R.dtype), idx, G)[idx]                        # (B, T) h_t
    share_pos = _shares(H, in_pos, idx, G)                                   # (B, T)
    share_neg = _shares(_wrong_weights(H, wrong_weight, eps), in_neg, idx, G)  # (B, T)
    r_pos = alpha1 * R[:, None] + alpha2 * share_pos * d
    r_neg = -alpha1 - alpha2 * share_neg * h
    return torch.where(in_pos, r_pos, torch.where(in_neg, r_neg, torch.zeros_like(r_pos)))


def gtpo_advantages(rewards, entropy, mask, group_ids=None, group_size=None, *, correct=None, alpha1: float = 1.0,
                    alpha2: float = 0.1, adv_norm: str = "union", eps: float = 1e-6, equal_groups: str = "zero",
                    wrong_weight: str = "inverse_entropy") -> torch.Tensor:
    """GTPO token advantages A_it: z-scores of ``gtpo_token_rewards``.   -> (B, T), 0 at padding

    adv_norm="union" (default): mean and (Bessel) std over all real tokens of the group.
    adv_norm="split": separately over the real tokens of O+ and of O- within the group. Then each
    side is centred on its own mean, so a correct response's less-rewarded tokens get A < 0.
    equal_groups="zero" (default): a group whose outcome rewards are all equal gets A = 0 exactly;
    "shape" z-scores its shaped rewards anyway. Pass the result to ``minitepo.losses.gtpo_loss`` (DAPO's loss).
    """
    check_choice(adv_norm, GTPO_ADV_NORMS, "GTPO advantage normalisation")
    _check_shaping_options(equal_groups, wrong_weight)
    R, H, m, pos = _shaping_inputs(rewards, entropy, mask, correct, alpha1, alpha2, eps)
    idx, G = group_index(R.numel(), group_ids, group_size, R.device)         # (B,)
    r = _gtpo_rewards(R, H, m, pos, idx, G, alpha1, alpha2, eps, wrong_weight)   # (B, T)
    seg = idx if adv_norm == "union" else 2 * idx + pos.long()               # (B,) segment of each response
    seg_tok = seg[:, None].expand_as(m)[m]                                   # (K,) one per real token
    out = torch.zeros_like(r)
    out[m] = _zscore(r[m], seg_tok, 2 * G, "std", eps)
    if equal_groups == "zero":
        out = torch.where(informative_groups(R, idx)[:, None], out, torch.zeros_like(out))
    return out



def grpo_s_rewards(rewards, entropy, mask, group_ids=None, group_size=None, *, correct=None,
                   alpha1: float = 1.0, alpha2: float = 0.1, eps: float = 1e-6,
                   wrong_weight: str = "inverse_entropy") -> torch.Tensor:
    """GRPO-S's entropy-weighted sequence rewards, from the mean token entropy H^_i of each response.   -> (B,)

        correct i:  r^+_i = alpha1 R_i + alpha2 * H^_i / sum_{k in O+} H^_k * n+
        wrong   j:  r^-_j = -alpha1   - alpha2 * (1/H^_j) / sum_{k in O-} (1/H^_k) * n-

    with n+- the group's number of correct / wrong responses; the same conservation as GTPO holds.
    ``wrong_weight="entropy"`` replaces 1/H^_j by H^_j for wrong answers (a reading; see above).
    """
    _check_shaping_options("zero", wrong_weight)
    R, H, m, pos = _shaping_inputs(rewards, entropy, mask, correct, alpha1, alpha2, eps)
    lengths = m.sum(dim=-1)                                                  # (B,)
    if bool((lengths == 0).any()):
        raise ValueError("every response needs at least one real token to have a mean entropy; "
                         f"rows {lengths.eq(0).nonzero().flatten().tolist()} are fully masked")
    H_hat = H.sum(dim=-1) / lengths.to(H.dtype)                              # (B,)
    idx, G = group_index(R.numel(), group_ids, group_size, R.device)
    n_pos = _segment_sum(pos.to(R.dtype), idx, G)[idx]                       # (B,)
    n_neg = _segment_sum((~pos).to(R.dtype), idx, G)[idx]                    # (B,)
    r_pos = alpha1 * R + alpha2 * _shares(H_hat, pos, idx, G) * n_pos
    r_neg = -alpha1 - alpha2 * _shares(_wrong_weights(H_hat, wrong_weight, eps), ~pos, idx, G) * n_neg
    return torch.where(pos, r_pos, r_neg)


def grpo_s_advantages(rewards, entropy, mask, group_ids=None, group_size=None, *, correct=None, alpha1: float = 1.0,
                      alpha2: float = 0.1, eps: float = 1e-6, equal_groups: str = "zero",
                      wrong_weight: str = "inverse_entropy") -> torch.Tensor:
    """GRPO-S sequence advantages: group z-score of ``grpo_s_rewards``.   -> (B,); pass to ``grpo_s_loss``.

    equal_groups="zero" (default): a group whose outcome rewards are all equal gets A = 0 exactly; "shape"
    z-scores its shaped rewards anyway."""
    _check_shaping_options(equal_groups, wrong_weight)
    r = grpo_s_rewards(rewards, entropy, mask, group_ids, group_size, correct=correct, alpha1=alpha1,
                       alpha2=alpha2, eps=eps, wrong_weight=wrong_weight)
    A = group_advantages(r, group_ids, group_size, scale="std", eps=eps)
    if equal_groups == "zero":
        A = torch.where(informative_groups(rewards, group_ids, group_size).to(A.device), A, torch.zeros_like(A))
    return A


SHAPED_ADVANTAGES = {"gtpo": gtpo_advantages, "grpo_s": grpo_s_advantages}
"""The objectives whose method lives in the advantages, and the function that computes them. Their keyword
parameters (``alpha1``, ``adv_norm``, ...) are the shaping options a run may set, read from these signatures."""


def advantages_for(kind: str, rollout, **shaping) -> torch.Tensor:
    """The advantages of a rewarded rollout (rows grouped by prompt) of the ``kind`` an objective's registration names
    (``losses.ObjectiveFacts.advantages``): "z-score" and "mean-only" (``group_advantages``), or "gtpo" / "grpo_s"
    (entropy-shaped from the rollout's old entropies, with ``shaping`` options).   (B,), or (B, T) for GTPO"""
    if kind in SHAPED_ADVANTAGES:
        return SHAPED_ADVANTAGES[kind](rollout.rewards, rollout.old_entropy, rollout.mask, group_size=rollout.group_size,
                                       correct=rollout.correct, **shaping)
    if kind not in ("z-score", "mean-only"):
        raise ValueError(f"unknown kind of advantages {kind!r}; allowed: 'z-score', 'mean-only', "
                         f"{', '.join(repr(k) for k in SHAPED_ADVANTAGES)}")
    # group_advantages without its input checks: the rewards are the rollout's own (B,) float32 tensor, in groups of
    # G consecutive rows
    B, G = rollout.rewards.numel(), rollout.group_size
    groups = torch.arange(B, device=rollout.rewards.device) // G                 # (B,) each row's group
    return _zscore(rollout.rewards.detach(), groups, B // G, "none" if kind == "mean-only" else "std", eps=ADV_EPS)
