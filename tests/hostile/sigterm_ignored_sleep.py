# expect: timeout
import signal
import time


def solve():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):
        signal.signal(sig, signal.SIG_IGN)
    while True:
        time.sleep(0.01)
