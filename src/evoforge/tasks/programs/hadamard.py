# Naive initial program for the maximal-determinant +-1 matrix of order 29 (ThetaEvolve's
# start matrix): the quadratic-residue circulant, entry +1 iff (i - j) mod 29 is a non-zero
# square mod 29, else -1. Its |det| = 2^28 * 7^14.
import numpy as np

N = 29  # matrix order (task parameter)


# EVOLVE-BLOCK-START
def construct_matrix():
    residues = {(k * k) % N for k in range(1, N)}
    m = np.empty((N, N), dtype=int)
    for i in range(N):
        for j in range(N):
            m[i, j] = 1 if (i - j) % N in residues else -1
    return m
# EVOLVE-BLOCK-END


def solve():
    """Return the N x N matrix as nested lists of +1/-1."""
    return np.asarray(construct_matrix(), dtype=int).tolist()
