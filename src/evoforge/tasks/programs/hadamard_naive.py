# Naive initial program for the maximal-determinant +-1 matrix of order N: a circulant whose
# first row is +1 on the diagonal and -1 elsewhere (2I - J, |det| = 2^(N-1) * (N - 2)). Each
# entry of the row is a number whose parity gives its sign, so changing any one flips that
# sign; ThetaEvolve's quadratic-residue circulant (the task hadamard-29-paper) is one such row.
import numpy as np

N = 29  # matrix order (task parameter)


# EVOLVE-BLOCK-START
def construct_matrix():
    bits = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    row = [1 if b % 2 else -1 for b in np.resize(bits, N)]  # odd: +1, even: -1
    return np.array([[row[(j - i) % N] for j in range(N)] for i in range(N)])
# EVOLVE-BLOCK-END


def solve():
    """Return the N x N matrix as nested lists of +1/-1."""
    return np.asarray(construct_matrix(), dtype=int).tolist()
