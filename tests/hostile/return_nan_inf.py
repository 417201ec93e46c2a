# expect: ok
import numpy as np


def solve():
    return [float("nan"), float("inf"), -np.inf, np.float32("nan")]
