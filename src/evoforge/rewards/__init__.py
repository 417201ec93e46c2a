"""The early-check ladder of ThetaEvolve (SPEC §1) and, for RL, reward shaping."""
from __future__ import annotations

from enum import Enum


class ChildClass(str, Enum):
    NO_DIFF = "no_diff"  # response has no usable edit block
    UNCHANGED = "unchanged"  # child equivalent to its parent or to any program in the database
    NO_SOLUTION = "no_solution"  # syntax error, crash, timeout, out of memory, killed
    INVALID = "invalid"  # the verifier rejects the object
    EVALUATED = "evaluated"  # scored by the verifier


PENALTY: dict[ChildClass, float] = {
    ChildClass.NO_DIFF: -0.4,
    ChildClass.UNCHANGED: -0.3,
    ChildClass.NO_SOLUTION: -0.2,
    ChildClass.INVALID: -0.1,
}
