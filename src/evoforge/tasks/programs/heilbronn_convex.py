# Naive initial program for Heilbronn's problem in a convex region: N points at random
# (fixed seed) in the unit square; the score divides by the area of their convex hull.
import numpy as np

N = 13  # number of points (task parameter)


# EVOLVE-BLOCK-START
def construct_points():
    rng = np.random.default_rng(0)
    return rng.random((N, 2))
# EVOLVE-BLOCK-END


def solve():
    """Return N points [x, y] (any position and scale)."""
    return np.asarray(construct_points(), dtype=float).tolist()
