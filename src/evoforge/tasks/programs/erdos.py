# Naive initial program for Erdős' minimum overlap problem: a step function h on 200 steps of
# [0, 2] with 0 <= h <= 1 and sum(h) = n/2, a constant 1/2 with a small cosine ripple.
import numpy as np


# EVOLVE-BLOCK-START
def construct_function():
    n = 200
    t = (np.arange(n) + 0.5) / n
    h = 0.5 + 0.2 * np.cos(2 * np.pi * t)  # the ripple sums to zero over a full period
    h = np.clip(h, 0.0, 1.0)
    return h * (n / 2) / np.sum(h)  # enforce sum(h) = n/2 (it is already, up to rounding)
# EVOLVE-BLOCK-END


def solve():
    """Return the step values h_0..h_{n-1} in [0, 1] with sum n/2 (a list of floats)."""
    return np.asarray(construct_function(), dtype=float).tolist()
