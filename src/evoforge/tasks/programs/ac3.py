# Naive initial program for the third autocorrelation inequality (ThetaEvolve's start):
# a Gaussian bump with two oscillations on 400 steps of [-1/4, 1/4]. Heights may be negative.
import numpy as np


# EVOLVE-BLOCK-START
def construct_function():
    n = 400
    x = np.linspace(-0.25, 0.25, n)
    heights = np.exp(-(x**2) / (2 * 0.1**2))
    heights += 0.3 * np.cos(2 * np.pi * 8.0 * x)
    heights += 0.15 * np.sin(2 * np.pi * 16.0 * x)
    return heights * (25.0 / np.sum(heights))  # the scale does not change the score
# EVOLVE-BLOCK-END


def solve():
    """Return the step heights a_0..a_{n-1} (a list of floats)."""
    return np.asarray(construct_function(), dtype=float).tolist()
