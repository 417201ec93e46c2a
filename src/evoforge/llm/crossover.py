"""Model-free crossover operators: the builtin backend's equivalent of a prompt showing two parents.

Like ``mutations``, they know Python's syntax only: a line of the same shape (numbers masked)
or a function of the same name is taken from the other program.
"""
from __future__ import annotations

import re

import numpy as np

from evoforge.llm.mutations import Edit, Source

_NUM_RE = re.compile(r"(?<![\w.])\d[\d_]*\.?\d*(?:[eE][-+]?\d+)?")


def _skeleton(line: str) -> str:
    return _NUM_RE.sub("#", line.strip())


def crossover_lines(src: Source, other: str, rng: np.random.Generator) -> Edit | None:
    """Take the other program's constants (all, or one of those that differ) on a line of the
    same shape (numbers masked)."""
    theirs: dict[str, list[str]] = {}
    for line in other.splitlines():
        theirs.setdefault(_skeleton(line), []).append(line.strip())
    cands = []
    for i in src.editable:
        mine = src.lines[i]
        options = [t for t in theirs.get(_skeleton(mine), []) if t != mine.strip()]
        if mine.strip() and options:
            cands.append((i, options))
    if not cands:
        return None
    i, options = cands[int(rng.integers(len(cands)))]
    indent = src.lines[i][: len(src.lines[i]) - len(src.lines[i].lstrip())]
    theirs_line = options[int(rng.integers(len(options)))]
    mine_nums = list(_NUM_RE.finditer(src.lines[i]))
    their_nums = [m.group(0) for m in _NUM_RE.finditer(theirs_line)]
    differ = [k for k, (a, b) in enumerate(zip(mine_nums, their_nums)) if a.group(0) != b]
    if len(differ) > 1 and len(mine_nums) == len(their_nums) and rng.random() < 0.5:
        # Take one of the differing constants only: the two lines may each be right in part.
        k = differ[int(rng.integers(len(differ)))]
        m, line = mine_nums[k], src.lines[i]
        new = line[: m.start()] + their_nums[k] + line[m.end() :]
        return Edit(i, i + 1, (new,), f"take the other program's {their_nums[k]} for {m.group(0)} on line {i + 1}")
    return Edit(i, i + 1, (indent + theirs_line,), f"take the other program's constants on line {i + 1}")


def _functions(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Top-level-or-nested ``def`` spans: name -> (first line, one past the last line)."""
    out: dict[str, tuple[int, int]] = {}
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)def\s+(\w+)\s*\(", line)
        if not m:
            continue
        ind = len(m.group(1))
        end = i + 1
        for k in range(i + 1, len(lines)):
            s = lines[k]
            if s.strip() and (len(s) - len(s.lstrip())) <= ind and not s.lstrip().startswith(")"):
                break
            if s.strip():
                end = k + 1
        out.setdefault(m.group(2), (i, end))
    return out


def crossover_function(src: Source, other: str, rng: np.random.Generator) -> Edit | None:
    """Replace one of our functions with the other program's function of the same name."""
    mine = _functions(src.lines)
    other_lines = other.splitlines()
    theirs = _functions(other_lines)
    cands = []
    for name, (a, b) in mine.items():
        if name not in theirs or not all(i in src._editable_set for i in range(a, b)):
            continue
        ta, tb = theirs[name]
        new = other_lines[ta:tb]
        if [x.rstrip() for x in new] != [x.rstrip() for x in src.lines[a:b]]:
            cands.append((name, a, b, new))
    if not cands:
        return None
    name, a, b, new = cands[int(rng.integers(len(cands)))]
    return Edit(a, b, tuple(new), f"take function {name}() from the other program")
