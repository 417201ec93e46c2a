"""Drawers for geometric objects: circle packings and point sets.

Each drawer takes a fresh ``Figure`` and the JSON-decoded object and raises ``ValueError``
with a short reason when the object cannot be drawn; ``draw_object`` turns that into a card.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Polygon, Rectangle

OVERLAP_TOL = 1e-6  # violations below this are not highlighted (the "-T" tolerance)
MAX_TRIANGLE_POINTS = 120  # all-triples search above this is not "cheap"
MAX_ELEMENTS = 5_000_000  # bigger objects get a card: drawing them would stall the run
TRIANGLE = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])


def as_float_array(obj: Any, what: str) -> np.ndarray:
    try:
        arr = np.asarray(obj, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not numeric ({exc})") from None
    if arr.size == 0:
        raise ValueError(f"{what} is empty")
    if arr.size > MAX_ELEMENTS:
        raise ValueError(f"{what} is too large to draw ({arr.size} values)")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} has {int(np.sum(~np.isfinite(arr)))} non-finite values")
    return arr


def _circle_rows(obj: Any) -> np.ndarray:
    if isinstance(obj, dict) and "circles" in obj:
        obj = obj["circles"]
    if isinstance(obj, dict) and "centers" in obj and "radii" in obj:
        centers = as_float_array(obj["centers"], "centers").reshape(-1, 2)
        radii = as_float_array(obj["radii"], "radii").reshape(-1)
        if len(centers) != len(radii):
            raise ValueError(f"{len(centers)} centers but {len(radii)} radii")
        return np.column_stack([centers, radii])
    rows = as_float_array(obj, "circles")
    if rows.ndim != 2 or rows.shape[1] != 3:
        raise ValueError(f"expected rows [x, y, r], got shape {rows.shape}")
    if np.any(rows[:, 2] < 0):
        raise ValueError(f"{int(np.sum(rows[:, 2] < 0))} negative radii")
    return rows


def _violators(rows: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """Boolean mask of circles that overlap another or leave ``box`` by more than the tolerance."""
    x, y, r = rows[:, 0], rows[:, 1], rows[:, 2]
    x0, y0, x1, y1 = box
    bad = (x - r < x0 - OVERLAP_TOL) | (x + r > x1 + OVERLAP_TOL)
    bad |= (y - r < y0 - OVERLAP_TOL) | (y + r > y1 + OVERLAP_TOL)
    dist = np.hypot(x[:, None] - x[None, :], y[:, None] - y[None, :])
    gap = dist - (r[:, None] + r[None, :])
    np.fill_diagonal(gap, np.inf)
    return bad | np.any(gap < -OVERLAP_TOL, axis=1)


def _draw_circles(fig: Figure, rows: np.ndarray, box: tuple[float, float, float, float],
                  heading: str) -> None:
    ax = fig.add_subplot(1, 1, 1)
    x0, y0, x1, y1 = box
    ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, lw=1.5, color="black"))
    bad = _violators(rows, box)
    patches = [Circle((cx, cy), cr) for cx, cy, cr in rows]
    coll = PatchCollection(patches, cmap="viridis", alpha=0.55, edgecolor="black", linewidth=0.6)
    coll.set_array(rows[:, 2])
    ax.add_collection(coll)
    if bad.any():
        ax.add_collection(PatchCollection([p for p, b in zip(patches, bad) if b], facecolor="none",
                                          edgecolor="red", linewidth=1.8))
    if len(rows) <= 64:
        for i, (cx, cy, _) in enumerate(rows):
            ax.text(cx, cy, str(i), ha="center", va="center", fontsize=6)
    pad = 0.03 * max(x1 - x0, y1 - y0)
    ax.set_xlim(min(x0, (rows[:, 0] - rows[:, 2]).min()) - pad, max(x1, (rows[:, 0] + rows[:, 2]).max()) + pad)
    ax.set_ylim(min(y0, (rows[:, 1] - rows[:, 2]).min()) - pad, max(y1, (rows[:, 1] + rows[:, 2]).max()) + pad)
    ax.set_aspect("equal")
    note = f"; {int(bad.sum())} circles violate the constraints (red)" if bad.any() else ""
    ax.set_title(f"{heading}\nn = {len(rows)}, sum of radii = {rows[:, 2].sum():.10g}{note}", fontsize=9)


def draw_circles(fig: Figure, obj: Any) -> None:
    _draw_circles(fig, _circle_rows(obj), (0.0, 0.0, 1.0, 1.0), "circles in the unit square")


def draw_circles_rect(fig: Figure, obj: Any) -> None:
    rows = _circle_rows(obj)
    x, y, r = rows[:, 0], rows[:, 1], rows[:, 2]
    if isinstance(obj, dict) and "width" in obj and "height" in obj:
        box = (0.0, 0.0, float(obj["width"]), float(obj["height"]))
    else:  # the tightest bounding box is the rectangle the score is judged by
        box = (float((x - r).min()), float((y - r).min()), float((x + r).max()), float((y + r).max()))
    w, h = box[2] - box[0], box[3] - box[1]
    _draw_circles(fig, rows, box, f"circles in a {w:.6g} x {h:.6g} rectangle (w + h = {w + h:.10g})")


def _points(obj: Any, dims: tuple[int, ...]) -> np.ndarray:
    pts = as_float_array(obj, "points")
    if pts.ndim != 2 or pts.shape[1] not in dims:
        raise ValueError(f"expected rows of {' or '.join(map(str, dims))} coordinates, got shape {pts.shape}")
    return pts


def _pair_extremes(pts: np.ndarray) -> tuple[tuple[int, int], float, tuple[int, int], float]:
    """Closest and farthest pairs (indices and distances)."""
    diff = pts[:, None, :] - pts[None, :, :]
    dist = np.sqrt(np.sum(diff * diff, axis=-1))
    iu = np.triu_indices(len(pts), 1)
    flat = dist[iu]
    lo, hi = int(np.argmin(flat)), int(np.argmax(flat))
    return (int(iu[0][lo]), int(iu[1][lo])), float(flat[lo]), (int(iu[0][hi]), int(iu[1][hi])), float(flat[hi])


def convex_hull(pts: np.ndarray) -> np.ndarray:
    """Andrew's monotone chain; returns hull vertices counter-clockwise (no scipy import)."""
    p = sorted(map(tuple, pts))
    if len(p) < 3:
        return np.asarray(p)

    def half(seq: list[tuple[float, float]]) -> list[tuple[float, float]]:
        out: list[tuple[float, float]] = []
        for q in seq:
            while len(out) >= 2 and ((out[-1][0] - out[-2][0]) * (q[1] - out[-2][1])
                                     - (out[-1][1] - out[-2][1]) * (q[0] - out[-2][0])) <= 0:
                out.pop()
            out.append(q)
        return out

    lower, upper = half(p), half(p[::-1])
    return np.asarray(lower[:-1] + upper[:-1])


def _polygon_area(poly: np.ndarray) -> float:
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def smallest_triangle(pts: np.ndarray) -> tuple[tuple[int, int, int], float] | None:
    n = len(pts)
    if n < 3 or n > MAX_TRIANGLE_POINTS:
        return None
    i, j, k = (idx.ravel() for idx in np.meshgrid(*(np.arange(n),) * 3, indexing="ij"))
    keep = (i < j) & (j < k)
    i, j, k = i[keep], j[keep], k[keep]
    a, b, c = pts[i], pts[j], pts[k]
    area = 0.5 * np.abs((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0]))
    m = int(np.argmin(area))
    return (int(i[m]), int(j[m]), int(k[m])), float(area[m])


def draw_points2d(fig: Figure, obj: Any) -> None:
    pts = _points(obj, (2,))
    ax = fig.add_subplot(1, 1, 1)
    lines = [f"{len(pts)} points in the plane"]
    if len(pts) >= 3:
        hull = convex_hull(pts)
        ax.add_patch(Polygon(hull, closed=True, fill=False, ls="--", color="gray", lw=1))
        found = smallest_triangle(pts)  # the Heilbronn (convex) objective, when cheap
        hull_area = _polygon_area(hull) if len(hull) >= 3 else 0.0
        if found is not None and hull_area > 0:
            (i, j, k), area = found
            ax.add_patch(Polygon(pts[[i, j, k]], closed=True, color="orange", alpha=0.35))
            lines.append(f"smallest triangle (orange) / hull area = {area / hull_area:.8g}")
    if 2 <= len(pts) <= 3000:
        (a, b), dmin, (c, d), dmax = _pair_extremes(pts)
        ax.plot(*pts[[a, b]].T, color="red", lw=2, label=f"closest {dmin:.6g}")
        ax.plot(*pts[[c, d]].T, color="blue", lw=1, ls=":", label=f"farthest {dmax:.6g}")
        if dmin > 0:
            lines.append(f"(d_max/d_min)^2 = {(dmax / dmin) ** 2:.10g}")
        ax.legend(loc="best", fontsize=7)
    ax.scatter(pts[:, 0], pts[:, 1], s=25, color="black", zorder=3)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_title("\n".join(lines), fontsize=9)


def draw_points3d(fig: Figure, obj: Any) -> None:
    pts = _points(obj, (3,))
    ax = fig.add_subplot(1, 1, 1, projection="3d")
    title = f"{len(pts)} points in R^3"
    if 2 <= len(pts) <= 3000:
        (a, b), dmin, (c, d), dmax = _pair_extremes(pts)
        ax.plot(*pts[[a, b]].T, color="red", lw=2)
        ax.plot(*pts[[c, d]].T, color="blue", lw=1, ls=":")
        if dmin > 0:
            title += f"\n(d_max/d_min)^2 = {(dmax / dmin) ** 2:.10g} (closest red, farthest blue)"
    ax.scatter(pts[:, 0], pts[:, 1], pts[:, 2], s=25, c=pts[:, 2], cmap="viridis", depthshade=True)
    ax.set_title(title, fontsize=9)


def draw_points_triangle(fig: Figure, obj: Any) -> None:
    pts = _points(obj, (2,))
    ax = fig.add_subplot(1, 1, 1)
    ax.add_patch(Polygon(TRIANGLE, closed=True, fill=False, color="black", lw=1.5))
    title = f"{len(pts)} points in the unit triangle"
    found = smallest_triangle(pts)
    if found is not None:
        (i, j, k), area = found
        ax.add_patch(Polygon(pts[[i, j, k]], closed=True, color="red", alpha=0.35))
        title += f"\nsmallest triangle (red) area / triangle area = {area / (math.sqrt(3) / 4):.8g}"
    ax.scatter(pts[:, 0], pts[:, 1], s=25, color="black", zorder=3)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_title(title, fontsize=9)


def draw_integer_vectors(fig: Figure, obj: Any) -> None:
    vecs = as_float_array(obj, "vectors")  # float is fine for a picture; the verifier is exact
    if vecs.ndim != 2 or vecs.shape[1] < 2:
        raise ValueError(f"expected rows of >= 2 coordinates, got shape {vecs.shape}")
    norm2 = np.sum(vecs * vecs, axis=1)
    centred = vecs - vecs.mean(axis=0)
    # PCA by SVD: rows of vt are the principal directions
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    proj = centred @ vt[:2].T
    ax = fig.add_subplot(1, 1, 1)
    spread = float(norm2.max() - norm2.min())
    if spread > 1e-9 * float(norm2.max()):
        sc = ax.scatter(proj[:, 0], proj[:, 1], s=8, c=(norm2 - norm2.min()) / spread, cmap="plasma")
        fig.colorbar(sc, ax=ax, label="(|x|^2 - min) / (max - min)")
    else:  # all on one sphere (a proper kissing configuration): nothing to colour by
        ax.scatter(proj[:, 0], proj[:, 1], s=8, color="tab:purple")
    title = f"{len(vecs)} vectors in dimension {vecs.shape[1]} (2-D PCA projection)"
    if 2 <= len(vecs) <= 3000:
        gram = vecs @ vecs.T
        d2 = norm2[:, None] + norm2[None, :] - 2 * gram
        np.fill_diagonal(d2, np.inf)
        title += f"\nmin |x-y|^2 / max |x|^2 ~ {d2.min() / max(norm2.max(), 1e-300):.12g} (needs >= 1)"
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_title(title, fontsize=9)
