# expect: ok|crash
# needs: ipc
# A POSIX message queue (lives in the IPC namespace's mqueue fs) left behind.
import ctypes
import ctypes.util


def solve():
    rt = ctypes.CDLL(ctypes.util.find_library("rt") or None, use_errno=True)
    q = rt.mq_open(b"/evoforge-hostile", 0o100 | 2, 0o666, None)  # O_CREAT | O_RDWR
    if q < 0:
        raise OSError(ctypes.get_errno(), "mq_open")
    rt.mq_send(q, b"secret", 6, 0)
    return q
