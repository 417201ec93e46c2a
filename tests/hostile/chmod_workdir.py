# expect: ok
import os


def solve():
    os.makedirs("a/b/c")
    open("a/b/c/f", "w").close()
    os.chmod("a/b/c", 0)
    os.chmod("a", 0)
    os.chmod(".", 0o500)
    return 1
