"""Kissing configurations from integer points (AlphaEvolve's certificate form).

A set C of non-zero integer points in Z^d with min_{x != y} |x - y|^2 >= max_x |x|^2 gives
kissing number(d) >= |C| (the points, scaled to the sphere of radius max |x|, are centres of
unit-ball-sized spheres touching a central one). The check is exact: float64 narrows the
candidate pairs (its error is far below the 1e-12 margin used), and the candidates are then
compared in Python integers.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from evoforge.tasks.base import Verdict
from evoforge.tasks.verifiers.objects import ObjectError, unwrap, verifier

MAX_POINTS = 2000  # best known in d=11 is 594; keeps the n^2 float pass small
FAST_BOUND = 2**50  # |coordinate| below this: float64 differences are exact integers
MARGIN = 1e-12  # relative; float64 sums of 11 squares are off by at most ~3e-15


def read_integer_points(obj: Any, d: int) -> list[tuple[int, ...]]:
    obj = unwrap(obj)
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    if not isinstance(obj, (list, tuple)) or not obj:
        raise ObjectError(f"points: expected a non-empty list of {d}-dimensional integer points, got {type(obj).__name__}")
    if len(obj) > MAX_POINTS:
        raise ObjectError(f"points: {len(obj)} points is more than the limit {MAX_POINTS}")
    out = []
    for i, p in enumerate(obj):
        if isinstance(p, np.ndarray):
            p = p.tolist()
        if not isinstance(p, (list, tuple)) or len(p) != d:
            raise ObjectError(f"point {i}: expected {d} integer coordinates, got {p!r:.60}")
        coords = []
        for v in p:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise ObjectError(f"point {i}: coordinate {v!r:.30} is not an integer")
            if isinstance(v, (float, np.floating)):
                if not (np.isfinite(v) and float(v).is_integer() and abs(v) < 2**53):
                    raise ObjectError(f"point {i}: coordinate {v!r} is not an exact integer")
            coords.append(int(v))
        out.append(tuple(coords))
    return out


def _sq(v: tuple[int, ...]) -> int:
    return sum(c * c for c in v)


def _exact_extremes(pts: list[tuple[int, ...]]) -> tuple[int, int, tuple[int, int]]:
    """(min squared pair distance, max squared norm, closest pair), exactly."""
    n = len(pts)
    max_norm = max(_sq(p) for p in pts)
    big = max(abs(c) for p in pts for c in p)
    if n < 2:
        return 0, max_norm, (-1, -1)
    if big < FAST_BOUND:
        x = np.array(pts, dtype=np.float64)
        g = np.einsum("ij,ij->i", x, x)
        # Gram form: cheap but can cancel; used only to shortlist, with a huge margin
        d2 = g[:, None] + g[None, :] - 2.0 * (x @ x.T)
        i, j = np.triu_indices(n, 1)
        approx = d2[i, j]
        cand = np.flatnonzero(approx <= float(approx.min()) + 1e-6 * max(float(g.max()), 1.0))
        diff = x[i[cand]] - x[j[cand]]  # exact integers in float64 below FAST_BOUND
        cand_d = np.einsum("ij,ij->i", diff, diff)
        keep = cand[cand_d <= cand_d.min() * (1 + MARGIN)]
        best = min((_sq(tuple(a - b for a, b in zip(pts[i[k]], pts[j[k]]))), int(i[k]), int(j[k])) for k in keep)
        return best[0], max_norm, (best[1], best[2])
    best = min((_sq(tuple(a - b for a, b in zip(pts[a_], pts[b_]))), a_, b_) for a_ in range(n) for b_ in range(a_ + 1, n))
    return best[0], max_norm, (best[1], best[2])


@verifier
def verify_kissing(obj: Any, d: int = 11) -> Verdict:
    pts = read_integer_points(obj, d)
    zero = next((i for i, p in enumerate(pts) if not any(p)), None)
    if zero is not None:
        return Verdict.reject(f"point {zero} is the origin; 0 must not be in C")
    min_d2, max_n2, (i, j) = _exact_extremes(pts)
    metrics = {"count": len(pts), "min_sq_dist": str(min_d2), "max_sq_norm": str(max_n2), "ratio": min_d2 / max_n2}
    if min_d2 < max_n2:
        what = "coincide" if min_d2 == 0 else f"are too close: |x-y|^2 = {min_d2} < max |x|^2 = {max_n2}"
        return Verdict.reject(f"points {i} and {j} {what}", **metrics)
    return Verdict.accept(float(len(pts)), **metrics)
