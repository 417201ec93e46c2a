"""The floor under fork-per-evaluation: CPU of one bare fork + _exit + waitpid of a Python process.

    python3 benchmarks/bench_fork_floor.py [--n 300]

Measured without and with numpy loaded (the sandbox zygote preloads it), GC frozen as in the
zygote. Every evoforge evaluation pays at least this much before its program runs; on 2 cores
it bounds the children per second any fork-per-child design can reach.
"""
from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import time

CHILD = r"""
import gc, os, sys, time
if sys.argv[1] == "numpy":
    import numpy  # noqa: F401
gc.freeze()
n = int(sys.argv[2])
t0, c0 = time.perf_counter(), os.times()
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
t1, c1 = time.perf_counter(), os.times()
cpu = c1.user + c1.system + c1.children_user + c1.children_system - (c0.user + c0.system + c0.children_user + c0.children_system)
rss = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmRSS"))
print(f"{sys.argv[1]:6s} wall {1000 * (t1 - t0) / n:.2f} ms  cpu {1000 * cpu / n:.2f} ms per fork  (parent RSS {int(rss) // 1024} MB)")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    args = ap.parse_args()
    gc.collect()
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    for what in ("bare", "numpy"):
        # a fresh interpreter per variant, so the parent's heap is only what is named
        subprocess.run([sys.executable, "-c", CHILD, what, str(args.n)], check=True,
                       env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})


if __name__ == "__main__":
    main()
