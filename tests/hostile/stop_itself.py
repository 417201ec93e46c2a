# expect: timeout
import os
import signal


def solve():
    os.kill(os.getpid(), signal.SIGSTOP)
    return 1
