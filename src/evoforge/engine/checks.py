"""ThetaEvolve's early checks: turn a response into a child program, or into a penalty class.

No diff -> NO_DIFF (-0.4); a child equivalent to its parent or to any program already run
(canonical form, O(1) through the hash index) -> UNCHANGED (-0.3). What survives goes to the
sandbox, whose outcome decides between NO_SOLUTION (-0.2), INVALID (-0.1) and EVALUATED.
"""
from __future__ import annotations

from dataclasses import dataclass

from evoforge.edits import NoEditFound, apply_edits, canonical_hash, parse_edits
from evoforge.rewards import ChildClass
from evoforge.sandbox.base import Status


@dataclass
class Candidate:
    child_class: ChildClass | None  # None: passed the early checks, to be evaluated
    code: str | None = None
    canon_hash: str | None = None
    feedback: str = ""  # why an edit failed: shown to the model next time


def early_check(
    response_text: str,
    response_error: str,
    parent_code: str,
    parent_hash: str,
    known_hashes: set[str],
    *,
    mode: str = "diff",
    evolve_blocks: bool = False,
) -> Candidate:
    if response_error and not response_text:
        return Candidate(ChildClass.NO_DIFF, feedback=f"the model call failed: {response_error}")
    try:
        blocks = parse_edits(response_text, mode=mode)
    except NoEditFound as exc:
        return Candidate(ChildClass.NO_DIFF, feedback=str(exc))
    result = apply_edits(parent_code, blocks, evolve_blocks=evolve_blocks)
    feedback = "\n".join(result.failures)
    if result.applied == 0:
        return Candidate(ChildClass.NO_DIFF, feedback=feedback or "no edit block could be applied")
    h = canonical_hash(result.code)
    if h == parent_hash or h in known_hashes:
        why = "the edit does not change the program" if h == parent_hash else "the child equals a program already tried"
        return Candidate(ChildClass.UNCHANGED, result.code, h, "\n".join(filter(None, [why, feedback])))
    return Candidate(None, result.code, h, feedback)


def class_of(status: Status) -> ChildClass:
    if status is Status.OK:
        return ChildClass.EVALUATED
    if status is Status.INVALID:
        return ChildClass.INVALID
    return ChildClass.NO_SOLUTION
