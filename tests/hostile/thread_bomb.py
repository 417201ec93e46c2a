# expect: crash|memory|killed
import threading
import time


def solve():
    while True:
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
