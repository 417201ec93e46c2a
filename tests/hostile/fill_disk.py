# expect: crash
# timeout: 15
# RLIMIT_FSIZE: Python ignores SIGXFSZ, so the write fails with EFBIG. The page cache counts
# against the memory cgroup, so writing 256 MB waits for writeback: a longer limit.
def solve():
    block = b"\0" * (1 << 20)
    with open("big.bin", "wb") as f:
        for _ in range(1 << 12):  # 4 GB, past RLIMIT_FSIZE
            f.write(block)
    return 1
