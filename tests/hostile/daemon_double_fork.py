# expect: ok
import os
import time


def solve():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for fd in range(0, 64):
                try:
                    os.close(fd)
                except OSError:
                    pass
            time.sleep(300)
        os._exit(0)
    time.sleep(0.05)
    return 1
