"""Sums and differences (Tao's problem 3a, AlphaEvolve C6).

For a finite U of non-negative integers with 0 in U and |U-U| <= 2 max(U) + 1,
    C6 >= 1 + log(|U-U| / |U+U|) / log(2 max(U) + 1).
|U+U| and |U-U| are counted exactly: by FFT of the indicator (counts are integers, so rounding
to the nearest integer is exact) when max(U) is small, else by sweeping sums in sorted order.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from evoforge.tasks.base import Verdict
from evoforge.tasks.verifiers.objects import ObjectError, unwrap, verifier

MAX_SIZE = 60_000  # the published sets have 2003 and 54 265 elements
MAX_VALUE = 2**40
FFT_MAX_VALUE = 1 << 22
WINDOW = 1 << 27  # values per window of the sweep: a 128 MB bitmap
LONG_RUNS = 64  # mean partners per u_i from which a window is swept u_i by u_i (bounds expanded pairs)


def read_integer_set(obj: Any) -> np.ndarray:
    obj = unwrap(obj)
    arr = np.asarray(obj)
    if arr.dtype == object or arr.ndim != 1:
        raise ObjectError("U: expected a flat list of non-negative integers")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ObjectError("U: every element must be an integer")
    elif arr.dtype.kind not in "iu":
        raise ObjectError(f"U: expected integers, got {arr.dtype} values")
    if arr.size == 0:
        raise ObjectError("U: the set is empty")
    if arr.size > MAX_SIZE:
        raise ObjectError(f"U: {arr.size} elements is more than the limit {MAX_SIZE}")
    if arr.min() < 0:
        raise ObjectError(f"U: element {arr.min()} is negative; U must be non-negative integers")
    if arr.max() > MAX_VALUE:
        raise ObjectError(f"U: element {arr.max()} is larger than the limit 2^40")
    u = np.unique(arr.astype(np.int64))
    if u.size != arr.size:
        raise ObjectError(f"U: {arr.size - u.size} repeated elements; give each element once")
    return u


def _count_by_fft(u: np.ndarray) -> tuple[int, int]:
    m = int(u[-1])
    ind = np.zeros(m + 1)
    ind[u] = 1.0
    size = 1 << (2 * m + 1).bit_length()
    f = np.fft.rfft(ind, size)
    sums = np.rint(np.fft.irfft(f * f, size)[: 2 * m + 1])
    diffs = np.rint(np.fft.irfft(f * np.conj(f), size))  # circular: index k and size-k
    n_sums = int(np.count_nonzero(sums > 0.5))
    n_pos_diffs = int(np.count_nonzero(diffs[1 : m + 1] > 0.5))
    return n_sums, 2 * n_pos_diffs + 1


def _count_by_sweep(u: np.ndarray, negate: bool) -> int:
    """Distinct values of u_i + u_j (i <= j), or of u_j - u_i > 0, one window of values at a time.

    In each window, every u_i's partners form one contiguous run of the sorted u. Long runs
    are scattered into the window's bitmap one u_i at a time (a slice of u, no index arrays);
    windows of short runs expand all their pairs at once with numpy instead."""
    m = int(u[-1])
    top, start = (m, 1) if negate else (2 * m, 0)
    own = np.arange(u.size)
    seen = np.zeros(min(WINDOW, top + 1 - start), dtype=bool)
    total = 0
    for lo in range(start, top + 1, WINDOW):
        hi = min(lo + WINDOW, top + 1)
        left = np.searchsorted(u, (lo + u) if negate else (lo - u))
        right = np.searchsorted(u, (hi + u) if negate else (hi - u))
        if not negate:
            left = np.maximum(left, own)  # u_i + u_j with j >= i covers every sum once
        runs = np.maximum(right - left, 0)
        active = np.flatnonzero(runs)
        if active.size == 0:
            continue
        window = seen[: hi - lo]
        window[:] = False
        count = int(runs.sum())
        if count >= LONG_RUNS * active.size:
            for i in active.tolist():
                partners = u[left[i] : right[i]]
                window[(partners - (u[i] + lo)) if negate else (partners + (u[i] - lo))] = True
        else:
            base = np.repeat(own, runs)  # index i of each pair
            offset = np.arange(count) - np.repeat(np.cumsum(runs) - runs, runs)
            partner = u[np.repeat(left, runs) + offset]
            window[((partner - u[base]) if negate else (partner + u[base])) - lo] = True
        total += int(np.count_nonzero(window))
    return 2 * total + 1 if negate else total


def sizes(u: np.ndarray) -> tuple[int, int]:
    """(|U+U|, |U-U|) exactly."""
    if int(u[-1]) <= FFT_MAX_VALUE:
        return _count_by_fft(u)
    return _count_by_sweep(u, negate=False), _count_by_sweep(u, negate=True)


@verifier
def verify_sums_differences(obj: Any) -> Verdict:
    u = read_integer_set(obj)
    if u[0] != 0:
        return Verdict.reject("0 must be in U")
    m = int(u[-1])
    if m == 0:
        return Verdict.reject("U = {0} gives no bound; it needs a positive element")
    n_sum, n_diff = sizes(u)
    metrics = {"size": int(u.size), "max": m, "sums": n_sum, "differences": n_diff}
    if n_diff > 2 * m + 1:  # cannot happen for U in [0, m]; kept as the definition's check
        return Verdict.reject(f"|U-U| = {n_diff} exceeds 2 max(U) + 1 = {2 * m + 1}", **metrics)
    return Verdict.accept(1.0 + math.log(n_diff / n_sum) / math.log(2 * m + 1), **metrics)
