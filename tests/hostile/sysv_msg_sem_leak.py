# expect: ok
# needs: ipc
# A message queue (holding a message) and a semaphore set left behind under fixed keys.
import ctypes

libc = ctypes.CDLL(None, use_errno=True)


def solve():
    q = libc.msgget(0x5EC12E8, 0o1666)
    msg = ctypes.create_string_buffer(b"\x01\x00\x00\x00\x00\x00\x00\x00secret", 64)
    libc.msgsnd(q, msg, 6, 0)
    s = libc.semget(0x5EC12E9, 4, 0o1666)
    return [q, s]
