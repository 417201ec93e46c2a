"""EVOLVE-BLOCK rewrite: the response is the new body of the program's EVOLVE-BLOCK, nothing else.

Small models cannot quote a SEARCH text exactly, and when asked for the whole program they
change code outside the block. Here the response holds one fenced code block per EVOLVE-BLOCK
region (one in every built-in task); each replaces that region's body, and the code outside,
markers included, is copied from the parent, so a rewrite can never touch it.

A fence that quotes the markers (the model copied the whole program) is read between them.
"""
from __future__ import annotations

import re

from evoforge.edits.diff import EVOLVE_END, EVOLVE_START, EditBlock, NoEditFound, evolve_regions

_FENCE_RE = re.compile(r"^[ \t]*```[ \t]*(\w[\w+-]*)?[ \t]*\r?\n(.*?)^[ \t]*```[ \t]*$", re.DOTALL | re.MULTILINE)
# An unterminated fence (the model hit max_tokens or stopped early): take the rest of the text.
_OPEN_FENCE_RE = re.compile(r"^[ \t]*```[ \t]*(\w[\w+-]*)?[ \t]*\r?\n(.*)\Z", re.DOTALL | re.MULTILINE)
_PY = ("python", "py", "python3", "")


def parse_block_rewrite(text: str) -> list[EditBlock]:
    """The fenced code blocks of a response, as region rewrites (region k = the k-th fence)."""
    text = text.replace("\r\n", "\n")
    bodies = [body for lang, body in _FENCE_RE.findall(text) if (lang or "").lower() in _PY]
    if not bodies:
        tail = _OPEN_FENCE_RE.search(text)
        if tail and (tail.group(1) or "").lower() in _PY and tail.group(2).strip():
            bodies = [tail.group(2)]
    bodies = [_between_markers(b) for b in bodies if b.strip()]
    if not bodies:
        raise NoEditFound("no fenced ```python block with the new EVOLVE-BLOCK body found")
    return [EditBlock("", b, region=k) for k, b in enumerate(bodies)]


def _between_markers(body: str) -> str:
    lines = body.splitlines()
    starts = [i for i, line in enumerate(lines) if EVOLVE_START in line]
    if starts:
        ends = [i for i, line in enumerate(lines) if EVOLVE_END in line and i > starts[0]]
        lines = lines[starts[0] + 1 : ends[0] if ends else len(lines)]
    else:
        lines = [line for line in lines if EVOLVE_END not in line]
    return "\n".join(lines).rstrip() + "\n"


def apply_region_blocks(code: str, blocks: list[EditBlock]) -> tuple[str, int, list[str]]:
    """``code`` with its EVOLVE-BLOCK bodies replaced: (new code, blocks applied, failure lines)."""
    regions = evolve_regions(code)
    if len(regions) <= 1 and len(blocks) > 1:  # one place to fill: the longest fence is the answer
        blocks = [max(blocks, key=lambda b: len(b.replace))]
    if not regions:  # no markers: the whole program is the block
        return blocks[0].replace, 1, []
    if len(blocks) != len(regions):
        return code, 0, [f"the program has {len(regions)} EVOLVE-BLOCK regions but the response has "
                         f"{len(blocks)} code blocks: give one code block per region, in order"]
    lines = code.splitlines()
    failures = []
    for k in range(len(blocks) - 1, -1, -1):  # last region first: earlier line numbers stay valid
        body = blocks[k].replace
        if EVOLVE_START in body or EVOLVE_END in body:
            failures.append(f"block {k + 1}: the new block body contains an EVOLVE-BLOCK marker")
            continue
        lo, hi = regions[k]
        lines = lines[:lo] + body.rstrip("\n").split("\n") + lines[hi:]
    new = "\n".join(lines) + ("\n" if code.endswith("\n") else "")
    return new, len(blocks) - len(failures), failures[::-1]


def block_body(code: str) -> str:
    """The text of the first EVOLVE-BLOCK region (the whole program when it has none)."""
    regions = evolve_regions(code)
    if not regions:
        return code
    lo, hi = regions[0]
    return "\n".join(code.splitlines()[lo:hi]) + "\n"
