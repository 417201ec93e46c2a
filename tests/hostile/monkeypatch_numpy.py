# expect: ok
import numpy as np


def solve():
    np.sum = lambda *a, **k: 1e9
    np.linalg.norm = lambda *a, **k: 0.0
    return float(np.sum([1, 2]))
