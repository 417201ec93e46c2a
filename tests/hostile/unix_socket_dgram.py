# expect: crash
# needs: seccomp
# The same through a datagram socket and an abstract-namespace address.
import socket


def solve():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"escaped", "\0evoforge-hostile")
    s.sendto(b"escaped", "UNIXPATH")
    return 1
