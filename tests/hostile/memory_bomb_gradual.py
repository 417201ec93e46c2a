# expect: memory
# timeout: 8
import numpy as np


def solve():
    hoard = []
    while True:
        hoard.append(np.ones(4_000_000))  # 32 MB at a time, touched
