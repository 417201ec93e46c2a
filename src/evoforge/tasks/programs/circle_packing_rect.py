# Naive initial program for circles in a rectangle of perimeter 4: a 5 x 5 grid of centres in
# the unit square (width + height = 2), keep 21, grow radii until they touch.
import numpy as np

N = 21  # number of circles (task parameter)


# EVOLVE-BLOCK-START
def construct_packing():
    width, height = 1.0, 1.0  # any width + height <= 2 is allowed
    xs, ys = np.meshgrid(np.linspace(0.1, 0.9, 5) * width, np.linspace(0.1, 0.9, 5) * height)
    centers = np.column_stack([xs.ravel(), ys.ravel()])[:N]
    radii = np.array([min(x, y, width - x, height - y) for x, y in centers])
    for i in range(N):
        for j in range(i + 1, N):
            dist = np.linalg.norm(centers[i] - centers[j])
            if radii[i] + radii[j] > dist:
                scale = dist / (radii[i] + radii[j])
                radii[i] *= scale
                radii[j] *= scale
    radii *= 1 - 1e-12  # keep tangent circles strictly disjoint despite rounding
    return centers, radii, width, height
# EVOLVE-BLOCK-END


def solve():
    """Return {"circles": rows [x, y, r], "width": w, "height": h}."""
    centers, radii, width, height = construct_packing()
    return {"circles": np.column_stack([centers, radii]).tolist(), "width": width, "height": height}
