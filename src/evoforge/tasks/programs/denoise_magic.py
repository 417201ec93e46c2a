"""MAGIC-style diffusion denoising (van Dijk et al. 2018), in numpy: the starting point."""
import numpy as np

# EVOLVE-BLOCK-START
N_PCS = 20  # principal components for the cell graph
KNN = 5  # neighbour whose distance sets each cell's kernel width
T = 3  # diffusion steps


def denoise(X):
    X = np.asarray(X, dtype=float)
    lib = X.sum(axis=1, keepdims=True)
    lib[lib == 0] = 1.0
    scale = np.median(lib)
    S = np.sqrt(X / lib * scale)  # library-size normalisation, then sqrt
    C = S - S.mean(axis=0)
    U, s, _ = np.linalg.svd(C, full_matrices=False)
    pcs = U[:, :N_PCS] * s[:N_PCS]
    sq = (pcs * pcs).sum(axis=1)
    D = np.maximum(sq[:, None] + sq[None, :] - 2 * pcs @ pcs.T, 0.0)
    sigma = np.sqrt(np.sort(D, axis=1)[:, KNN]) + 1e-12
    K = np.exp(-D / (sigma[:, None] * sigma[None, :]))  # adaptive Gaussian kernel
    K = (K + K.T) / 2
    M = K / K.sum(axis=1, keepdims=True)  # Markov matrix
    Y = np.linalg.matrix_power(M, T) @ S
    return Y**2 / scale * lib  # back to counts
# EVOLVE-BLOCK-END
