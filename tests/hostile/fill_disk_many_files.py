# expect: crash|memory|killed
# timeout: 20
# RLIMIT_FSIZE caps one file, not their number: 40 files of 200 MB. The run directory is a
# size-capped tmpfs counted by the memory cgroup (root), so this ends in ENOSPC or the memory
# limit, never in a full host disk.
def solve():
    block = b"\1" * (1 << 20)
    for i in range(40):
        with open(f"f{i}.bin", "wb") as f:
            for _ in range(200):
                f.write(block)
    return 1
