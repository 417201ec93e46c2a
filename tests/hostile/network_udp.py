# expect: crash
# needs: net-udp
import socket


def solve():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"escaped", ("127.0.0.1", PORT))
    s.connect(("8.8.8.8", 53))
    return 1
