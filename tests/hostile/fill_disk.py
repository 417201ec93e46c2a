# expect: crash
# timeout: 15
# RLIMIT_FSIZE: Python ignores SIGXFSZ, so the write fails with EFBIG. A longer limit: without
# the tmpfs (not root) the page cache may wait for writeback to a slow disk.
def solve():
    block = b"\0" * (1 << 20)
    with open("big.bin", "wb") as f:
        for _ in range(1 << 12):  # 4 GB, past RLIMIT_FSIZE
            f.write(block)
    return 1
