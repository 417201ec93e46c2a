# expect: crash
import os


def solve():
    os.write(3, b"\xff\xff\xff\xffgarbage")
    return 1
