"""Verifier speed on the published constructions and the shipped initial programs.

    python3 benchmarks/bench_tasks_verifiers.py [--all]   (--all adds the 54265-element sums set)

Prints one line per file: task, size, best-of-3 verification time. No assertions: figures only.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from evoforge.tasks import builtin_names, get_task, run_in_process
from evoforge.tasks.verifiers.autocorr import ac1_value

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "tests" / "data" / "reference"
SLOW = {"sumdiff__alphaevolve_U2.json"}  # ~16 s: only with --all


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_tasks_reference import _task_name  # the file -> task mapping of the tests

    print(f"{'reference file':48s} {'task':26s} {'size':>7s} {'verify':>10s}")
    for f in sorted(REF.glob("*.json")):
        if f.name in SLOW and "--all" not in sys.argv:
            continue
        ref = json.loads(f.read_text())
        if ref["task"] == "circle_packing_unit_square":
            name = f"circle-packing-{ref['variant']['n']}"
        elif ref["task"] == "hadamard_maxdet" and ref["variant"]["n"] != 29:
            continue
        else:
            name = _task_name(ref)
        task = get_task(name)
        data = ref["data"]
        size = len(data["circles"]) if isinstance(data, dict) else len(data)
        dt = best_of(lambda: task.verify(data), 1 if f.name in SLOW else 3)
        print(f"{f.name:48s} {name:26s} {size:7d} {dt * 1e3:8.2f} ms")
    print()
    print(f"{'initial program (in-process run + verify)':48s} {'':26s} {'':7s} {'time':>10s}")
    for name in builtin_names():
        task = get_task(name)
        print(f"{name:48s} {'':26s} {'':7s} {best_of(lambda: run_in_process(task), 1) * 1e3:8.1f} ms")
    print()
    rng = np.random.default_rng(0)
    for n in (1_000, 10_000, 100_000, 1_000_000):
        a = rng.random(n)
        print(f"AC1 bound on {n:>9,d} random steps (FFT above 2048): {best_of(lambda: ac1_value(a)) * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
