"""Step-function inequalities: the three autocorrelation constants and Erdős minimum overlap.

A step function is its heights ``a_0..a_{n-1}`` on ``n`` equal steps. With ``c = a * a`` (full
discrete convolution, length ``2n-1``) the autoconvolution ``f*f`` is piecewise linear through
the knots ``c / (2n)``, so every formula here is exact, not a quadrature.

Numerics: ``np.convolve`` (direct sums) up to ``DIRECT_MAX`` steps, FFT above. On the published
vectors (up to 50 000 steps) both agree with the direct sum to ~1e-15 relative on max(c), sum(c)
and the L2 term; the direct sum costs O(n^2) and takes seconds at 30 000 steps.
Heights are first scaled by an exact power of two (no rounding) so that a tiny or huge overall
scale cannot underflow or overflow the convolution: all four scores are scale-invariant.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from evoforge.tasks.base import Verdict
from evoforge.tasks.verifiers.objects import ObjectError, vector, verifier

DIRECT_MAX = 2048
MAX_STEPS = 2_000_000


def convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Full linear convolution; direct for short inputs, real FFT for long ones."""
    if min(a.size, b.size) <= DIRECT_MAX:
        return np.convolve(a, b)
    m = a.size + b.size - 1
    size = 1 << (m - 1).bit_length()
    return np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:m]


def _normalised(a: np.ndarray) -> np.ndarray:
    peak = float(np.max(np.abs(a)))
    if peak == 0.0:
        raise ObjectError("heights are all zero")
    return np.ldexp(a, -np.frexp(peak)[1])  # exact: multiplies by a power of two


def _heights(obj: Any, allow_negative: bool) -> np.ndarray:
    a = vector(obj, "heights")
    if a.size > MAX_STEPS:
        raise ObjectError(f"heights: {a.size} steps is more than the limit {MAX_STEPS}")
    if not allow_negative:
        neg = np.flatnonzero(a < 0)
        if neg.size:
            raise ObjectError(f"height {int(neg[0])} is negative ({a[neg[0]]:.6g}); this task needs f >= 0")
    return _normalised(a)


def _positive_sum(a: np.ndarray) -> float:
    s = float(np.sum(a))
    if not s > 0:
        raise ObjectError(f"sum of heights is {s:.6g}; it must be positive")
    return s


def ac1_value(a: np.ndarray) -> float:
    """First autocorrelation constant bound: 2n max(a*a) / (sum a)^2 (minimise)."""
    c = convolve(a, a)
    return 2 * a.size * float(np.max(c)) / _positive_sum(a) ** 2


def ac2_value(a: np.ndarray) -> float:
    """Second autocorrelation bound ||f*f||_2^2 / (||f*f||_1 ||f*f||_inf) (maximise).

    The L2 term integrates the piecewise-linear f*f exactly over the knots [0, c, 0]; the common
    step widths cancel between numerator and denominator.
    """
    c = convolve(a, a)
    y = np.concatenate(([0.0], c, [0.0]))
    l2sq = float(np.sum(y[:-1] ** 2 + y[:-1] * y[1:] + y[1:] ** 2)) / 3.0
    l1, linf = float(np.sum(c)), float(np.max(c))
    if not (l1 > 0 and linf > 0):
        raise ObjectError("autoconvolution is zero")
    return l2sq / (l1 * linf)


def ac3_value(a: np.ndarray, formula: str = "max_of_abs") -> float:
    """Third autocorrelation bound 2n max|a*a| / (sum a)^2 (ThetaEvolve, C3'), or the
    AlphaEvolve-v1 code's |2n max(a*a) / (sum a)^2| with ``formula="abs_of_max"``."""
    s = float(np.sum(a))
    if s == 0.0:
        raise ObjectError("sum of heights is zero; the bound divides by (sum f)^2")
    c = convolve(a, a)
    if formula == "max_of_abs":
        return 2 * a.size * float(np.max(np.abs(c))) / s**2
    if formula == "abs_of_max":
        return abs(2 * a.size * float(np.max(c)) / s**2)
    raise ValueError(f"unknown AC3 formula {formula!r} (max_of_abs or abs_of_max)")


def erdos_value(h: np.ndarray) -> float:
    """Erdős minimum-overlap bound max_k sum_j h_j (1 - h_{j+k}) * 2/n (minimise)."""
    corr = convolve(h, (1.0 - h)[::-1])  # = np.correlate(h, 1 - h, "full")
    return float(np.max(corr)) * 2.0 / h.size


def _metrics(a: np.ndarray) -> dict[str, Any]:
    return {"n_steps": int(a.size)}


@verifier
def verify_ac1(obj: Any) -> Verdict:
    a = _heights(obj, allow_negative=False)
    return Verdict.accept(ac1_value(a), **_metrics(a))


@verifier
def verify_ac2(obj: Any) -> Verdict:
    a = _heights(obj, allow_negative=False)
    return Verdict.accept(ac2_value(a), **_metrics(a))


@verifier
def verify_ac3(obj: Any, formula: str = "max_of_abs") -> Verdict:
    a = _heights(obj, allow_negative=True)
    m = _metrics(a)
    m["other_formula"] = ac3_value(a, "abs_of_max" if formula == "max_of_abs" else "max_of_abs")
    return Verdict.accept(ac3_value(a, formula), **m)


ERDOS_SUM_RTOL = 1e-9


@verifier
def verify_erdos(obj: Any) -> Verdict:
    """Heights h in [0, 1] on n steps of [0, 2] with sum(h) = n/2 (to 1e-9 relative)."""
    h = vector(obj, "h")
    if h.size > MAX_STEPS:
        raise ObjectError(f"h: {h.size} steps is more than the limit {MAX_STEPS}")
    low, high = np.flatnonzero(h < 0), np.flatnonzero(h > 1)
    if low.size:
        return Verdict.reject(f"h[{int(low[0])}] = {h[low[0]]:.6g} is below 0; need 0 <= h <= 1")
    if high.size:
        return Verdict.reject(f"h[{int(high[0])}] = {h[high[0]]:.6g} is above 1; need 0 <= h <= 1")
    half = h.size / 2.0
    s = float(np.sum(h))
    if abs(s - half) > ERDOS_SUM_RTOL * half:
        return Verdict.reject(f"sum(h) = {s:.12g} but must equal n/2 = {half:g} (off by {s - half:.3g})", n_steps=int(h.size))
    return Verdict.accept(erdos_value(h), n_steps=int(h.size), sum_minus_half_n=s - half)
