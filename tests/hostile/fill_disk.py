# expect: crash
# RLIMIT_FSIZE: Python ignores SIGXFSZ, so the write fails with EFBIG
def solve():
    block = b"\0" * (1 << 20)
    with open("big.bin", "wb") as f:
        for _ in range(1 << 12):  # 4 GB, past RLIMIT_FSIZE
            f.write(block)
    return 1
