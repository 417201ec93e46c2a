# expect: crash
# needs: signals
import os


def host_pid():
    with open(f"/proc/{os.getppid()}/status") as f:
        return int(next(line for line in f if line.startswith("PPid:")).split()[1])


def solve():
    os.killpg(os.getpgid(os.getppid()), 9)  # the zygote's group
    os.kill(host_pid(), 9)  # the host
    return 1
