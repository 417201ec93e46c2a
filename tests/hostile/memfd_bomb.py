# expect: memory|killed
# needs: cgroup
# timeout: 20
# memfd pages are not address space: RLIMIT_AS lets 2 GB through, the memory cgroup does not.
import os


def solve():
    chunk = b"\1" * (16 << 20)
    for i in range(128):  # 2 GB in files of 240 MB (RLIMIT_FSIZE caps each file, not their number)
        if i % 15 == 0:
            fd = os.memfd_create("bomb")
        os.write(fd, chunk)
    return 1
