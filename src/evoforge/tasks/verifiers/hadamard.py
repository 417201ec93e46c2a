"""Maximal determinant of an N x N matrix with entries +-1, scored with an exact integer
(fraction-free Bareiss) determinant: no floating-point determinant is ever trusted."""
from __future__ import annotations

from typing import Any

import numpy as np

from evoforge.tasks.base import Verdict
from evoforge.tasks.verifiers.objects import ObjectError, real_array, unwrap, verifier

# ThetaEvolve's normaliser for N = 29 ("following previous work"): |det| / (2^28 * 7^12 * 342).
# The best known |det| is 2^28 * 7^12 * 320 (Orrick et al.), i.e. a score of 320/342.
HADAMARD29_NORMALISER = 2**28 * 7**12 * 342


def bareiss_det(rows: list[list[int]]) -> int:
    """Exact determinant of an integer matrix (Bareiss fraction-free elimination, O(n^3))."""
    m = [list(r) for r in rows]
    n = len(m)
    sign, prev = 1, 1
    for k in range(n - 1):
        if m[k][k] == 0:  # pivot: swap in a row with a non-zero entry in column k
            swap = next((i for i in range(k + 1, n) if m[i][k] != 0), None)
            if swap is None:
                return 0
            m[k], m[swap] = m[swap], m[k]
            sign = -sign
        pivot = m[k][k]
        row_k = m[k]
        for i in range(k + 1, n):
            row_i, mik = m[i], m[i][k]
            for j in range(k + 1, n):
                row_i[j] = (row_i[j] * pivot - mik * row_k[j]) // prev
        prev = pivot
    return sign * m[n - 1][n - 1] if n else 1


def read_sign_matrix(obj: Any, n: int) -> list[list[int]]:
    arr = real_array(unwrap(obj), "matrix")
    if arr.shape != (n, n):
        raise ObjectError(f"matrix: expected shape ({n}, {n}), got {arr.shape}")
    bad = np.argwhere((arr != 1.0) & (arr != -1.0))
    if bad.size:
        i, j = (int(v) for v in bad[0])
        raise ObjectError(f"matrix entry ({i}, {j}) is {arr[i, j]:g}; every entry must be exactly +1 or -1")
    return arr.astype(np.int64).tolist()


@verifier
def verify_hadamard(obj: Any, n: int = 29, normaliser: int = HADAMARD29_NORMALISER) -> Verdict:
    rows = read_sign_matrix(obj, n)
    det = abs(bareiss_det(rows))
    return Verdict.accept(
        det / normaliser,
        n=n,
        abs_det=str(det),  # exact; too large for a float-free JSON int in some readers
        ratio_to_hadamard_bound=det / n ** (n / 2),
    )
