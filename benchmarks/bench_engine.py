"""Engine overhead: children per second through the whole loop, with a zero-latency backend
and a trivial task, so that everything measured is evoforge itself (prompting, parsing,
early checks, sandbox round trips, verification, SQLite writes, selection).

    python benchmarks/bench_engine.py [--budget 2000] [--workers 2]
"""
from __future__ import annotations

import argparse
import tempfile
import time

from evoforge.engine import Engine, build_config
from evoforge.llm.base import Backend, GenerationConfig, Prompt, Response
from evoforge.tasks.base import Direction, Task, Verdict

PROGRAM = "def solve():\n    x = 1\n    return [x]\n"


class CountingBackend(Backend):
    """Zero latency: every response sets x to a fresh integer, so every child is new and valid."""

    name = "zero-latency"

    def __init__(self) -> None:
        self.counter = 1

    def generate(self, prompts: list[Prompt], cfg: GenerationConfig) -> list[list[Response]]:
        out = []
        for p in prompts:
            line = next(l for l in p.parent_code.splitlines() if l.strip().startswith("x = "))
            group = []
            for _ in range(cfg.n):
                self.counter += 1
                group.append(Response(f"<<<<<<< SEARCH\n{line}\n=======\n    x = {self.counter}\n>>>>>>> REPLACE\n"))
            out.append(group)
        return out


def trivial_task() -> Task:
    return Task(name="trivial", description="Return [x]; larger x is better.", initial_program=PROGRAM,
                direction=Direction.MAX, verify=lambda o: Verdict.accept(float(o[0])), time_limit=10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("-B", type=int, default=32)
    ap.add_argument("-n", type=int, default=16)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        cfg = build_config(task="trivial", budget=args.budget, workers=args.workers, batch_size=args.B, n=args.n,
                           picture_interval=1e9)
        engine = Engine(cfg, d, task=trivial_task(), backend=CountingBackend())
        t0 = time.perf_counter()
        s = engine.run()
        dt = time.perf_counter() - t0
    print(f"trivial task, zero-latency backend, B={args.B} n={args.n}, {args.workers} workers")
    print(f"  children {s['children']}, evaluations {s['evaluated']}, wall {dt:.2f} s")
    print(f"  children/s {s['children'] / dt:.1f}")


if __name__ == "__main__":
    main()
