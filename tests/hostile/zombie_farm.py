# expect: ok
import os


def solve():
    for _ in range(20):
        if os.fork() == 0:
            os._exit(0)
    return 1
