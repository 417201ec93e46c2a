"""Point-configuration problems: Heilbronn (triangle and convex) and min/max distance ratio."""
from __future__ import annotations

import math
from itertools import combinations
from typing import Any

import numpy as np

from evoforge.tasks.base import Verdict
from evoforge.tasks.verifiers.objects import points, verifier

SQRT3 = math.sqrt(3.0)
TRIANGLE_AREA = SQRT3 / 4.0  # of the triangle (0,0), (1,0), (1/2, sqrt(3)/2)
INSIDE_TOL = 1e-12  # points on the slanted edges cannot be represented exactly in float64


def min_triangle_area(p: np.ndarray) -> tuple[float, tuple[int, int, int]]:
    """Smallest area over all triples of 2-d points (vectorised over the C(n,3) triples)."""
    idx = np.array(list(combinations(range(len(p)), 3)))
    a, b, c = p[idx[:, 0]], p[idx[:, 1]], p[idx[:, 2]]
    areas = 0.5 * np.abs((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1]))
    k = int(np.argmin(areas))
    return float(areas[k]), tuple(int(v) for v in idx[k])  # type: ignore[return-value]


@verifier
def verify_heilbronn_triangle(obj: Any, n: int = 11) -> Verdict:
    """min triangle area / area of the unit-side equilateral triangle; points must lie inside it."""
    p = points(obj, n, 2)
    x, y = p[:, 0], p[:, 1]
    # signed distance to the nearest edge (the slanted edges' normals have length 2)
    slack = np.minimum(y, np.minimum(SQRT3 * x - y, SQRT3 * (1.0 - x) - y) / 2.0)
    out = np.flatnonzero(slack < -INSIDE_TOL)
    if out.size:
        k = int(out[0])
        return Verdict.reject(f"point {k} ({x[k]:.6g}, {y[k]:.6g}) is outside the triangle by {-slack[k]:.3g}")
    area, tri = min_triangle_area(p)
    return Verdict.accept(area / TRIANGLE_AREA, n=n, smallest_triangle=list(tri), min_edge_distance=float(slack.min()))


@verifier
def verify_heilbronn_convex(obj: Any, n: int) -> Verdict:
    """min triangle area / area of the points' convex hull (scale and position free)."""
    p = points(obj, n, 2)
    from scipy.spatial import ConvexHull  # scipy costs 0.5 s to import: only when verifying

    try:
        hull_area = float(ConvexHull(p).volume)  # in 2-d, .volume is the area
    except Exception:
        return Verdict.reject("the points are collinear or coincide: their convex hull has no area")
    area, tri = min_triangle_area(p)
    return Verdict.accept(area / hull_area, n=n, smallest_triangle=list(tri), hull_area=hull_area)


@verifier
def verify_distance_ratio(obj: Any, n: int, d: int) -> Verdict:
    """(max pairwise distance / min pairwise distance)^2, to be minimised."""
    p = points(obj, n, d)
    from scipy.spatial.distance import pdist

    d2 = pdist(p, "sqeuclidean")
    lo, hi = float(d2.min()), float(d2.max())
    if lo == 0.0:
        return Verdict.reject("two points coincide (minimum distance 0)")
    return Verdict.accept(hi / lo, n=n, d=d, min_sq_dist=lo, max_sq_dist=hi)
