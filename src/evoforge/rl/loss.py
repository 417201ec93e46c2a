"""The policy-gradient loss: PPO-style clipping with asymmetric bounds (DAPO's clip-higher,
eps_low 0.2 / eps_high 0.28) times truncated importance sampling (TIS) between the
sampler's and the learner's log-probabilities.

Per completion token t of sequence j, with A_j the sequence advantage:

    ratio_t = exp(logp_new_t - logp_old_t)              # old = learner before this batch
    pg_t    = -min(ratio_t A, clip(ratio_t, 1-eps_low, 1+eps_high) A)
    tis_t   = min(exp(logp_old_t - logp_sampler_t), tis_cap)   # constant (no gradient)
    loss    = sum_t tis_t * pg_t / (number of completion tokens in the batch)

Token-level mean (DAPO): every token of the batch weighs the same, so a long response is
not down-weighted against a short one; the denominator is the token count of the whole
batch, not of one micro-batch, so gradient accumulation gives the same gradient.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class LossParts:
    loss: torch.Tensor  # scalar, already divided by ``total_tokens``
    clipped_low: torch.Tensor  # tokens whose ratio hit the lower clip and mattered
    clipped_high: torch.Tensor
    tis_truncated: torch.Tensor  # tokens whose importance weight hit the cap


def importance_weights(
    logp_old: torch.Tensor, logp_sampler: torch.Tensor, cap: float | None
) -> torch.Tensor:
    """min(pi_learner / pi_sampler, cap), detached; all ones when cap is None."""
    if cap is None:
        return torch.ones_like(logp_old)
    w = torch.exp((logp_old - logp_sampler).detach())
    return torch.clamp(w, max=cap)


def clipped_pg_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    logp_sampler: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    tis_cap: float | None = 2.0,
    total_tokens: float | None = None,
) -> LossParts:
    """All tensors [batch, tokens] (advantages may be [batch] or [batch, tokens]); mask is 1
    on completion tokens. ``total_tokens`` defaults to mask.sum() (a single micro-batch)."""
    if advantages.dim() == 1:
        advantages = advantages[:, None].expand_as(logp_new)
    mask = mask.to(logp_new.dtype)
    ratio = torch.exp(logp_new - logp_old.detach())
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * advantages
    pg = -torch.minimum(unclipped, clipped)
    tis = importance_weights(logp_old, logp_sampler, tis_cap)
    denom = float(total_tokens) if total_tokens is not None else float(mask.sum().clamp(min=1.0))
    # where(), not a product: a padded position may hold NaN, and NaN * 0 is NaN
    loss = torch.where(mask > 0, tis * pg, torch.zeros_like(pg)).sum() / max(denom, 1.0)
    with torch.no_grad():
        took_clip = (clipped < unclipped) & (mask > 0)  # the min picked the clipped branch
        low = (took_clip & (ratio < 1.0 - eps_low)).sum()
        high = (took_clip & (ratio > 1.0 + eps_high)).sum()
        trunc = ((tis >= tis_cap) & (mask > 0)).sum() if tis_cap is not None else torch.zeros(())
    return LossParts(loss, low, high, trunc)


def completion_logprobs(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    temperature: float = 1.0,
    keep: int | None = None,
) -> torch.Tensor:
    """log pi(token_t | tokens_<t) for t = 1..T-1, shape [batch, T-1] (position t-1 holds token t);
    with ``keep`` only the last ``keep`` tokens are scored, shape [batch, keep].

    Rows may be left-padded (positions come from the attention mask). ``keep`` lets the model
    compute logits for the completion only, not for the (long) prompt: with a 50k vocabulary
    that is most of the memory. Logits are divided by the sampling temperature, so the learner
    scores the distribution the sampler actually drew from."""
    position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    kwargs = {}
    if keep is not None and _accepts(model, "logits_to_keep"):
        kwargs["logits_to_keep"] = keep + 1
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False,
                **kwargs)
    logits = out.logits
    if keep is not None:
        logits = logits[:, -(keep + 1):, :]  # no-op when the model already kept only these
        targets = input_ids[:, -keep:]
    else:
        targets = input_ids[:, 1:]
    logits = logits[:, :-1, :].float()
    if temperature != 1.0:
        logits = logits / temperature
    # gather minus logsumexp: one [B, T, V] tensor instead of a full log_softmax copy
    logz = torch.logsumexp(logits, dim=-1)
    picked = torch.gather(logits, -1, targets[..., None]).squeeze(-1)
    return picked - logz


_ACCEPTS: dict[tuple[type, str], bool] = {}


def _accepts(model: torch.nn.Module, name: str) -> bool:
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    key = (type(base), name)
    if key not in _ACCEPTS:
        _ACCEPTS[key] = name in inspect.signature(type(base).forward).parameters
    return _ACCEPTS[key]
