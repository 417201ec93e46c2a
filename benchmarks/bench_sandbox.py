"""Sandbox cost: per-evaluation overhead of the warm pool vs a fresh `python -c`, pool throughput,
and the CPU time one evaluation costs (host + zygotes + children: the figure that holds on a busy
machine, and the one that bounds throughput: cores / CPU-per-eval).

Run:  python3 benchmarks/bench_sandbox.py [--n 200] [--hardening-only] [--before REV]
Prints a small table; nothing is asserted (speed goals are read, not tested).

The hardening rows (issue 9) compare, interleaved in one run, a pool with the per-evaluation
confinement (IPC namespace, seccomp, memory cgroup) and one with it switched off
(``SandboxPool(harden=False)``; the clean template every child is forked from stays on in both).
``--before REV`` also measures the sandbox of git revision REV (e.g. the commit before the
hardening, without the template) in a subprocess, for the whole before/after figure.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from evoforge.sandbox import EvalRequest, SandboxPool

TRIVIAL = "import numpy as np\n\ndef solve():\n    return float(np.float64(1.0))\n"
SCIPY = "import numpy as np\nfrom scipy.optimize import minimize\n\ndef solve():\n    return float(np.float64(1.0))\n"
# about 20-30 ms of single-threaded numpy work: the kind of program the search evaluates
WORK = (
    "import numpy as np\n\ndef solve():\n    rng = np.random.default_rng(0)\n    a = rng.random((300, 300))\n"
    "    for _ in range(6):\n        a = a @ a\n        a /= np.abs(a).max()\n    return float(a.sum())\n"
)


def fresh_interpreter(imports: str, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"{imports}; print(1)"], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def sequential(pool: SandboxPool, code: str, n: int) -> tuple[list[float], list[float]]:
    """Sorted host round trips per evaluation, and sorted wall times the zygote measured (fork to exit)."""
    host, child = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        res = pool.run_many([EvalRequest(code=code, timeout=30)])[0]
        host.append(time.perf_counter() - t0)
        child.append(res.wall_time)
        assert res.status.value == "ok", res.error
    return sorted(host), sorted(child)


def spread(xs: list[float]) -> str:
    """min / median / p90 in ms: the minimum is the cost on an idle machine, the median what you get."""
    return f"{xs[0] * 1e3:6.1f} / {statistics.median(xs) * 1e3:6.1f} / {xs[int(len(xs) * 0.9)] * 1e3:6.1f} ms"


def _cpu_of(pid: int) -> float:
    """utime+stime of a process and its reaped children, in seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _sandbox_pids(pool: SandboxPool) -> list[int]:
    """Zygotes and their templates (children are forked, and reaped, by the template: its CPU counts them)."""
    return pool.zygote_pids() + [s.hello["template"] for s in pool.slots if s.hello.get("template")]


def throughput(workers: int, code: str, n: int, **pool_options: object) -> tuple[float, float]:
    """(evaluations per second, CPU milliseconds per evaluation over host, zygotes and children)."""
    with SandboxPool(workers=workers, **pool_options) as pool:  # type: ignore[arg-type]
        pool.run_many([EvalRequest(code=code)] * workers * 2)  # warm up (and make on-demand modules warm)
        zygotes = _sandbox_pids(pool)
        cpu0 = sum(_cpu_of(p) for p in zygotes) + time.process_time()
        t0 = time.perf_counter()
        res = pool.run_many([EvalRequest(code=code, timeout=60) for _ in range(n)])
        elapsed = time.perf_counter() - t0
        cpu = sum(_cpu_of(p) for p in zygotes) + time.process_time() - cpu0
    assert all(r.status.value == "ok" for r in res)
    return n / elapsed, cpu / n * 1e3


def hardening_rows(n: int, before: str | None) -> list[tuple[str, str]]:
    """Round trip and CPU per evaluation with the issue-9 confinement on and off, interleaved."""
    pools = {on: SandboxPool(workers=1, harden=on) for on in (True, False)}
    times: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, float] = {True: 0.0, False: 0.0}
    try:
        for p in pools.values():
            p.run_many([EvalRequest(code=TRIVIAL)] * 3)
        for _ in range(n):
            for on, p in pools.items():  # alternate: both see the same machine load
                zs = _sandbox_pids(p)
                c0 = sum(_cpu_of(z) for z in zs) + time.process_time()
                t0 = time.perf_counter()
                p.run_many([EvalRequest(code=TRIVIAL, timeout=30)])
                times[on].append(time.perf_counter() - t0)
                cpu[on] += sum(_cpu_of(z) for z in zs) + time.process_time() - c0
    finally:
        for p in pools.values():
            p.close()
    on, off = sorted(times[True]), sorted(times[False])
    rows = [("issue 9 confinement ON: trivial program, round trip", spread(on)),
            ("issue 9 confinement OFF (harden=False), round trip", spread(off)),
            ("  added cost per evaluation (min, median)",
             f"{(on[0] - off[0]) * 1e3:+6.2f} ms, {(statistics.median(on) - statistics.median(off)) * 1e3:+6.2f} ms;"
             f" ratio ON/OFF {on[0] / off[0]:.2f} (min), {statistics.median(on) / statistics.median(off):.2f} (median)"),
            ("  CPU per evaluation ON / OFF (host + zygote + children)",
             f"{cpu[True] / n * 1e3:5.2f} / {cpu[False] / n * 1e3:5.2f} ms")]
    if before:
        rows += _before_rows(before, n)
    return rows


_BEFORE = """
import json, os, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from evoforge.sandbox import EvalRequest, SandboxPool
code, n = sys.argv[2], int(sys.argv[3])
def cpu(pids):
    out = 0.0
    for pid in pids:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        out += sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")
    return out + time.process_time()
with SandboxPool(workers=1) as p:
    p.run_many([EvalRequest(code=code)] * 3)
    pids = p.zygote_pids() + [s.hello["template"] for s in p.slots if s.hello.get("template")]
    xs, c0 = [], cpu(pids)
    for _ in range(n):
        t0 = time.perf_counter()
        p.run_many([EvalRequest(code=code, timeout=30)])
        xs.append(time.perf_counter() - t0)
    c = (cpu(pids) - c0) / n
print(json.dumps([sorted(xs), c]))
"""


def _before_rows(rev: str, n: int) -> list[tuple[str, str]]:
    """The same round trip with the sandbox of git revision `rev` (extracted to a temporary folder)."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        archive = subprocess.run(["git", "archive", rev, "src"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", d], input=archive, check=True)
        out = subprocess.run([sys.executable, "-c", _BEFORE, os.path.join(d, "src"), TRIVIAL, str(n)],
                             check=True, capture_output=True, text=True).stdout
        old, old_cpu = json.loads(out.strip().splitlines()[-1])
        now = subprocess.run([sys.executable, "-c", _BEFORE, str(Path(__file__).resolve().parents[1] / "src"), TRIVIAL,
                              str(n)], check=True, capture_output=True, text=True).stdout  # the same script, this tree
        new, new_cpu = json.loads(now.strip().splitlines()[-1])
    return [(f"sandbox of {rev} (before issue 9), round trip", spread(old)),
            ("this sandbox, all confinement on, round trip", spread(new)),
            ("  ratio now / before (min, median)", f"{new[0] / old[0]:.2f}, {statistics.median(new) / statistics.median(old):.2f}"),
            ("  CPU per evaluation now / before", f"{new_cpu * 1e3:5.2f} / {old_cpu * 1e3:5.2f} ms")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200, help="evaluations per measurement")
    ap.add_argument("--hardening-only", action="store_true", help="only the issue-9 rows")
    ap.add_argument("--before", default=None, help="git revision whose sandbox to measure too (before/after)")
    args = ap.parse_args()
    n = args.n
    rows: list[tuple[str, str]] = []
    if args.hardening_only:
        rows = hardening_rows(n, args.before)
        width = max(len(k) for k, _ in rows)
        print(f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f} (other work inflates medians; mins and ratios hold)")
        for k, v in rows:
            print(f"{k:<{width}}  {v}")
        return
    rows.append(("fresh `python -c 'import numpy'` (median)", f"{fresh_interpreter('import numpy', 10) * 1e3:8.1f} ms"))
    rows.append(("fresh `python -c` numpy+scipy.optimize (median)", f"{fresh_interpreter('import numpy, scipy.optimize', 10) * 1e3:8.1f} ms"))
    t0 = time.perf_counter()
    with SandboxPool(workers=1) as pool:
        start = time.perf_counter() - t0
        pool.run_many([EvalRequest(code=TRIVIAL)])
        host, child = sequential(pool, TRIVIAL, n)
        work_host, work_child = sequential(pool, WORK, max(20, n // 10))
        features = pool.features
    rows.append(("pool start (1 worker, numpy and scipy on demand)", f"{start * 1e3:8.1f} ms"))
    rows.append(("trivial numpy program, host round trip (min/med/p90)", spread(host)))
    rows.append(("trivial numpy program, fork..exit in zygote (min/med/p90)", spread(child)))
    rows.append(("~25 ms numpy program, host round trip (min/med/p90)", spread(work_host)))
    rows.append(("~25 ms numpy program, fork..exit in zygote (min/med/p90)", spread(work_child)))
    for w in (1, 2):
        rate, cpu = throughput(w, TRIVIAL, n)
        rows.append((f"throughput, trivial program, {w} worker(s)", f"{rate:8.1f} evals/s, {cpu:5.2f} ms CPU/eval"))
    rate, cpu = throughput(2, TRIVIAL, n, eager=None)
    rows.append(("  same, 2 workers, scipy warm from the start (eager=None)", f"{rate:8.1f} evals/s, {cpu:5.2f} ms CPU/eval"))
    rate, cpu = throughput(2, SCIPY, n)
    rows.append(("  program importing scipy.optimize, 2 workers", f"{rate:8.1f} evals/s, {cpu:5.2f} ms CPU/eval"))
    for w in (1, 2):
        rate, cpu = throughput(w, WORK, max(20, n // 4))
        rows.append((f"throughput, ~25 ms program, {w} worker(s)", f"{rate:8.1f} evals/s, {cpu:5.2f} ms CPU/eval"))
    rows += hardening_rows(n, args.before)
    width = max(len(k) for k, _ in rows)
    print(f"sandbox: uid={features['uid']} network={features['network']} landlock_abi={features['landlock_abi']}; "
          f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f} (other work on the machine inflates medians)")
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
