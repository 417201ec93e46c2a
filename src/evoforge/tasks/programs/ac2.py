# Naive initial program for the second autocorrelation inequality: a raised-cosine bump on
# 600 steps of [-1/4, 1/4]. Heights must be non-negative.
import numpy as np


# EVOLVE-BLOCK-START
def construct_function():
    n = 600
    x = np.linspace(-1.0, 1.0, n)
    return 1.0 + np.cos(np.pi * x)  # >= 0, zero at both ends
# EVOLVE-BLOCK-END


def solve():
    """Return the non-negative step heights a_0..a_{n-1} (a list of floats)."""
    return np.clip(np.asarray(construct_function(), dtype=float), 0.0, None).tolist()
