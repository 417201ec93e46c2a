"""Parse and apply SEARCH/REPLACE edits (the OpenEvolve / ThetaEvolve diff format).

A response holds zero or more blocks::

    <<<<<<< SEARCH
    old lines
    =======
    new lines
    >>>>>>> REPLACE

Blocks are applied in order, each to the result of the previous ones. A block that cannot be
applied is never skipped silently: its reason goes to ``ApplyResult.failures`` (the text is
shown to the model). Matching tolerates trailing whitespace and a uniform indentation shift
(the replacement is then re-indented by the same shift); nothing else.

Decision on ambiguity: a SEARCH text that matches several places is NOT applied (a failure
that says how many places matched), because guessing the place silently is the worst outcome
for a learner and for the user reading the diff.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

EVOLVE_START = "EVOLVE-BLOCK-START"
EVOLVE_END = "EVOLVE-BLOCK-END"

_BLOCK_RE = re.compile(
    r"^[ \t]*<{5,}[ \t]*SEARCH[ \t]*\r?\n(.*?)^[ \t]*={5,}[ \t]*\r?\n(.*?)^[ \t]*>{5,}[ \t]*REPLACE[ \t]*$",
    re.DOTALL | re.MULTILINE,
)
# Empty SEARCH or REPLACE sections: the separator directly follows the marker line.
_FENCE_RE = re.compile(r"^```[ \t]*(\w[\w+-]*)?[ \t]*\r?\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


class NoEditFound(ValueError):
    """The response contains no usable edit (no SEARCH/REPLACE block, or no fenced program)."""


@dataclass(frozen=True)
class EditBlock:
    search: str  # text to find ("" for a full rewrite)
    replace: str  # text to put in its place (the whole program for a full rewrite)
    full: bool = False  # True: ``replace`` is the whole new program
    region: int | None = None  # block rewrite: ``replace`` is the new body of EVOLVE-BLOCK ``region``


@dataclass
class ApplyResult:
    code: str
    applied: int  # number of blocks applied
    failures: list[str] = field(default_factory=list)  # one line per block that was not applied

    @property
    def ok(self) -> bool:
        return not self.failures


def parse_edits(text: str, mode: str = "diff") -> list[EditBlock]:
    """Extract the edit blocks of a model response; raises NoEditFound when there is none."""
    text = text.replace("\r\n", "\n")
    if mode == "diff":
        blocks = [EditBlock(_strip_section(m.group(1)), _strip_section(m.group(2))) for m in _BLOCK_RE.finditer(text)]
        if not blocks:
            raise NoEditFound("no SEARCH/REPLACE block found (expected '<<<<<<< SEARCH' ... '=======' ... '>>>>>>> REPLACE')")
        return blocks
    if mode == "full":
        fences = [(lang or "", body) for lang, body in _FENCE_RE.findall(text)]
        python = [body for lang, body in fences if lang.lower() in ("python", "py", "python3")]
        candidates = python or [body for lang, body in fences if not lang]
        if not candidates or not max(candidates, key=len).strip():
            raise NoEditFound("no fenced ```python program found for a full rewrite")
        # The longest fenced python block is the program; shorter ones are usually snippets.
        return [EditBlock("", max(candidates, key=len).rstrip() + "\n", full=True)]
    if mode == "block":
        from evoforge.edits.block import parse_block_rewrite

        return parse_block_rewrite(text)
    raise ValueError(f"unknown edit mode {mode!r} (expected 'diff', 'full' or 'block')")


def _strip_section(section: str) -> str:
    # The regex keeps the newline that ends the section's last line: drop exactly that one.
    return section[:-1] if section.endswith("\n") else section


def evolve_regions(code: str) -> list[tuple[int, int]]:
    """Line ranges [start, end) strictly between EVOLVE-BLOCK-START and -END marker lines."""
    regions: list[tuple[int, int]] = []
    start: int | None = None
    for i, line in enumerate(code.splitlines()):
        if EVOLVE_START in line:
            start = i + 1
        elif EVOLVE_END in line and start is not None:
            regions.append((start, i))
            start = None
    return regions


def apply_edits(parent_code: str, blocks: list[EditBlock], evolve_blocks: bool = False) -> ApplyResult:
    """Apply ``blocks`` in order to ``parent_code``; report each block that could not be applied."""
    if blocks and all(b.region is not None for b in blocks):
        from evoforge.edits.block import apply_region_blocks

        return ApplyResult(*apply_region_blocks(parent_code, blocks))
    code = parent_code
    applied = 0
    failures: list[str] = []
    for k, block in enumerate(blocks, start=1):
        if block.full:
            new, why = _apply_full(code, block.replace, evolve_blocks)
        else:
            new, why = _apply_one(code, block, evolve_blocks)
        if why:
            failures.append(f"block {k}: {why}")
        else:
            code = new
            applied += 1
    return ApplyResult(code, applied, failures)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:80]
    return ""


def _apply_one(code: str, block: EditBlock, evolve_blocks: bool) -> tuple[str, str]:
    if not block.search.strip():
        return code, "SEARCH section is empty (give the exact lines to replace)"
    if EVOLVE_START in block.replace or EVOLVE_END in block.replace:
        if evolve_blocks and (block.replace.count(EVOLVE_START), block.replace.count(EVOLVE_END)) != (
            block.search.count(EVOLVE_START),
            block.search.count(EVOLVE_END),
        ):
            return code, "REPLACE adds or removes an EVOLVE-BLOCK marker"
    lines = code.splitlines()
    search = block.search.splitlines()
    while search and not search[0].strip():  # leading/trailing blank lines carry no position
        search.pop(0)
    while search and not search[-1].strip():
        search.pop()
    matches = find_matches(lines, search)
    if not matches:
        return code, f"SEARCH text not found (first line: {_first_line(block.search)!r})"
    if len(matches) > 1:
        where = ", ".join(str(m[0] + 1) for m in matches[:5])
        return code, (
            f"SEARCH text matches {len(matches)} places (lines {where}; first line: "
            f"{_first_line(block.search)!r}); add context lines to make it unique"
        )
    start, shift = matches[0]
    end = start + len(search)
    replacement = _reindent(block.replace.splitlines(), shift)
    if evolve_blocks:
        regions = evolve_regions(code)
        # Only the lines that actually change must lie inside a region: unchanged context
        # (a marker line quoted to make the SEARCH unique, say) is fine.
        a, b = _changed_span(lines[start:end], replacement)
        a, b = start + a, start + b
        inside = any(lo <= a and b <= hi for lo, hi in regions) if a < b else any(lo <= a <= hi for lo, hi in regions)
        if regions and not inside:
            return code, (
                f"edit at lines {a + 1}-{max(a + 1, b)} is outside the EVOLVE-BLOCK regions "
                f"(only code between EVOLVE-BLOCK-START and EVOLVE-BLOCK-END may change)"
            )
    new_lines = lines[:start] + replacement + lines[end:]
    trailing = "\n" if code.endswith("\n") or not code else ""
    return "\n".join(new_lines) + trailing, ""


def _changed_span(old: list[str], new: list[str]) -> tuple[int, int]:
    """[a, b) of ``old`` that differs from ``new`` once common leading/trailing lines are removed."""
    p = 0
    while p < len(old) and p < len(new) and old[p].rstrip() == new[p].rstrip():
        p += 1
    q = 0
    while q < len(old) - p and q < len(new) - p and old[-1 - q].rstrip() == new[-1 - q].rstrip():
        q += 1
    return p, len(old) - q


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def find_matches(lines: list[str], search: list[str]) -> list[tuple[int, int]]:
    """Places where ``search`` matches: exactly (modulo trailing blanks), else modulo a uniform indent.

    Returns (start line, shift) pairs; shift is 0 for an exact match, a positive int of spaces
    to add, or a negative int of characters to strip from the replacement's indentation.
    """
    n = len(search)
    if n == 0 or n > len(lines):
        return []
    stripped = [s.rstrip() for s in search]
    exact = [i for i in range(len(lines) - n + 1) if all(lines[i + k].rstrip() == stripped[k] for k in range(n))]
    if exact:
        return [(i, 0) for i in exact]
    content = [s.strip() for s in search]
    anchor = next(k for k, s in enumerate(content) if s)
    found: list[tuple[int, int]] = []
    for i in range(len(lines) - n + 1):
        if not all(lines[i + k].strip() == content[k] for k in range(n)):
            continue
        # The indentation must differ by the same amount on every non-blank line.
        delta = len(_indent(lines[i + anchor])) - len(_indent(search[anchor]))
        if all(
            len(_indent(lines[i + k])) - len(_indent(search[k])) == delta for k in range(n) if content[k]
        ):
            found.append((i, delta))
    return found


def _reindent(replacement: list[str], shift: int) -> list[str]:
    if not shift:
        return replacement
    if shift > 0:
        return [(" " * shift + line) if line.strip() else line for line in replacement]
    cut = -shift
    out = []
    for line in replacement:
        lead = len(_indent(line))
        out.append(line[min(cut, lead):])
    return out


def _apply_full(code: str, new_code: str, evolve_blocks: bool) -> tuple[str, str]:
    if evolve_blocks and evolve_regions(code):
        if _outside(code) != _outside(new_code):
            return code, "full rewrite changes code outside the EVOLVE-BLOCK regions (keep it unchanged)"
    return new_code, ""


def _outside(code: str) -> list[str]:
    """The non-blank lines outside the EVOLVE-BLOCK regions (markers included)."""
    lines = code.splitlines()
    inside = {i for a, b in evolve_regions(code) for i in range(a, b)}
    return [line.rstrip() for i, line in enumerate(lines) if i not in inside and line.strip()]
