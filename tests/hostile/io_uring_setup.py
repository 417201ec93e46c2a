# expect: crash
# needs: seccomp
# io_uring would run socket operations past the seccomp filter: refused.
import ctypes

libc = ctypes.CDLL(None, use_errno=True)


def solve():
    params = ctypes.create_string_buffer(120)
    fd = libc.syscall(425, 4, params)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "io_uring_setup refused")
    return fd
