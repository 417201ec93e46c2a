# expect: ok
# timeout: 20
# Deep, with every level's permissions taken away and a path longer than PATH_MAX.
import os


def solve():
    name = "x" * 200
    for _ in range(1100):
        os.mkdir(name)
        os.chdir(name)
        open("f", "w").close()
    for _ in range(1100):
        os.chdir("..")
        os.chmod(name, 0)
    return 1
