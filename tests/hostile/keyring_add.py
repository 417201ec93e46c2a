# expect: crash
# needs: seccomp
# Kernel keys outlive a process and are shared by a uid's processes: add_key must be refused.
import ctypes

libc = ctypes.CDLL(None, use_errno=True)


def solve():
    r = libc.syscall(248, b"user", b"evoforge-hostile", b"secret", 6, -4)  # add_key(..., KEY_SPEC_USER_KEYRING)
    if r < 0:
        raise OSError(ctypes.get_errno(), "add_key refused")
    return r
