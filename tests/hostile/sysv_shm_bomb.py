# expect: memory|killed
# needs: cgroup, ipc
# timeout: 20
# Shared memory touched and detached segment by segment (so RLIMIT_AS never sees it): 2 GB held in
# the kernel. Counted by the cgroup, freed with the IPC namespace.
import ctypes

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]


def solve():
    for _ in range(16):
        shmid = libc.shmget(0, 128 << 20, 0o1600)
        if shmid < 0:
            raise OSError(ctypes.get_errno(), "shmget")
        addr = libc.shmat(shmid, None, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "shmat")
        ctypes.memset(addr, 1, 128 << 20)
        libc.shmdt(addr)
    return 1
