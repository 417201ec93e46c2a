# expect: ok
# needs: ipc
# A SysV shared-memory segment left behind (with IPC_PRIVATE and a fixed key): it must die with the run.
import ctypes

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p


def solve():
    ids = []
    for key in (0, 0x5EC12E7):
        shmid = libc.shmget(key, 32 << 20, 0o1666)  # IPC_CREAT | 0666
        if shmid < 0:
            raise OSError(ctypes.get_errno(), "shmget")
        addr = libc.shmat(shmid, None, 0)
        ctypes.memset(addr, 1, 32 << 20)  # resident
        ids.append(shmid)
    return ids
