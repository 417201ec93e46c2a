# expect: ok|killed
import os


def solve():
    try:
        os.kill(-1, 9)  # everything this uid may signal
    except OSError:
        pass
    return 1
