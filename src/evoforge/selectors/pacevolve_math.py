"""PACEvolve's search-control formulas (SPEC §3) as small pure functions.

The paper writes them for minimisation with a target r below the scores. Here every score is
a *fitness* (higher is better: fitness = -score for a minimisation task) and the target is
in the same orientation, above the fitness. Mirroring the signs gives the same numbers:

    minimisation:  R_t = (s_{t-1} - s_t) / (s_{t-1} - r)      A_t = (s_0 - s_t) / (s_0 - r)
    fitness form:  R_t = (f_t - f_{t-1}) / (r_f - f_{t-1})    A_t = (f_t - f_0) / (r_f - f_0)

with f = -s and r_f = -r (numerator and denominator both change sign).
"""
from __future__ import annotations

import math

import numpy as np

BACKTRACK = "backtrack"


def relative_progress(prev_best: float, new_best: float, target: float) -> float:
    """R_t: the share of the remaining gap closed by a new best, 0 when there is none.

    Fitness orientation. A target at or below ``prev_best`` (gap closed already) counts any
    improvement as full progress (1.0)."""
    if not new_best > prev_best:
        return 0.0
    gap = target - prev_best
    if gap <= 0:
        return 1.0
    return min(1.0, (new_best - prev_best) / gap)


def momentum_update(momentum: float, progress: float, beta: float) -> float:
    """m_t = beta * m_{t-1} + (1 - beta) * R_t (an exponentially weighted average)."""
    return beta * momentum + (1.0 - beta) * progress


def absolute_progress(start: float, current: float, target: float) -> float:
    """A_t = (f_t - f_0) / (r - f_0) in fitness orientation, clipped to [0, 1]."""
    gap = target - start
    if gap <= 0:
        return 1.0 if current >= start else 0.0
    return min(1.0, max(0.0, (current - start) / gap))


def ce_weights(a_i: float, others: dict[int, float]) -> dict[str | int, float]:
    """Unnormalised collaborative-evolution weights for island i with absolute progress a_i
    and the other islands' progress ``others`` (island -> A_j)."""
    weights: dict[str | int, float] = {}
    if not others:
        weights[BACKTRACK] = 1.0
        return weights
    best_j = max(others, key=lambda j: (others[j], -j))  # ties: the lowest island index
    a_best = others[best_j]
    similarity = max(0.0, 1.0 - abs(a_i - a_best))
    weights[BACKTRACK] = max(0.0, a_i - a_best) + similarity * (1.0 - a_i) * (1.0 - a_best)
    for j, a_j in others.items():
        weights[j] = max(0.0, a_j - a_i)
    weights[best_j] += similarity * a_i * a_best  # synergy bonus for the best partner
    return weights


def ce_probabilities(a_i: float, others: dict[int, float]) -> dict[str | int, float]:
    """P(a) = w_a / (w_BT + sum_j w_Cj); all-zero weights fall back to Backtrack."""
    weights = ce_weights(a_i, others)
    total = sum(weights.values())
    if total <= 0:
        return {a: (1.0 if a == BACKTRACK else 0.0) for a in weights}
    return {a: w / total for a, w in weights.items()}


def power_law_choice(count: int, alpha: float, rng: np.random.Generator) -> int:
    """Draw d in 1..count with P(d) proportional to d**-alpha (d = 1 is the most recent)."""
    if count < 1:
        raise ValueError("power_law_choice needs count >= 1")
    weights = power_law_weights(count, alpha)
    return int(rng.choice(count, p=weights)) + 1


def power_law_weights(count: int, alpha: float) -> np.ndarray:
    d = np.arange(1, count + 1, dtype=np.float64)
    w = d ** (-alpha)
    return w / w.sum()


def fallback_target(best_seen: float, start: float, margin: float) -> float:
    """Target used when none is known, or when the known one is already reached: the best
    fitness seen plus ``margin`` times the larger of |best_seen - start| and |best_seen|
    (never a zero gap)."""
    span = max(abs(best_seen - start), abs(best_seen), 1e-12)
    return best_seen + margin * span if math.isfinite(best_seen) else best_seen
