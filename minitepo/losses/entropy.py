"""Entropy of the next-token distribution, and the first-order entropy change TEPO's "predicted" mask uses.

Shapes: logits (B, T, V) (any leading dims work), tokens (B, T) integer ids in [0, V).
"""

from __future__ import annotations

import torch


def _log_softmax(logits: torch.Tensor) -> torch.Tensor:
    if not isinstance(logits, torch.Tensor) or logits.dim() < 1 or not logits.dtype.is_floating_point:
        raise ValueError("logits must be a floating-point tensor (..., V)")
    dtype = torch.float64 if logits.dtype == torch.float64 else torch.float32
    return torch.log_softmax(logits.to(dtype), dim=-1)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """H = -sum_v pi_v log pi_v of softmax(logits), over the last dim.   (..., V) -> (...)

    Differentiable. Logits of -inf (e.g. banned tokens) contribute 0, not NaN: log pi_v is replaced by
    0 where pi_v = 0 *before* the product, since 0 * (-inf) is NaN in the forward and backward pass.
    """
    logp = _log_softmax(logits)                                              # (..., V)
    p = logp.exp()
    safe_logp = torch.where(torch.isfinite(logp), logp, torch.zeros_like(logp))
    return -(p * safe_logp).sum(dim=-1)                                      # (...)


@torch.no_grad()
def predicted_entropy_drop_score(log_probs: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """S(a) = pi_a (log pi_a + H) - sum_v pi_v^2 (log pi_v + H) for the sampled token a.   (B, T)

    Why: for pi = softmax(z), dH/dz_j = -pi_j (log pi_j + H). A gradient step that raises log pi_a
    (a positive-advantage update on token a) moves the logits along d log pi_a / dz = e_a - pi, so the
    entropy changes by  dH = -eta [ pi_a (log pi_a + H) - sum_v pi_v^2 (log pi_v + H) ] = -eta S(a).
    S(a) > 0 therefore predicts that reinforcing a lowers the entropy at this position - TEPO's
    "predicted" mask criterion. Exact to first order for a softmax over free logits; a real network
    shares parameters across positions, so it is a prediction, not a measurement. No gradient.

    log_probs  (B, T, V) log-probabilities of the distribution each token was sampled from (the trainer
               passes ``score_rollout(..., return_logprobs=True)``'s, at the sampling temperature); raw
               logits give the same result, since log-softmax leaves log-probabilities unchanged
    token_ids  (B, T) the sampled tokens (``rollout.response_ids``)
    """
    logp = _log_softmax(log_probs)                                           # (B, T, V)
    if not isinstance(token_ids, torch.Tensor) or token_ids.dtype.is_floating_point or token_ids.dtype == torch.bool:
        raise ValueError("token_ids must be an integer tensor of sampled token ids")
    if tuple(token_ids.shape) != tuple(logp.shape[:-1]):
        raise ValueError(f"token_ids has shape {tuple(token_ids.shape)} but log_probs has shape {tuple(logp.shape)}; "
                         "expected token_ids (B, T) for log_probs (B, T, V)")
    V = logp.shape[-1]
    if token_ids.numel() and (int(token_ids.min()) < 0 or int(token_ids.max()) >= V):
        raise ValueError(f"token ids must lie in [0, {V}), got values in [{int(token_ids.min())}, {int(token_ids.max())}]; "
                         "mask padded positions out with a valid id such as 0")
    p = logp.exp()                                                           # (B, T, V)
    safe_logp = torch.where(torch.isfinite(logp), logp, torch.zeros_like(logp))
    H = -(p * safe_logp).sum(dim=-1, keepdim=True)                           # (B, T, 1)
    centred = safe_logp + H                                                  # (B, T, V)  log pi_v + H
    a = token_ids.long().unsqueeze(-1)                                       # (B, T, 1)
    own = (p.gather(-1, a) * centred.gather(-1, a)).squeeze(-1)              # (B, T)  pi_a (log pi_a + H)
    mean = (p.square() * centred).sum(dim=-1)                                # (B, T)  sum_v pi_v^2 (log pi_v + H)
    return own - mean
