"""Per-child cost of the selectors (insert + sample + observe) at 1k, 10k and 100k programs.

    python3 benchmarks/bench_database.py                 # 1000 10000 100000, every selector
    python3 benchmarks/bench_database.py --sizes 1000 --selectors puct map-elites

For each selector and size N, N programs are first pushed through the engine's loop (model
free: children get the parent's fitness plus noise, 80 % valid; 20-120 line programs). Then
``--steps`` further steps are timed for each batch shape B x n in turn, counting only the
process CPU time spent inside the selector (so a busy machine does not inflate the figures).
Map-elites gets ``population_size = N`` so that its population really holds N programs
(archive 1000, 10 islands: the "large" shape); the other selectors keep their bounded
archives or pools, so for them N is the number of programs they have seen. Columns:
  held             programs (map-elites: entries) the selector holds after the timed steps
  add us/child     mean time of one add()
  sample us/pick   mean time of sample(B) / B, migration excluded
  migr. us/child   map-elites: time spent migrating / children (amortised)
  us/child         (sample + add + observe) / children: the figure to hold under 100
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import evoforge.selectors  # noqa: E402,F401
from evoforge.database.base import SELECTORS, Selector  # noqa: E402
from evoforge.database.simulate import World, run_steps, seed_program  # noqa: E402

CLOCK = time.process_time


def build(name: str, size: int, extra: dict) -> Selector:
    options: dict = dict(extra)
    if name == "map-elites":
        options = {"size": "large", "population_size": size, **extra}
    return SELECTORS.get(name)(rng=np.random.default_rng(0), target=None, **options)


class Timed:
    """Wraps a selector to time add(), sample() and map-elites' migrate() separately."""

    def __init__(self, inner: Selector):
        self.inner = inner
        self.add_s = self.sample_s = self.migrate_s = 0.0
        self.adds = self.picks = 0
        migrate = getattr(inner, "migrate", None)
        if migrate is not None:
            def timed_migrate() -> None:
                t0 = CLOCK()
                migrate()
                self.migrate_s += CLOCK() - t0
            inner.migrate = timed_migrate  # type: ignore[method-assign]

    def add(self, program):
        t0 = CLOCK()
        self.inner.add(program)
        self.add_s += CLOCK() - t0
        self.adds += 1

    def sample(self, k):
        t0 = CLOCK()
        picks = self.inner.sample(k)
        self.sample_s += CLOCK() - t0
        self.picks += k
        return picks

    def observe(self, pick, outcomes):
        self.inner.observe(pick, outcomes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--selectors", nargs="+", default=SELECTORS.names())
    parser.add_argument("--shapes", nargs="+", default=["32x16", "8x8"], help="B x n batch shapes")
    parser.add_argument("--steps", type=int, default=70)
    parser.add_argument("--migration-cap", type=int, default=None, help="map-elites migration_cap")
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes]
    extra = {"migration_cap": args.migration_cap} if args.migration_cap else {}
    print(f"{'selector':<11} {'programs':>9} {'held':>7} {'B x n':>6} {'add us/child':>13} "
          f"{'sample us/pick':>15} {'migr. us/child':>15} {'us/child':>9}")
    for name in args.selectors:
        for size in args.sizes:
            sel = build(name, size, extra if name == "map-elites" else {})
            sel.add(seed_program())
            world = World(np.random.default_rng(1), valid_share=0.8, noise=0.05)
            while len(world.created) < size:  # fill with ThetaEvolve-sized steps
                run_steps(sel, world, steps=1, batch=32, children=16)
            for batch, children in shapes:
                timed = Timed(sel)
                world.seconds_in_selector, world.children = 0.0, 0
                run_steps(timed, world, args.steps, batch, children, clock=CLOCK)  # type: ignore[arg-type]
                n_children = max(1, world.children)
                sample = (timed.sample_s - timed.migrate_s) / max(1, timed.picks)
                print(f"{name:<11} {size:>9} {len(sel):>7} {f'{batch}x{children}':>6} "
                      f"{1e6 * timed.add_s / max(1, timed.adds):>13.1f} {1e6 * sample:>15.1f} "
                      f"{1e6 * timed.migrate_s / n_children:>15.1f} "
                      f"{1e6 * world.seconds_in_selector / n_children:>9.1f}", flush=True)
                if "migrate" in sel.__dict__:
                    del sel.__dict__["migrate"]  # unwrap before the next shape wraps again


if __name__ == "__main__":
    main()
