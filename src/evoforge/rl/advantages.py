"""Advantage estimators over ONE group's rewards (the n responses of one prompt).

Plain numpy functions, no torch: the engine, the tests and a notebook can all call them.

* ``grpo``: ThetaEvolve / GRPO, A_j = r_j - mean(r) (optionally / std(r)).
* ``entropic``: TTT-Discover's entropic objective with a fixed beta,
      w_j = exp(beta r_j) / mean_{k != j} exp(beta r_k)     (leave-one-out mean)
      A_j = w_j - 1
  The LOO denominator keeps the sample j out of its own baseline, so A_j is not biased
  toward 0 for a lone high reward; equal rewards give w = 1, A = 0 exactly. r_max is
  subtracted before exp (it cancels in the ratio) so nothing overflows.
* ``entropic_adaptive``: beta per group chosen by bisection so that
      KL(q_beta || uniform on the group) = mean_j(w_j log w_j) = gamma   (gamma = ln 2),
  with the full-group weights w_j = exp(beta r_j) / mean_k exp(beta r_k) (q_beta = w / n).
  KL grows monotonically from 0 (beta = 0) to its supremum ln(n / #argmax) (beta -> inf).
  When gamma is out of reach (gamma >= sup: n = 2, or ties at the top) beta is solved for
  KL = sup / 2 instead: an infinite beta would leave the LOO weights unbounded (the others'
  exp(beta r) vanish), e.g. n = 2 then gives weights ~8.2 and ~0.12, not 1e300.
  Because beta is solved for, the advantages are invariant to r -> a r + b (a > 0).
* ``with_kl_penalty``: the optional TTT-Discover term A_j - lambda * log(pi/pi0).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

ArrayLike = Sequence[float] | np.ndarray


class AdvantageError(ValueError):
    """Rewards an estimator cannot use (empty or not finite)."""


def _as_rewards(rewards: ArrayLike) -> np.ndarray:
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 1 or r.size == 0:
        raise AdvantageError(f"rewards must be a non-empty 1-D sequence, got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise AdvantageError(f"rewards must be finite, got {r.tolist()}")
    return r


def grpo(rewards: ArrayLike, normalize_std: bool = False, eps: float = 1e-6) -> np.ndarray:
    """A_j = r_j - mean(r); with ``normalize_std`` divided by (std(r) + eps) (population std)."""
    r = _as_rewards(rewards)
    if r.max() == r.min():
        return np.zeros_like(r)  # exact zeros (r - mean can leave 1e-17 rounding)
    adv = r - r.mean()
    if normalize_std:
        adv = adv / (r.std() + eps)
    return adv


def entropic_weights(rewards: ArrayLike, beta: float) -> np.ndarray:
    """Full-group weights w_j = exp(beta r_j) / mean_k exp(beta r_k) (mean(w) = 1)."""
    r = _as_rewards(rewards)
    e = np.exp(beta * (r - r.max()))
    return e / e.mean()


def entropic_loo_weights(rewards: ArrayLike, beta: float) -> np.ndarray:
    """Leave-one-out weights w_j = exp(beta r_j) / mean_{k != j} exp(beta r_k).

    A group of one has no baseline: its weight is 1 (advantage 0)."""
    r = _as_rewards(rewards)
    n = r.size
    if n == 1:
        return np.ones(1)
    e = np.exp(beta * (r - r.max()))  # max element is exp(0) = 1: no overflow
    loo_mean = (e.sum() - e) / (n - 1)
    # loo_mean > 0 always (every e_k > 0), but it can underflow when beta is huge.
    return e / np.maximum(loo_mean, np.finfo(np.float64).tiny)


def entropic(rewards: ArrayLike, beta: float) -> np.ndarray:
    """A_j = w_j - 1 with the leave-one-out weights at a fixed beta (>= 0)."""
    if not (beta >= 0 and math.isfinite(beta)):
        raise AdvantageError(f"beta must be finite and >= 0, got {beta}")
    return entropic_loo_weights(rewards, beta) - 1.0


def kl_to_uniform(rewards: ArrayLike, beta: float) -> float:
    """KL(q_beta || uniform) = mean_j(w_j log w_j), w the full-group weights."""
    w = entropic_weights(rewards, beta)
    pos = w > 0
    return float(np.sum(w[pos] * np.log(w[pos])) / w.size)


def solve_beta(
    rewards: ArrayLike, kl_budget: float = math.log(2), tol: float = 1e-10, beta_cap: float = 1e4
) -> float:
    """The beta with KL(q_beta || uniform) = kl_budget (or sup/2 if out of reach), by bisection.

    Searched as beta = b / (r_max - r_min), b in [0, beta_cap], so the result scales as
    1/(reward spread) and the advantages are invariant to affine reward maps."""
    r = _as_rewards(rewards)
    if kl_budget <= 0:
        raise AdvantageError(f"kl_budget must be > 0, got {kl_budget}")
    spread = float(r.max() - r.min())
    if spread == 0.0:
        return 0.0  # all rewards equal: no direction to tilt toward
    z = (r - r.min()) / spread  # in [0, 1], affine-free
    sup = math.log(r.size / int(np.sum(z == 1.0)))
    target = kl_budget if kl_budget < sup else sup / 2  # out of reach: half the supremum
    lo, hi = 0.0, 1.0
    while kl_to_uniform(z, hi) < target:
        if hi >= beta_cap:
            return beta_cap / spread
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        kl = kl_to_uniform(z, mid)
        if kl < target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= tol * max(1.0, hi):
            break
    return 0.5 * (lo + hi) / spread


def entropic_adaptive(
    rewards: ArrayLike, kl_budget: float = math.log(2), beta_cap: float = 1e4
) -> tuple[np.ndarray, float]:
    """(advantages, beta): beta solved per group (``solve_beta``), then ``entropic``."""
    beta = solve_beta(rewards, kl_budget, beta_cap=beta_cap)
    return entropic(rewards, beta), beta


def with_kl_penalty(advantages: ArrayLike, log_ratio: ArrayLike, kl_lambda: float) -> np.ndarray:
    """TTT-Discover's A_j = (w_j - 1) - lambda * log(pi_theta(a_j) / pi_theta0(a_j)).

    ``log_ratio`` is log pi - log pi0 per sample (or per token, broadcast against A)."""
    a = np.asarray(advantages, dtype=np.float64)
    lr = np.asarray(log_ratio, dtype=np.float64)
    return a - kl_lambda * lr


ESTIMATORS = ("grpo", "entropic", "entropic-adaptive")


def group_advantages(
    rewards: ArrayLike,
    estimator: str,
    *,
    beta: float = 2.0,
    kl_budget: float = math.log(2),
    normalize_std: bool = False,
) -> tuple[np.ndarray, float | None]:
    """Dispatch by name; returns (advantages, beta used or None for grpo)."""
    if estimator == "grpo":
        return grpo(rewards, normalize_std=normalize_std), None
    if estimator == "entropic":
        return entropic(rewards, beta), beta
    if estimator == "entropic-adaptive":
        return entropic_adaptive(rewards, kl_budget)
    raise AdvantageError(f"unknown estimator {estimator!r} (known: {', '.join(ESTIMATORS)})")
