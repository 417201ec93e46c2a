# expect: timeout
import time


def solve():
    time.sleep(60)
