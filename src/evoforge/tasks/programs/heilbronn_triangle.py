# Naive initial program for Heilbronn's problem in the unit equilateral triangle: N points
# drawn at random (fixed seed) inside the triangle (0,0), (1,0), (1/2, sqrt(3)/2).
import numpy as np

N = 11  # number of points (task parameter)


# EVOLVE-BLOCK-START
def construct_points():
    rng = np.random.default_rng(0)
    u, v = rng.random(N), rng.random(N)
    flip = u + v > 1  # fold the unit square onto the triangle
    u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
    a, b = np.array([1.0, 0.0]), np.array([0.5, np.sqrt(3) / 2])
    return u[:, None] * a + v[:, None] * b
# EVOLVE-BLOCK-END


def solve():
    """Return N points [x, y] inside the triangle."""
    return np.asarray(construct_points(), dtype=float).tolist()
