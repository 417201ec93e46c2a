# expect: crash
import os


def solve():
    keep = []
    while True:
        keep.append(os.open("/dev/null", os.O_RDONLY))
