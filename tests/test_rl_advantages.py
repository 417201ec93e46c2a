"""Advantage estimators on hand-computed groups (SPEC §1 GRPO, §2 entropic, seed 003)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from evoforge.rl.advantages import (
    AdvantageError,
    entropic,
    entropic_adaptive,
    entropic_loo_weights,
    entropic_weights,
    group_advantages,
    grpo,
    kl_to_uniform,
    solve_beta,
    with_kl_penalty,
)


def test_grpo_mean_baseline():
    np.testing.assert_allclose(grpo([1, 2, 3, 6]), [-2, -1, 0, 3])


def test_grpo_std_normalised():
    std = math.sqrt(3.5)  # population std of [1, 2, 3, 6]
    np.testing.assert_allclose(grpo([1, 2, 3, 6], normalize_std=True), np.array([-2, -1, 0, 3]) / (std + 1e-6))


def test_entropic_weights_by_hand():
    r = [0.0, math.log(2), math.log(4)]  # exp(r) = 1, 2, 4
    np.testing.assert_allclose(entropic_weights(r, 1.0), [3 / 7, 6 / 7, 12 / 7])
    # leave-one-out: w_j = e_j / mean of the others
    np.testing.assert_allclose(entropic_loo_weights(r, 1.0), [1 / 3, 2 / 2.5, 4 / 1.5])
    np.testing.assert_allclose(entropic(r, 1.0), [1 / 3 - 1, 0.8 - 1, 8 / 3 - 1])


def test_kl_is_kl_of_softmax_to_uniform():
    r = np.array([0.1, 0.4, 0.4, 1.3, -2.0])
    beta = 1.7
    q = np.exp(beta * r) / np.exp(beta * r).sum()
    direct = float(np.sum(q * np.log(q * r.size)))
    assert kl_to_uniform(r, beta) == pytest.approx(direct, rel=1e-12)


@pytest.mark.parametrize("rewards", [[0, 0.3, 0.5, 1.0, 2.0], [-0.4, -0.4, -0.2, 0.0, 2.63, 2.6301], list(range(16))])
def test_adaptive_beta_hits_ln2(rewards):
    adv, beta = entropic_adaptive(rewards)
    assert abs(kl_to_uniform(rewards, beta) - math.log(2)) < 1e-6
    assert beta == pytest.approx(solve_beta(rewards))
    np.testing.assert_allclose(adv, entropic(rewards, beta))


def test_adaptive_is_affine_invariant():
    r = np.array([-0.4, -0.1, 0.7, 0.9, 2.5, 2.51])
    a1, b1 = entropic_adaptive(r)
    a2, b2 = entropic_adaptive(3.7 * r - 5.0)
    np.testing.assert_allclose(a1, a2, rtol=1e-7, atol=1e-9)
    assert b2 == pytest.approx(b1 / 3.7, rel=1e-7)


def test_fixed_beta_is_shift_invariant_not_scale_invariant():
    r = np.array([0.0, 0.5, 2.0])
    np.testing.assert_allclose(entropic(r, 2.0), entropic(r + 100.0, 2.0))
    assert not np.allclose(entropic(r, 2.0), entropic(3 * r, 2.0))


@pytest.mark.parametrize("est", ["grpo", "entropic", "entropic-adaptive"])
def test_equal_rewards_give_zero_and_no_nan(est):
    for r in ([1.5] * 8, [-0.4] * 3, [7.0]):
        adv, _ = group_advantages(r, est)
        assert np.all(np.isfinite(adv)) and np.all(adv == 0.0)
    assert np.all(grpo([2.0] * 4, normalize_std=True) == 0.0)


def test_unreachable_budget_solves_for_half_the_supremum():
    # KL -> ln(n / #argmax) = ln 2 only as beta -> inf: two samples, or a tie at the top of four
    for r in ([0.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0]):
        adv, beta = entropic_adaptive(r)
        sup = math.log(len(r) / r.count(1.0))
        assert abs(kl_to_uniform(r, beta) - min(math.log(2), sup / 2)) < 1e-6
        assert np.all(np.isfinite(adv)) and np.max(np.abs(adv)) < 20
        assert adv[-1] > 0 > adv[0]


def test_huge_rewards_do_not_overflow():
    adv = entropic([0.0, 1e6, 2e6], 1.0)  # exp(2e6) would overflow without subtracting r_max
    assert np.all(np.isfinite(adv))
    assert adv[2] > 0 and adv[0] == pytest.approx(-1.0)


def test_kl_penalty_term():
    np.testing.assert_allclose(with_kl_penalty([1.0, 2.0], [0.5, -0.5], 0.1), [0.95, 2.05])


def test_bad_rewards_raise_clear_error():
    with pytest.raises(AdvantageError, match="non-empty"):
        grpo([])
    with pytest.raises(AdvantageError, match="finite"):
        entropic([0.0, math.inf], 1.0)
    with pytest.raises(AdvantageError, match="unknown estimator"):
        group_advantages([1.0], "ppo")
