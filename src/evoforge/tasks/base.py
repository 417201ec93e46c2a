"""What a discovery task is: a description, an initial program and an exact verifier.

Tasks know nothing of models, prompts or the engine. A builtin task's program defines a
function (``Task.entry``, default ``solve``) that returns the construction; the sandbox runs
it and hands the JSON-able object back, and ``Task.verify`` scores it in the host process,
so a program can never reach the verifier.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable


class Direction(str, Enum):
    MAX = "max"
    MIN = "min"

    def better(self, a: float, b: float) -> bool:
        """True when score ``a`` is strictly better than ``b`` in this direction."""
        return a > b if self is Direction.MAX else a < b


@dataclass(frozen=True)
class KnownValue:
    value: float
    source: str  # who, and where it is published


@dataclass(frozen=True)
class Verdict:
    """The verifier's word on one object. ``score`` is set iff ``valid``."""

    valid: bool
    score: float | None = None
    reason: str = ""  # why it is invalid; goes back to the model as feedback
    metrics: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def reject(reason: str, **metrics: Any) -> "Verdict":
        return Verdict(False, None, reason, dict(metrics))

    @staticmethod
    def accept(score: float, **metrics: Any) -> "Verdict":
        if not math.isfinite(score):
            return Verdict(False, None, f"score is not finite ({score})", dict(metrics))
        return Verdict(True, float(score), "", dict(metrics))


@dataclass(frozen=True)
class Shaping:
    """ThetaEvolve's optional reward shaping band (SPEC §1): R = k * clip(H(s),0,1)^alpha."""

    lower: float
    upper: float
    alpha: float = 1.0
    k: float = 3.0


@dataclass
class Task:
    name: str
    description: str  # goal, constraints, hints: the "meta information" of the prompt
    initial_program: str
    direction: Direction
    verify: Callable[[Any], Verdict] | None = None  # None: the evaluator runs in the sandbox
    entry: str = "solve"  # function the program must define; returns the object
    object_kind: str = "generic"  # circles | step_function | matrix | points | integer_set | ...
    best_human: KnownValue | None = None
    best_ai: KnownValue | None = None
    initial_score: float | None = None  # the shipped initial program's score, as published
    time_limit: float = 60.0  # seconds for one evaluation
    memory_mb: int = 2048
    evolve_blocks: bool = False  # edits allowed only inside EVOLVE-BLOCK markers
    shaping: Shaping | None = None
    evaluator_path: Path | None = None  # OpenEvolve-style evaluator.py (runs sandboxed)
    language: str = "python"  # "cpp": the program is C++ text its (sandboxed) evaluator compiles
    family: str = "mathematics"  # the task kind, for listings (tasks/families/)
    remeasure: int = 0  # noisy rewards (runtime): a candidate for a new best is timed this many more times beside the seed
    params: dict[str, Any] = field(default_factory=dict)  # n, tolerance, formula, ...

    @property
    def target(self) -> float | None:
        """The best known value (best of human and AI); the goal of the search."""
        known = [k.value for k in (self.best_human, self.best_ai) if k is not None]
        if not known:
            return None
        return max(known) if self.direction is Direction.MAX else min(known)

    def better(self, a: float, b: float) -> bool:
        """True when score ``a`` is strictly better than ``b`` for this task."""
        return self.direction.better(a, b)

    def fitness(self, score: float) -> float:
        """Score oriented so that higher is always better (selectors use this)."""
        return score if self.direction is Direction.MAX else -score
