# expect: killed
import os


def solve():
    os.kill(os.getpid(), 9)
