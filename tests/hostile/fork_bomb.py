# expect: crash|killed|timeout
# RLIMIT_NPROC (own uid) or the watchdog bounds it; whether its own fork fails first or the deadline comes is a race
import os


def solve():
    while True:
        os.fork()
