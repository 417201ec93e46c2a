# Naive initial program for circle packing, strict variant (no tolerance): the rings of
# OpenEvolve's / ThetaEvolve's start, radii grown until they touch, then shrunk by 1e-12
# (relative) so that float rounding cannot leave two tangent circles overlapping.
import numpy as np

N = 26  # number of circles (task parameter)


# EVOLVE-BLOCK-START
def construct_packing():
    centers = np.zeros((N, 2))
    centers[0] = [0.5, 0.5]
    for i in range(8):
        angle = 2 * np.pi * i / 8
        centers[i + 1] = [0.5 + 0.3 * np.cos(angle), 0.5 + 0.3 * np.sin(angle)]
    for i in range(16):
        angle = 2 * np.pi * i / 16
        centers[i + 9] = [0.5 + 0.7 * np.cos(angle), 0.5 + 0.7 * np.sin(angle)]
    centers = np.clip(centers, 0.01, 0.99)  # circles beyond the rings start in a corner
    radii = compute_max_radii(centers)
    return centers, radii


def compute_max_radii(centers):
    n = centers.shape[0]
    radii = np.ones(n)
    for i in range(n):
        x, y = centers[i]
        radii[i] = min(x, y, 1 - x, 1 - y)
    for i in range(n):
        for j in range(i + 1, n):
            dist = np.sqrt(np.sum((centers[i] - centers[j]) ** 2))
            if radii[i] + radii[j] > dist:
                scale = dist / (radii[i] + radii[j])
                radii[i] *= scale
                radii[j] *= scale
    return radii * (1 - 1e-12)
# EVOLVE-BLOCK-END


def solve():
    """Return the packing as an array of rows [x, y, r]."""
    centers, radii = construct_packing()
    return np.column_stack([centers, radii])
