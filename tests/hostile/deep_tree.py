# expect: ok
# timeout: 20
# A tree deeper than Python's recursion limit: the host's cleanup must not recurse (shutil.rmtree did).
import os


def solve():
    for _ in range(1200):
        os.mkdir("d")
        os.chdir("d")
    return 1
