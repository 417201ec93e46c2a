"""Circle packings: n disjoint circles in the unit square (or in a rectangle of perimeter 4),
maximising the sum of radii.

Accepted object forms (all JSON-able): an (n, 3) array of rows ``[x, y, r]``; a dict
``{"centers": (n, 2), "radii": (n,)}``; a pair ``[centers, radii]`` (what ``return centers,
radii`` becomes). For the rectangle task also ``{"circles": (n, 3), "width": w, "height": h}``.

The checks use exactly the floating-point forms ``x - r >= 0``, ``x + r <= 1`` and
``sqrt(dx^2 + dy^2) >= r_i + r_j`` (the forms the reference vectors were checked with); a
tolerant variant relaxes every inequality by ``tol``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from evoforge.tasks.base import Verdict
from evoforge.tasks.verifiers.objects import ObjectError, real_array, unwrap, verifier


def read_circles(obj: Any, n: int) -> np.ndarray:
    """The packing as an (n, 3) float array of rows [x, y, r]."""
    obj = unwrap(obj)
    if isinstance(obj, dict):
        if "circles" in obj:
            return read_circles(obj["circles"], n)
        if "centers" in obj and "radii" in obj:
            return _from_pair(obj["centers"], obj["radii"], n)
        raise ObjectError(f"circles: a dict needs keys 'centers' and 'radii' (got {sorted(obj)[:6]})")
    if isinstance(obj, (list, tuple)) and len(obj) == 2 and _depth(obj[0]) == 2 and _depth(obj[1]) == 1:
        return _from_pair(obj[0], obj[1], n)
    arr = real_array(obj, "circles")
    if arr.shape != (n, 3):
        raise ObjectError(f"circles: expected {n} rows [x, y, r] (shape ({n}, 3)), got shape {arr.shape}")
    return arr


def _depth(x: Any) -> int:
    d = 0
    while isinstance(x, (list, tuple, np.ndarray)) and len(x) > 0:
        d, x = d + 1, x[0]
    return d


def _from_pair(centers: Any, radii: Any, n: int) -> np.ndarray:
    c = real_array(centers, "centers")
    r = real_array(radii, "radii")
    if c.shape != (n, 2):
        raise ObjectError(f"centers: expected shape ({n}, 2), got {c.shape}")
    if r.shape != (n,):
        raise ObjectError(f"radii: expected {n} values, got shape {r.shape}")
    return np.column_stack([c, r])


def pair_slack(circles: np.ndarray) -> tuple[float, int, int]:
    """min over pairs of dist_ij - (r_i + r_j), and the worst pair (i < j)."""
    x, y, r = circles.T
    dx = x[:, None] - x[None, :]
    dy = y[:, None] - y[None, :]
    slack = np.sqrt(dx * dx + dy * dy) - (r[:, None] + r[None, :])
    i, j = np.triu_indices(len(r), 1)
    if i.size == 0:
        return float("inf"), -1, -1
    k = int(np.argmin(slack[i, j]))
    return float(slack[i[k], j[k]]), int(i[k]), int(j[k])


def _check_radii(c: np.ndarray) -> None:
    neg = np.flatnonzero(c[:, 2] < 0)
    if neg.size:
        raise ObjectError(f"circle {int(neg[0])} has negative radius {c[neg[0], 2]:.6g}")


def _overlap_reason(c: np.ndarray, tol: float) -> str | None:
    s, i, j = pair_slack(c)
    if s < -tol:
        return f"circle {i} overlaps circle {j} by {-s:.3g}" + (f" (tolerance {tol:g})" if tol else "")
    return None


@verifier
def verify_circles_in_square(obj: Any, n: int, tol: float = 0.0) -> Verdict:
    """Sum of radii of n disjoint circles inside [0,1]^2; ``tol`` relaxes every inequality."""
    c = read_circles(obj, n)
    _check_radii(c)
    x, y, r = c.T
    sides = {"left": x - r, "right": 1.0 - (x + r), "bottom": y - r, "top": 1.0 - (y + r)}
    outside = {
        "left": (x - r) < -tol,
        "right": (x + r) > 1.0 + tol,
        "bottom": (y - r) < -tol,
        "top": (y + r) > 1.0 + tol,
    }
    for side, mask in outside.items():
        if mask.any():
            k = int(np.flatnonzero(mask)[0])
            return Verdict.reject(f"circle {k} sticks out of the {side} side of the unit square by {-sides[side][k]:.3g}", n=n)
    why = _overlap_reason(c, tol)
    s_pair, _, _ = pair_slack(c)
    s_side = float(min(v.min() for v in sides.values()))
    metrics: dict[str, Any] = {"n": n, "min_pair_slack": s_pair, "min_boundary_slack": s_side}
    if why:
        return Verdict.reject(why, **metrics)
    if tol:  # what the packing is worth under the strict rules, after a uniform shrink
        shrink = max(0.0, -s_pair / 2.0, -s_side)
        metrics["uniform_shrink_needed"] = shrink
        metrics["strict_sum_after_shrink"] = float(np.sum(np.maximum(r - shrink, 0.0)))
    return Verdict.accept(float(np.sum(r)), **metrics)


@verifier
def verify_circles_in_rectangle(obj: Any, n: int, half_perimeter: float = 2.0) -> Verdict:
    """Sum of radii of n disjoint circles whose bounding box has width + height <= 2.

    With ``{"circles", "width", "height"}`` the circles must lie in [0,w]x[0,h] and w + h <= 2;
    otherwise the axis-aligned bounding box of the circles is the rectangle.
    """
    raw = unwrap(obj)
    c = read_circles(raw, n)
    _check_radii(c)
    x, y, r = c.T
    if isinstance(raw, dict) and ("width" in raw or "height" in raw):
        w = float(real_array(raw.get("width"), "width", ndim=0))
        h = float(real_array(raw.get("height"), "height", ndim=0))
        if w < 0 or h < 0:
            return Verdict.reject(f"rectangle has a negative side (width {w}, height {h})")
        if w + h > half_perimeter:
            return Verdict.reject(f"rectangle width + height = {w + h:.17g} exceeds {half_perimeter}")
        bad = ((x - r) < 0) | ((x + r) > w) | ((y - r) < 0) | ((y + r) > h)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            return Verdict.reject(f"circle {k} is not inside the given {w:.6g} x {h:.6g} rectangle")
        span = w + h
    else:
        span = float((np.max(x + r) - np.min(x - r)) + (np.max(y + r) - np.min(y - r)))
        if span > half_perimeter:
            return Verdict.reject(f"bounding box width + height = {span:.17g} exceeds {half_perimeter} by {span - half_perimeter:.3g}")
    why = _overlap_reason(c, 0.0)
    s_pair, _, _ = pair_slack(c)
    metrics = {"n": n, "min_pair_slack": s_pair, "width_plus_height": span}
    if why:
        return Verdict.reject(why, **metrics)
    return Verdict.accept(float(np.sum(r)), **metrics)
