"""Rewards for RL: the penalty ladder plus ThetaEvolve's optional shaping (SPEC §1).

    H(s) = (s - L) / (U - L)   maximisation        H(s) = (U - s) / (U - L)   minimisation
    R(s) = k * clip(H(s), 0, 1) ** alpha           (k = 3 by default)

Penalties (-0.4 .. -0.1) are never shaped. A valid program must always earn more than any
penalty, so the raw score cannot be used as the reward of a MIN task (AC1 ~ 1.5 would rank
below a -0.4 penalty once the group mean is taken). ``reward_for`` therefore shapes every
valid score, using the first band that exists:

1. an explicit ``Shaping`` (from the run's train config),
2. the task's own ``Task.shaping``,
3. a default band from the initial program's score (H = 0) to the best known value (H = 1),
4. when the task has no usable initial score or target: a logistic squash of the oriented
   score, k * sigmoid(fitness), which is monotone and > 0 but compresses large differences.

Every valid reward is in [0, k], so it always sits above the penalties.
"""
from __future__ import annotations

import math
from dataclasses import replace

from evoforge.rewards import PENALTY, ChildClass
from evoforge.tasks.base import Direction, Shaping, Task


class ShapingError(ValueError):
    """A shaping band that cannot be used (one clear line for the CLI)."""


def check_shaping(shaping: Shaping) -> Shaping:
    if not (math.isfinite(shaping.lower) and math.isfinite(shaping.upper)):
        raise ShapingError(f"shaping band must be finite, got [{shaping.lower}, {shaping.upper}]")
    if shaping.upper <= shaping.lower:
        raise ShapingError(f"shaping needs upper > lower, got lower={shaping.lower} upper={shaping.upper}")
    if shaping.alpha <= 0 or shaping.k <= 0:
        raise ShapingError(f"shaping needs alpha > 0 and k > 0, got alpha={shaping.alpha} k={shaping.k}")
    return shaping


def shape(score: float, shaping: Shaping, direction: Direction) -> float:
    """R(s) = k * clip(H(s), 0, 1) ** alpha, direction-aware."""
    span = shaping.upper - shaping.lower
    if direction is Direction.MAX:
        h = (score - shaping.lower) / span
    else:
        h = (shaping.upper - score) / span
    h = min(max(h, 0.0), 1.0)
    return shaping.k * h**shaping.alpha


def default_band(task: Task, initial_score: float | None = None) -> Shaping | None:
    """From the initial score (H = 0) to the best known value (H = 1), or None if unknown."""
    start = initial_score if initial_score is not None else task.initial_score
    target = task.target
    if start is None or target is None or not task.better(target, start):
        return None
    lower, upper = (start, target) if task.direction is Direction.MAX else (target, start)
    return Shaping(lower=lower, upper=upper)


def resolve_shaping(
    task: Task,
    explicit: Shaping | None = None,
    *,
    lower: float | None = None,
    upper: float | None = None,
    alpha: float | None = None,
    k: float | None = None,
    initial_score: float | None = None,
) -> Shaping | None:
    """The band ``reward_for`` will use: explicit, else the task's, else the default; then
    field overrides (a train config may set only alpha, say). None = logistic fallback."""
    base = explicit or task.shaping or default_band(task, initial_score)
    if base is None:
        if lower is None or upper is None:
            return None
        base = Shaping(lower=lower, upper=upper)
    fields = {n: v for n, v in (("lower", lower), ("upper", upper), ("alpha", alpha), ("k", k)) if v is not None}
    return check_shaping(replace(base, **fields))


def reward_for(
    child_class: ChildClass,
    score: float | None,
    task: Task,
    shaping: Shaping | None = None,
    *,
    initial_score: float | None = None,
) -> float:
    """The RL reward of one child: its penalty, or its shaped score (see the module doc)."""
    if child_class is not ChildClass.EVALUATED:
        return PENALTY[child_class]
    if score is None or not math.isfinite(score):
        raise ShapingError(f"an evaluated child needs a finite score, got {score!r}")
    band = resolve_shaping(task, shaping, initial_score=initial_score)
    if band is not None:
        return shape(score, band, task.direction)
    k = 3.0
    x = task.fitness(score)
    # numerically safe logistic
    sig = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))
    return k * sig
