# expect: ok
import sys


def solve():
    line = "x" * 1023 + "\n"
    for _ in range(100_000):  # 100 MB
        sys.stdout.write(line)
    return 1
