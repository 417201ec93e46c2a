"""MAP-Elites feature values and adaptive binning, O(1) in the population size.

Features (``feature_dimensions``):
* ``complexity``: code length in characters (OpenEvolve's definition);
* ``diversity``: OpenEvolve averages edit distances to sampled programs (O(len^2) each);
  here it is the Jaccard distance between the set of stripped non-blank lines of the
  program and of a fixed reference (the first program added): O(len(code)), and stable,
  since the reference never changes;
* ``score``: the fitness;
* any other name: that numeric entry of ``Program.metrics`` (missing: the middle bin).

Ranges are adaptive: each dimension tracks the min and max value seen so far, and a value is
binned against the range *at its insertion*. Nothing is re-binned when the range widens
(that would be O(N)); a program keeps the cell it got, so early cells are coarser than late
ones. A range that has not opened yet (min == max) puts everything in bin 0.
"""
from __future__ import annotations

import math

from evoforge.database.base import Program

BUILTIN = ("complexity", "diversity", "score")


def line_set(code: str) -> set[str]:
    lines = set(map(str.strip, code.splitlines()))  # map(): C speed, no per-line Python frame
    lines.discard("")
    return lines


def jaccard_distance(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    if not a and not b:
        return 0.0
    inter = len(a & b)
    return 1.0 - inter / (len(a) + len(b) - inter)


class FeatureSpace:
    def __init__(self, dimensions: list[str], bins: int):
        self.dimensions = list(dimensions)
        self.bins = bins
        self.ranges: dict[str, list[float]] = {}  # name -> [lo, hi]
        self._reference: frozenset[str] | None = None

    def set_reference(self, code: str) -> None:
        self._reference = frozenset(line_set(code))

    @property
    def has_reference(self) -> bool:
        return self._reference is not None

    def value(self, name: str, program: Program) -> float | None:
        if name == "complexity":
            return float(len(program.code))
        if name == "diversity":
            ref = self._reference if self._reference is not None else frozenset()
            return jaccard_distance(line_set(program.code), ref)
        if name == "score":
            return float(program.fitness)
        v = program.metrics.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                f = float(v)
            except OverflowError:  # an int beyond float range
                return None
            return f if math.isfinite(f) else None
        return None

    def cell(self, program: Program) -> tuple[int, ...]:
        coords = []
        for name in self.dimensions:
            v = self.value(name, program)
            if v is None:
                coords.append(self.bins // 2)
                continue
            lo, hi = self.ranges.setdefault(name, [v, v])
            lo, hi = min(lo, v), max(hi, v)
            self.ranges[name] = [lo, hi]
            if hi <= lo:
                coords.append(0)
            else:
                # halves: v - lo may overflow to inf for metrics near +-1e308 (inf/inf = nan: int() raises)
                frac = (v / 2 - lo / 2) / (hi / 2 - lo / 2)
                coords.append(min(self.bins - 1, max(0, int(frac * self.bins))))
        return tuple(coords)
