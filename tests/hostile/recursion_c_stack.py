# expect: killed|crash|memory
import sys


def f(n):
    return list(map(f, [n + 1]))  # every level goes through C: the C stack overflows


def solve():
    sys.setrecursionlimit(10**8)
    return f(0)
