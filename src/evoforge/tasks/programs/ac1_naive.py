# Naive initial program for the first autocorrelation inequality: a gentle ramp on 24 equal
# steps of [-1/4, 1/4], every height written out so that each can change (score 1.9794;
# a constant function scores 2). ThetaEvolve's 202-step start is the task ac1-paper.
import numpy as np


# EVOLVE-BLOCK-START
def construct_function():
    heights = [
        1.2, 1.18, 1.17, 1.15, 1.14, 1.12, 1.11, 1.09, 1.08, 1.06, 1.05, 1.03,
        1.02, 1.0, 0.99, 0.97, 0.96, 0.94, 0.93, 0.91, 0.9, 0.88, 0.87, 0.85,
    ]
    return np.maximum(np.asarray(heights, dtype=float), 0.0)  # heights must be >= 0
# EVOLVE-BLOCK-END


def solve():
    """Return the non-negative step heights a_0..a_{n-1} (a list of floats)."""
    return np.asarray(construct_function(), dtype=float).tolist()
