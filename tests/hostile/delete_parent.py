# expect: crash
# needs: write-parent
import os
import shutil


def solve():
    for name in os.listdir(".."):
        pass
    shutil.rmtree("..")
    return 1
