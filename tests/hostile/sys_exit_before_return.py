# expect: crash
import sys


def solve():
    sys.exit(0)
