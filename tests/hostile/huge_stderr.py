# expect: ok
import os


def solve():
    block = b"e" * (1 << 20)
    for _ in range(100):  # 100 MB straight to the fd
        os.write(2, block)
    return 1
