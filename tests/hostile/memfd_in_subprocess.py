# expect: memory|killed|ok
# needs: cgroup
# timeout: 20
# A forked helper fills a memfd while the main process waits: the cgroup counts both.
import os


def solve():
    pid = os.fork()
    if pid == 0:
        chunk = b"\1" * (16 << 20)
        for i in range(128):  # 2 GB in files of 240 MB (RLIMIT_FSIZE caps each file, not their number)
            if i % 15 == 0:
                fd = os.memfd_create("bomb")
            os.write(fd, chunk)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status == 0:
        raise RuntimeError("2 GB of memfd were allowed")
    return status
