"""Grammars (GBNF) that make every sampled response an applicable edit of its parent.

Grammar-constrained decoding (llama.cpp GBNF; vLLM / SGLang structured outputs, whose xgrammar
reads the same notation) masks, at each token, whatever cannot continue the grammar. The
grammars here are built per parent program:

* ``diff``: one to three SEARCH/REPLACE blocks whose SEARCH text can only be a run of
  consecutive lines of the parent's EVOLVE-BLOCK that occurs exactly once in the program (its
  shortest unique run plus at most MAX_EXTRA_LINES), so the SEARCH is always found, unambiguous
  and inside the block; REPLACE is free text (no line starting with a marker, a fence or a
  column-0 "#": the EVOLVE-BLOCK markers), at most REPLACE_SLACK lines longer than the SEARCH.
* ``block``: one fenced block (the new EVOLVE-BLOCK body) that starts with the body's first line
  (the model cannot drop the function it defines); the rest is free text.
* ``full``: one fenced program.

New code is bounded too: at most MAX_REPLACE_LINES lines (a block: twice its length plus 8) of
at most MAX_LINE_CHARS characters, so a small model that rambles is made to close its edit
instead of running to max_tokens (measured: with unbounded REPLACE, 7 of 8 SmolLM2 responses on
fit-quadratic never closed theirs). Repetition ranges ``{m,n}`` are read by llama.cpp and xgrammar
(vLLM, SGLang).

What a grammar cannot promise: that REPLACE differs from SEARCH, or that the code runs.
"""
from __future__ import annotations

from evoforge.edits.diff import evolve_regions

MAX_SEARCH_LINES = 400  # a longer EVOLVE-BLOCK still works; runs start only in its first lines
MAX_EXTRA_LINES = 4  # lines a SEARCH may add after its shortest unique run
MAX_REPLACE_LINES = 16  # lines of one REPLACE section
REPLACE_SLACK = 4  # lines a REPLACE may have beyond the longest SEARCH that starts where it does
MAX_LINE_CHARS = 200  # characters of one new line


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    out = ['"']
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _free_lines(max_lines: int) -> str:
    # A line of the new code: anything but a line that starts with an edit marker, a fence or "#"
    # (the EVOLVE-BLOCK markers sit in column 0; a small model copies them into its edit).
    return (f"rlines ::= rline{{0,{max_lines}}}\n"
            f'rline ::= ([^<=>`#\\n] [^\\n]{{0,{MAX_LINE_CHARS - 1}}})? "\\n"\n')


def grammar_for(mode: str, parent_code: str, evolve_blocks: bool = True) -> str:
    """The GBNF grammar of a response in edit ``mode`` for this parent."""
    if mode == "diff":
        return diff_grammar(parent_code, evolve_blocks)
    if mode == "block":
        return block_grammar(parent_code)
    if mode == "full":
        n = len(parent_code.splitlines())
        return 'root ::= "```python\\n" rlines "```"\n' + _free_lines(2 * n + 8)
    raise ValueError(f"no grammar for edit mode {mode!r}")


def diff_grammar(parent_code: str, evolve_blocks: bool = True) -> str:
    lines = [line.rstrip() for line in parent_code.splitlines()]
    regions = evolve_regions(parent_code) if evolve_blocks else []
    spans = regions or [(0, len(lines))]
    counts: dict[tuple[str, ...], int] = {}
    rules: list[str] = []
    starts: list[str] = []
    for r, (lo, hi) in enumerate(spans):
        for i in range(lo, min(hi, lo + MAX_SEARCH_LINES)):
            if not lines[i].strip():
                continue  # a run starting with a blank line carries no position
            u = _unique_end(lines, i, hi, counts)
            if u is None:
                continue
            # s_i: the mandatory lines i..u (the shortest unique run), then up to MAX_EXTRA_LINES more:
            # a small model that may copy the whole block into SEARCH spends its tokens there.
            mandatory = " ".join(gbnf_literal(lines[k] + "\n") for k in range(i, u + 1))
            extra = [gbnf_literal(lines[k] + "\n") for k in range(u + 1, min(hi, u + 1 + MAX_EXTRA_LINES))]
            tail = ""
            for lit in reversed(extra):
                tail = f"({lit}{tail})?" if not tail else f"({lit} {tail})?"
            rules.append(f"s{r}x{i} ::= {mandatory}" + (f" {tail}" if tail else ""))
            # its REPLACE: at most as long as the longest SEARCH from here plus REPLACE_SLACK lines
            k = min(MAX_REPLACE_LINES, u + 1 - i + len(extra) + REPLACE_SLACK)
            starts.append(f's{r}x{i} "=======\\n" rline{{0,{k}}}')
    if not starts:
        raise ValueError("no line of the program can start a unique SEARCH text")
    head = [
        "root ::= block (block block?)?",
        'block ::= "<<<<<<< SEARCH\\n" edit ">>>>>>> REPLACE\\n"',
        "edit ::= " + " | ".join(f"({s})" for s in starts),
    ]
    return "\n".join(head + rules) + "\n" + _free_lines(MAX_REPLACE_LINES)


def block_grammar(parent_code: str) -> str:
    regions = evolve_regions(parent_code)
    lines = parent_code.splitlines()
    lo, hi = regions[0] if regions else (0, len(lines))
    first = next((line.rstrip() for line in lines[lo:hi] if line.strip()), "")
    if regions and len(regions) > 1:  # one fence per region, in order
        body = " ".join(['"```python\\n" rlines "```\\n"'] * len(regions))
        longest = max(b - a for a, b in regions)
        return f"root ::= {body}\n" + _free_lines(2 * longest + 8)
    lead = f" {gbnf_literal(first + chr(10))}" if first else ""
    return f'root ::= "```python\\n"{lead} rlines "```"\n' + _free_lines(2 * (hi - lo) + 8)


def _unique_end(lines: list[str], i: int, hi: int, counts: dict[tuple[str, ...], int]) -> int | None:
    """The smallest u in [i, hi) such that lines[i..u] ends on a non-blank line and occurs once."""
    n = len(lines)
    for u in range(i, hi):
        if not lines[u].strip():
            continue
        run = tuple(lines[i : u + 1])
        if run not in counts:
            m = len(run)
            counts[run] = sum(1 for s in range(n - m + 1) if tuple(lines[s : s + m]) == run)
        if counts[run] == 1:
            return u
    return None
