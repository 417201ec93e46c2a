# expect: crash
# max_result_bytes: 1000000
# timeout: 8
import numpy as np


def solve():
    return np.zeros(300_000)  # about 1.2 MB of JSON, over the 1 MB limit
