"""Rewards: the penalty ladder, ThetaEvolve's shaping, and reward_for's band choice."""
from __future__ import annotations

import math

import pytest

from evoforge.rewards import PENALTY, ChildClass
from evoforge.rewards.shaping import ShapingError, default_band, resolve_shaping, reward_for, shape
from evoforge.tasks.base import Direction, KnownValue, Shaping, Task


def make_task(direction: Direction, initial: float | None, best: float | None, shaping: Shaping | None = None) -> Task:
    return Task(
        name="t", description="d", initial_program="x = 1", direction=direction,
        best_human=KnownValue(best, "paper") if best is not None else None,
        initial_score=initial, shaping=shaping,
    )


def test_shape_max_formula_and_clipping():
    band = Shaping(lower=2.0, upper=3.0, alpha=2.0, k=3.0)
    assert shape(2.5, band, Direction.MAX) == pytest.approx(3.0 * 0.25)
    assert shape(1.0, band, Direction.MAX) == 0.0  # below L clips to 0
    assert shape(9.0, band, Direction.MAX) == 3.0  # above U clips to k


def test_shape_min_is_mirrored():
    band = Shaping(lower=1.5, upper=1.6, alpha=1.0, k=3.0)
    assert shape(1.52, band, Direction.MIN) == pytest.approx(3.0 * (1.6 - 1.52) / 0.1)
    assert shape(1.7, band, Direction.MIN) == 0.0
    assert shape(1.4, band, Direction.MIN) == 3.0


def test_penalties_are_never_shaped():
    task = make_task(Direction.MAX, 1.0, 2.0, Shaping(0.0, 1.0, alpha=3.0, k=10.0))
    for cls, value in PENALTY.items():
        assert reward_for(cls, None, task) == value
        assert reward_for(cls, 123.0, task) == value


def test_min_task_without_shaping_ranks_good_programs_above_penalties():
    # AC1-like: minimise, initial 1.60, best known 1.5029; raw 1.55 must beat every penalty
    task = make_task(Direction.MIN, 1.60, 1.5029)
    good = reward_for(ChildClass.EVALUATED, 1.55, task)
    better = reward_for(ChildClass.EVALUATED, 1.51, task)
    worse_than_start = reward_for(ChildClass.EVALUATED, 1.9, task)
    assert better > good > worse_than_start == 0.0 > max(PENALTY.values())
    assert good == pytest.approx(3.0 * (1.60 - 1.55) / (1.60 - 1.5029))


def test_default_band_max_and_explicit_override():
    task = make_task(Direction.MAX, 0.96, 2.635)
    assert default_band(task) == Shaping(lower=0.96, upper=2.635)
    assert reward_for(ChildClass.EVALUATED, 2.635, task) == pytest.approx(3.0)
    explicit = Shaping(lower=2.6, upper=2.64, alpha=3.0, k=3.0)
    assert reward_for(ChildClass.EVALUATED, 2.62, task, explicit) == pytest.approx(3.0 * 0.5**3)


def test_measured_initial_score_replaces_missing_one():
    task = make_task(Direction.MAX, None, 10.0)
    assert default_band(task) is None
    assert reward_for(ChildClass.EVALUATED, 5.0, task, initial_score=0.0) == pytest.approx(1.5)


def test_logistic_fallback_is_monotone_and_positive():
    task = make_task(Direction.MIN, None, None)
    r = [reward_for(ChildClass.EVALUATED, s, task) for s in (5.0, 1.0, -1.0)]
    assert 0 < r[0] < r[1] < r[2] < 3.0
    assert reward_for(ChildClass.EVALUATED, 1e6, task) >= 0.0  # no overflow


def test_resolve_shaping_field_overrides_and_bad_band():
    task = make_task(Direction.MAX, 1.0, 2.0)
    assert resolve_shaping(task, alpha=3.0) == Shaping(1.0, 2.0, alpha=3.0, k=3.0)
    with pytest.raises(ShapingError, match="upper > lower"):
        resolve_shaping(task, lower=2.0, upper=1.0)
    with pytest.raises(ShapingError, match="finite score"):
        reward_for(ChildClass.EVALUATED, math.nan, task)
