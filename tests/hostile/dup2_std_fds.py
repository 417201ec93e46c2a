# expect: ok
import os


def solve():
    fd = os.open("sink.txt", os.O_WRONLY | os.O_CREAT)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    print("hidden")
    return 8
