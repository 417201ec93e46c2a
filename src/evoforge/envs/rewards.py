"""Rewards of the two roles and role-conditioned GRPO advantages.

Generator (our reading of the seed; SPEC §4 gives the parts, not how they add up):
    R_gen = layer / 5                                        (mechanical signal, 0..1)
          + [layer = 5] * (Q_unc(a_m) + gamma_t * (1 - sim))   (difficulty + novelty)
with Q_unc(a) = exp(-(a - a_star)^2 / (2 sigma_a^2)), a_star = 0.3. The self-review never enters
R_gen (it only gates admission). Solver: the frozen scorer S_e of the environment, 0 or 1.

Role-conditioned GRPO: within each group A = r - mean(group), divided by the std of ALL of that
role's rewards this step (so the generator's larger reward scale does not drown the solver's),
then both roles go into one learner update.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def q_unc(a: float, a_star: float = 0.3, sigma_a: float = 0.2) -> float:
    return math.exp(-((a - a_star) ** 2) / (2.0 * sigma_a ** 2))


def generator_reward(layer: int, pass_rate: float | None, novelty: float, gamma_t: float,
                     a_star: float = 0.3, sigma_a: float = 0.2) -> float:
    r = layer / 5.0
    if layer == 5 and pass_rate is not None:
        r += q_unc(pass_rate, a_star, sigma_a) + gamma_t * novelty
    return r


def role_advantages(groups: Sequence[Sequence[float]], eps: float = 1e-6) -> list[list[float]]:
    """Group-centred rewards over the role's std (groups of one role only)."""
    flat = np.array([r for g in groups for r in g], dtype=np.float64)
    if flat.size == 0:
        return []
    scale = float(flat.std()) + eps
    out = []
    for g in groups:
        r = np.asarray(g, dtype=np.float64)
        adv = np.zeros_like(r) if r.max() == r.min() else (r - r.mean()) / scale
        out.append(adv.tolist())
    return out
