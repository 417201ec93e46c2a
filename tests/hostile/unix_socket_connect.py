# expect: crash
# needs: seccomp
# A world-writable UNIX pathname socket on the host (UNIXPATH is the test's listener).
import socket


def solve():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("UNIXPATH")
    s.sendall(b"escaped")
    return 1
