# Naive initial program for the min/max distance ratio problem: the first N points of a
# cubic grid in dimension D.
import itertools

import numpy as np

N = 16  # number of points (task parameter)
D = 2  # dimension (task parameter)


# EVOLVE-BLOCK-START
def construct_points():
    side = int(np.ceil(N ** (1.0 / D)))
    grid = list(itertools.product(range(side), repeat=D))[:N]
    return np.array(grid, dtype=float)
# EVOLVE-BLOCK-END


def solve():
    """Return N points in R^D (a list of D-element lists)."""
    return np.asarray(construct_points(), dtype=float).tolist()
