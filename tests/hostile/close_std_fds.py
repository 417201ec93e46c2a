# expect: ok
import os


def solve():
    os.close(0)
    os.close(1)
    os.close(2)
    return 7
