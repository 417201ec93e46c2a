# expect: ok
# socketpair (no address, nothing outside) stays allowed: libraries use it between their own processes.
import socket


def solve():
    a, b = socket.socketpair()
    a.sendall(b"ping")
    return b.recv(4).decode()
