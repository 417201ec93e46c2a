# expect: crash
import os


def solve():
    os._exit(0)
