# expect: crash
# max_result_bytes: 1000000
import numpy as np


def solve():
    return np.zeros(2_000_000)
