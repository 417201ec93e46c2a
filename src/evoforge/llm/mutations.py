"""Model-free mutation operators on Python source (used by the builtin backend).

Each operator looks at the current code and returns an ``Edit``: a contiguous line span and
its new lines, or None when it has nothing to do. The operators know Python's syntax only,
never a task's answer. ``Source`` caches the token view of one version of the code.
"""
from __future__ import annotations

import builtins
import io
import keyword
import math
import re
import tokenize
from dataclasses import dataclass
from typing import Callable

import numpy as np

from evoforge.edits.diff import evolve_regions

_OP_SWAPS = {
    "+": ["-"], "-": ["+"], "*": ["/", "+"], "/": ["*"], "//": ["/"],
    "<": ["<=", ">"], "<=": ["<", ">="], ">": [">=", "<"], ">=": [">", "<="],
    "==": ["!="], "!=": ["=="], "**": ["*"],
}
_NAME_SWAPS = {"min": ["max"], "max": ["min"], "and": ["or"], "or": ["and"], "True": ["False"], "False": ["True"]}
_ALT_RE = re.compile(r"#\s*alt(?:ernatives)?\s*:\s*(.+)$", re.IGNORECASE)
_ASSIGN_RE = re.compile(r"^\s*[\w\[\]\.,\s]+?\s*(?:[+\-*/]{1,2})?=(?!=)")
_BUILTIN_NAMES = frozenset(dir(builtins))
_RETURN_RE = re.compile(r"^\s*return\b")
_HEADER_RE = re.compile(r"^\s*(def|class|for|while|if|elif|else|try|except|finally|with|return|import|from|async|@)\b")


@dataclass(frozen=True)
class Edit:
    start: int  # first line replaced (0-based)
    end: int  # one past the last line replaced
    new_lines: tuple[str, ...]
    what: str  # a short human description ("perturb 0.7 -> 0.52 on line 16")


class Source:
    """One version of the code with the token and line views the operators need."""

    def __init__(self, code: str):
        self.code = code
        self.lines = code.splitlines()
        regions = evolve_regions(code)
        if regions:
            self.editable = [i for a, b in regions for i in range(a, b)]
        else:
            self.editable = list(range(len(self.lines)))
        self._editable_set = set(self.editable)
        self.tokens: list[tokenize.TokenInfo] = []
        try:
            self.tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass
        self.in_subscript = _subscript_positions(self.tokens)

    def token_in_editable(self, tok: tokenize.TokenInfo) -> bool:
        # Single-line tokens only: a replacement then touches exactly one line.
        return tok.start[0] == tok.end[0] and (tok.start[0] - 1) in self._editable_set

    def replace_token(self, tok: tokenize.TokenInfo, text: str, what: str) -> Edit:
        row = tok.start[0] - 1
        line = self.lines[row]
        new = line[: tok.start[1]] + text + line[tok.end[1] :]
        return Edit(row, row + 1, (new,), what)


def _subscript_positions(tokens: list[tokenize.TokenInfo]) -> set[tuple[int, int]]:
    """Start positions of tokens inside an index ``a[...]`` (integers there are mostly structural)."""
    out: set[tuple[int, int]] = set()
    stack: list[bool] = []
    prev: tokenize.TokenInfo | None = None
    for t in tokens:
        if t.type == tokenize.OP and t.string in "([{":
            is_sub = t.string == "[" and prev is not None and (
                (prev.type == tokenize.NAME and not keyword.iskeyword(prev.string)) or prev.string in (")", "]")
            )
            stack.append(is_sub)
        elif t.type == tokenize.OP and t.string in ")]}":
            if stack:
                stack.pop()
        elif any(stack):
            out.add(t.start)
        if t.type not in (tokenize.NL, tokenize.COMMENT):
            prev = t
    return out


Operator = Callable[[Source, np.random.Generator], "Edit | None"]


# ---- numeric constants -----------------------------------------------------------------------


def perturb_number(src: Source, rng: np.random.Generator, p_large: float = 0.5, p_coupled: float = 0.3) -> Edit | None:
    """Multi-scale jitter of one numeric literal: mostly small relative steps, sometimes big jumps."""
    nums = [t for t in src.tokens if t.type == tokenize.NUMBER and src.token_in_editable(t)]
    nums = [t for t in nums if not t.string.lower().endswith("j") and not t.string.lower().startswith(("0x", "0o", "0b"))]
    if not nums:
        return None
    # Floats are the tunable constants; integers (and anything used as an index) are mostly structure.
    w = np.array([
        (0.15 if t.start in src.in_subscript else 1.0) * (1.0 if re.search(r"[.eE]", t.string) else 0.25)
        for t in nums
    ])
    tok = nums[int(rng.choice(len(nums), p=w / w.sum()))]
    try:
        value = float(tok.string.replace("_", ""))
    except ValueError:
        return None
    is_int = re.fullmatch(r"\d[\d_]*", tok.string) is not None
    if is_int and rng.random() < 0.9:
        v = int(value)
        r = rng.random()
        if r < 0.8 or v < 2:
            new_v = v + (1 if rng.random() < 0.5 else -1)
        else:
            new_v = v * 2 if rng.random() < 0.5 else v // 2
        new_v = max(new_v, 0)
        if new_v == v:
            new_v = v + 1
        text, what = str(new_v), f"change integer {v} -> {new_v}"
    else:
        new_value, digits = _jitter(value, rng, p_large, tok.string)
        text = _format_float(new_value, digits)
        if float(text) == value:
            return None
        what = f"perturb {tok.string} -> {text}"
    same = [t for t in nums if t.string == tok.string]
    # An integer that appears everywhere (0, 1, 2) is rarely one constant used twice.
    if len(same) > 1 and (not is_int or len(same) <= 3) and rng.random() < p_coupled:
        # Change every copy of the literal at once, as one would rename a constant (keeps
        # e.g. a count and the divisor that goes with it, or x and y radii, consistent).
        return _replace_tokens(src, same, text, f"{what} everywhere ({len(same)} places)")
    return src.replace_token(tok, text, f"{what} on line {tok.start[0]}")


def _replace_tokens(src: Source, toks: list[tokenize.TokenInfo], text: str, what: str) -> Edit:
    rows = sorted({t.start[0] - 1 for t in toks})
    a, b = rows[0], rows[-1] + 1
    lines = list(src.lines[a:b])
    for t in sorted(toks, key=lambda t: t.start, reverse=True):  # right to left keeps columns valid
        k = t.start[0] - 1 - a
        lines[k] = lines[k][: t.start[1]] + text + lines[k][t.end[1] :]
    return Edit(a, b, tuple(lines), what)


def _significant_digits(text: str) -> int:
    """Significant digits of a literal as written: ``0.7`` -> 1, ``0.903192`` -> 6, ``1e-12`` -> 1."""
    mantissa = re.split(r"[eE]", text.replace("_", "").lstrip("+-"))[0]
    digits = mantissa.replace(".", "").lstrip("0")
    return max(1, len(digits.rstrip("0")) if "." not in mantissa else len(digits))


def _jitter(value: float, rng: np.random.Generator, p_large: float, written: str | None = None) -> tuple[float, int]:
    """Small relative step with probability 1 - p_large, else a jump (multiplicative, rarely a
    sign flip or a uniform redraw in [0, 2x]).

    The literal as written sets the scales, as it would for a person: a round constant (``0.7``)
    is a guess, worth big jumps and steps of a few per cent; one with many digits (``0.903192``)
    has been tuned already, so it mostly gets steps near its last digits."""
    sig = _significant_digits(written) if written else 3
    if sig >= 4:
        p_large *= 0.5
    r = rng.random()
    if value == 0.0:
        scale = float(10 ** rng.uniform(-4, -0.5))
        return float(rng.normal(0, scale)), 4
    if r >= p_large:  # small relative step, scale log-uniform down to about the last digit written
        sigma = float(10 ** rng.uniform(-min(9, max(4, sig + 2)), -1))
        digits = int(min(12, max(3, math.ceil(-math.log10(sigma)) + 3)))
        return value * (1 + rng.normal(0, sigma)), digits
    if r < 0.7 * p_large:  # large multiplicative jump
        return value * float(np.exp(rng.normal(0, 0.5))), 3
    return -value if rng.random() < 0.3 else value * float(rng.uniform(0.0, 2.0)), 3


def _format_float(v: float, digits: int) -> str:
    text = f"{v:.{digits}g}"
    if "e" not in text and "." not in text and "inf" not in text and "nan" not in text:
        text += ".0"
    return text


# ---- operators and marked alternatives -------------------------------------------------------


def swap_operator(src: Source, rng: np.random.Generator) -> Edit | None:
    """Swap one arithmetic/comparison operator, min/max, and/or or True/False."""
    cands = [
        t for t in src.tokens
        if src.token_in_editable(t)
        and ((t.type == tokenize.OP and t.string in _OP_SWAPS) or (t.type == tokenize.NAME and t.string in _NAME_SWAPS))
    ]
    if not cands:
        return None
    tok = cands[int(rng.integers(len(cands)))]
    options = _OP_SWAPS.get(tok.string) or _NAME_SWAPS[tok.string]
    new = options[int(rng.integers(len(options)))]
    return src.replace_token(tok, new, f"swap '{tok.string}' -> '{new}' on line {tok.start[0]}")


def swap_alternative(src: Source, rng: np.random.Generator) -> Edit | None:
    """Lines marked ``# alt: a | b | c`` hold one of the options: switch to another one."""
    cands = []
    for i in src.editable:
        m = _ALT_RE.search(src.lines[i])
        if not m:
            continue
        options = [o.strip() for o in m.group(1).split("|") if o.strip()]
        body = src.lines[i][: m.start()]
        present = [o for o in options if o in body]
        if present and len(options) > 1:
            cands.append((i, body, present[0], options))
    if not cands:
        return None
    i, body, cur, options = cands[int(rng.integers(len(cands)))]
    others = [o for o in options if o != cur]
    new = others[int(rng.integers(len(others)))]
    line = body.replace(cur, new, 1) + src.lines[i][len(body) :]
    return Edit(i, i + 1, (line,), f"switch alternative {cur!r} -> {new!r} on line {i + 1}")


def introduce_constant(src: Source, rng: np.random.Generator) -> Edit | None:
    """Give an expression a new degree of freedom: a name or a call ``x`` -> ``(x + c)`` or
    ``(x * c)``, on the right-hand side of an assignment or in a ``return`` expression."""
    cands: list[tuple[int, int, int]] = []  # (row, start col, end col)
    toks = src.tokens
    for k, t in enumerate(toks):
        if t.type != tokenize.NAME or not src.token_in_editable(t) or keyword.iskeyword(t.string):
            continue
        line = src.lines[t.start[0] - 1]
        m = _ASSIGN_RE.match(line) if not _HEADER_RE.match(line) else _RETURN_RE.match(line)
        if not m or t.start[1] < m.end() or t.start in src.in_subscript:
            continue
        before = line[: t.start[1]].rstrip()
        if before.endswith(".") or before.endswith(("def", "lambda")):
            continue
        end = _call_end(toks, k)
        if end is not None:  # a (dotted) call on one line: wrap the whole call
            cands.append((t.start[0] - 1, t.start[1], end))
            continue
        after = line[t.end[1] :].lstrip()
        if t.string in _BUILTIN_NAMES or after.startswith(("(", ".", "[", "=")):
            continue  # types and functions (dtype=float), attribute chains, keyword names
        cands.append((t.start[0] - 1, t.start[1], t.end[1]))
    if not cands:
        return None
    row, a, b = cands[int(rng.integers(len(cands)))]
    line = src.lines[row]
    expr = line[a:b]
    if rng.random() < 0.5:
        c = float(rng.normal(0, 0.05))
        text = f"({expr} {'-' if c < 0 else '+'} {_format_float(abs(c), 3)})"
    else:
        text = f"({expr} * {_format_float(float(1 + rng.normal(0, 0.05)), 4)})"
    short = expr if len(expr) <= 40 else expr[:37] + "..."
    return Edit(row, row + 1, (line[:a] + text + line[b:],), f"introduce a constant: {short} -> {text[:60]} on line {row + 1}")


def _call_end(toks: list[tokenize.TokenInfo], k: int) -> int | None:
    """End column of the call ``name(.name)*( ... )`` starting at token k, when it is on one line."""
    j = k
    while j + 2 < len(toks) and toks[j + 1].string == "." and toks[j + 2].type == tokenize.NAME:
        j += 2
    if j + 1 >= len(toks) or toks[j + 1].string != "(":
        return None
    depth = 0
    for t in toks[j + 1 :]:
        if t.start[0] != toks[k].start[0]:
            return None
        if t.type == tokenize.OP and t.string in "([{":
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
            if depth == 0:
                return t.end[1]
    return None


# ---- statements ------------------------------------------------------------------------------


def _simple_statements(src: Source) -> list[int]:
    out = []
    for i in src.editable:
        line = src.lines[i]
        s = line.strip()
        if not s or s.startswith("#") or _HEADER_RE.match(line) or s.endswith((":", "(", "[", "{", ",", "\\")):
            continue
        if s.startswith((")", "]", "}")):
            continue
        out.append(i)
    return out


def duplicate_statement(src: Source, rng: np.random.Generator) -> Edit | None:
    """Repeat a simple statement (an update applied twice, a refinement step run again)."""
    cands = _simple_statements(src)
    if not cands:
        return None
    i = cands[int(rng.integers(len(cands)))]
    return Edit(i, i + 1, (src.lines[i], src.lines[i]), f"repeat the statement on line {i + 1}")


def delete_statement(src: Source, rng: np.random.Generator) -> Edit | None:
    """Drop a simple statement (never the only statement of its block)."""
    cands = []
    for i in _simple_statements(src):
        ind = len(src.lines[i]) - len(src.lines[i].lstrip())
        prev_header = i > 0 and src.lines[i - 1].rstrip().endswith(":")
        nxt = next((src.lines[k] for k in range(i + 1, len(src.lines)) if src.lines[k].strip()), "")
        next_same = nxt and (len(nxt) - len(nxt.lstrip())) >= ind
        if prev_header and not next_same:
            continue  # the block would become empty
        cands.append(i)
    if not cands:
        return None
    i = cands[int(rng.integers(len(cands)))]
    return Edit(i, i + 1, (), f"delete the statement on line {i + 1}")


# ---- list displays ---------------------------------------------------------------------------

_LIST_RE = re.compile(r"\[\s*-?\d[\d.eE+-]*(?:\s*,\s*-?\d[\d.eE+-]*)*\s*,?\s*\]")


def edit_list(src: Source, rng: np.random.Generator) -> Edit | None:
    """Vary, insert or delete one element of a one-line list display of numbers (``[0, 1, 3]``)."""
    cands = [(i, m) for i in src.editable for m in _LIST_RE.finditer(src.lines[i])]
    if not cands:
        return None
    i, m = cands[int(rng.integers(len(cands)))]
    items = [s.strip() for s in m.group(0)[1:-1].split(",") if s.strip()]
    try:
        values = [float(s) for s in items]
    except ValueError:
        return None
    ints = all(re.fullmatch(r"-?\d+", s) for s in items)
    r = rng.random()
    if r < 0.6:  # vary one element: keeps the length, which code indexing the list relies on
        k = int(rng.integers(len(items)))
        if ints:
            new = str(int(values[k]) + int(rng.choice([-2, -1, 1, 2])))
        else:
            new, digits = _jitter(values[k], rng, 0.5, items[k])
            new = _format_float(new, digits)
        if new == items[k]:
            return None
        new_items = items[:k] + [new] + items[k + 1 :]
        what = f"change element {items[k]} -> {new} of the list on line {i + 1}"
    elif len(items) > 1 and r < 0.75:
        k = int(rng.integers(len(items)))
        new_items = items[:k] + items[k + 1 :]
        what = f"drop element {items[k]} from the list on line {i + 1}"
    else:
        k = int(rng.integers(len(items) + 1))
        ref = values[min(k, len(values) - 1)]
        spread = (max(values) - min(values)) if len(values) > 1 else abs(ref) or 1.0
        if ints:
            new = str(int(round(ref + rng.integers(1, max(2, int(spread // 4) + 2)) * (1 if rng.random() < 0.7 else -1))))
        else:
            new = _format_float(ref + float(rng.normal(0, 0.1 * spread)), 4)
        new_items = items[:k] + [new] + items[k:]
        what = f"insert {new} into the list on line {i + 1}"
    line = src.lines[i]
    new_line = line[: m.start()] + "[" + ", ".join(new_items) + "]" + line[m.end() :]
    return Edit(i, i + 1, (new_line,), what)
