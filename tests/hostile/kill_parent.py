# expect: crash
# needs: signals
import os


def solve():
    os.kill(os.getppid(), 9)
    return 1
