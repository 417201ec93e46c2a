# expect: killed
import ctypes


def solve():
    return ctypes.string_at(1, 64)  # reading address 1: SIGSEGV
