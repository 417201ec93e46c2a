# expect: crash
# needs: net
import socket


def solve():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=1)
    s.sendall(b"escaped")
    return 1
