# expect: ok
import atexit
import threading
import time


def solve():
    atexit.register(lambda: time.sleep(100))
    threading.Thread(target=time.sleep, args=(100,)).start()  # not a daemon
    return 3
