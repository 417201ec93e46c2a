"""Net capture: our own heuristic-contest problem in the spirit of AtCoder's ahc039 (not AtCoder's).

Statement (ours). On the square [0, 100000]^2 lie N target points and N penalty points (integer
coordinates, all distinct). Output a net: a simple rectilinear polygon (edges alternately
horizontal and vertical, integer vertices inside the square, 4..1000 vertices, perimeter at
most 400000, no edge touching a non-adjacent edge). A point strictly inside or on the boundary is
captured. Case score = max(0, a - b) / N with a targets and b penalty points captured; the task
score is the mean over the fixed seeds, a failed case (compile error, crash, time or memory
limit, malformed output) scoring 0 as in ALE-Bench.

Input (stdin): ``N``, then N lines ``x y`` of targets, then N lines of penalty points.
Output (stdout): ``m``, then m lines ``x y``, the vertices in order (either orientation).

The generator (clustered targets, clustered + uniform penalty points), the limits and the score
normalisation are ours; AHC039's official tester, inputs and scores are not used and scores are
not comparable. Everything here is pure numpy/stdlib, deterministic in the seed.
"""
from __future__ import annotations

import numpy as np

L = 100_000
N_POINTS = 2000
MAX_VERTICES = 1000
MAX_PERIMETER = 400_000


def generate(seed: int, n: int = N_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(targets, penalties), each (n, 2) int64, all 2n points distinct."""
    rng = np.random.default_rng([39, seed])
    pts: list[np.ndarray] = []
    seen: set[tuple[int, int]] = set()

    def cloud(count: int, clusters: int, uniform_frac: float) -> np.ndarray:
        centres = rng.uniform(0.1 * L, 0.9 * L, size=(clusters, 2))
        sigmas = rng.uniform(0.02 * L, 0.08 * L, size=clusters)
        out: list[tuple[int, int]] = []
        while len(out) < count:  # drawn in bulk; duplicates (rare) are dropped in order
            k = rng.integers(clusters, size=2 * count)
            p = rng.normal(centres[k], sigmas[k][:, None])
            uni = rng.random(2 * count) < uniform_frac
            p[uni] = rng.uniform(0, L, size=(int(uni.sum()), 2))
            for q in map(tuple, np.clip(np.rint(p), 0, L).astype(np.int64).tolist()):
                if q not in seen and len(out) < count:
                    seen.add(q)
                    out.append(q)
        return np.array(out, dtype=np.int64)

    pts.append(cloud(n, int(rng.integers(3, 9)), 0.05))
    pts.append(cloud(n, int(rng.integers(3, 9)), 0.3))
    return pts[0], pts[1]


def input_text(seed: int) -> str:
    t, p = generate(seed)
    rows = [str(len(t))] + [f"{x} {y}" for x, y in t] + [f"{x} {y}" for x, y in p]
    return "\n".join(rows) + "\n"


def parse_output(text: str) -> np.ndarray:
    """The polygon's vertices as (m, 2) int64; raises ValueError with a short reason."""
    tokens = text.split()
    if not tokens:
        raise ValueError("empty output")
    try:
        m = int(tokens[0])
        vals = [int(t) for t in tokens[1 : 1 + 2 * m]]
    except ValueError:
        raise ValueError("output is not integers: expected m, then m lines 'x y'") from None
    if not 4 <= m <= MAX_VERTICES:
        raise ValueError(f"m = {m} vertices, need 4..{MAX_VERTICES}")
    if len(vals) != 2 * m:
        raise ValueError(f"m = {m} but only {len(vals) // 2} vertices given")
    if len(tokens) > 1 + 2 * m:
        raise ValueError(f"{len(tokens) - 1 - 2 * m} extra tokens after the {m} vertices")
    return np.array(vals, dtype=np.int64).reshape(m, 2)


def check_polygon(v: np.ndarray) -> str:
    """'' when v is a valid net, else the first reason it is not."""
    if v.min() < 0 or v.max() > L:
        return f"a vertex lies outside [0, {L}]^2"
    m = len(v)
    if m % 2:
        return f"a rectilinear polygon has an even number of vertices, got {m}"
    w = np.roll(v, -1, axis=0)
    dx, dy = w[:, 0] - v[:, 0], w[:, 1] - v[:, 1]
    if np.any((dx != 0) & (dy != 0)):
        i = int(np.flatnonzero((dx != 0) & (dy != 0))[0])
        return f"edge {i} ({v[i].tolist()} -> {w[i].tolist()}) is not horizontal or vertical"
    if np.any((dx == 0) & (dy == 0)):
        return "two consecutive vertices coincide"
    horiz = dy == 0
    if np.any(horiz == np.roll(horiz, -1)):
        return "consecutive edges must alternate horizontal/vertical (no straight or reversed turns)"
    perim = int(np.abs(dx).sum() + np.abs(dy).sum())
    if perim > MAX_PERIMETER:
        return f"perimeter {perim} exceeds {MAX_PERIMETER}"
    idx = np.arange(m)
    h, vv = idx[horiz], idx[~horiz]
    hx1, hx2 = np.minimum(v[h, 0], w[h, 0]), np.maximum(v[h, 0], w[h, 0])
    hy = v[h, 1]
    vx = v[vv, 0]
    vy1, vy2 = np.minimum(v[vv, 1], w[vv, 1]), np.maximum(v[vv, 1], w[vv, 1])
    hit = (hx1[:, None] <= vx[None, :]) & (vx[None, :] <= hx2[:, None]) & (vy1[None, :] <= hy[:, None]) & (hy[:, None] <= vy2[None, :])
    gap = np.abs(h[:, None] - vv[None, :])
    adjacent = (gap == 1) | (gap == m - 1)
    if np.any(hit & ~adjacent):
        return "the polygon is not simple (two non-adjacent edges touch or cross)"
    for a1, a2, c in ((hx1, hx2, hy), (vy1, vy2, vx)):  # parallel edges on one line must not overlap or touch
        same = (c[:, None] == c[None, :]) & (a1[:, None] <= a2[None, :]) & (a1[None, :] <= a2[:, None])
        np.fill_diagonal(same, False)
        if np.any(same):
            return "the polygon is not simple (two parallel edges overlap or touch)"
    return ""


def captured(v: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Boolean mask: points inside or on the boundary of the simple rectilinear polygon v."""
    w = np.roll(v, -1, axis=0)
    px, py = pts[:, 0][:, None], pts[:, 1][:, None]
    vert = v[:, 0] == w[:, 0]
    x = v[vert, 0][None, :]
    y1, y2 = np.minimum(v[vert, 1], w[vert, 1])[None, :], np.maximum(v[vert, 1], w[vert, 1])[None, :]
    inside = ((x > px) & (y1 <= py) & (py < y2)).sum(axis=1) % 2 == 1
    on_v = ((x == px) & (y1 <= py) & (py <= y2)).any(axis=1)
    hy = v[~vert, 1][None, :]
    x1, x2 = np.minimum(v[~vert, 0], w[~vert, 0])[None, :], np.maximum(v[~vert, 0], w[~vert, 0])[None, :]
    on_h = ((hy == py) & (x1 <= px) & (px <= x2)).any(axis=1)
    return inside | on_v | on_h


def score_case(seed: int, output: str) -> tuple[float, str, dict]:
    """(case score in [0, 1], '' or why the output is invalid, details)."""
    try:
        v = parse_output(output)
    except ValueError as exc:
        return 0.0, f"wrong answer: {exc}", {}
    why = check_polygon(v)
    if why:
        return 0.0, f"wrong answer: {why}", {}
    t, p = generate(seed)
    a, b = int(captured(v, t).sum()), int(captured(v, p).sum())
    return max(0, a - b) / len(t), "", {"targets": a, "penalties": b, "vertices": len(v)}
