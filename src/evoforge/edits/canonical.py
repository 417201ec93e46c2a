"""Canonical form of a program: equal for programs that differ only in comments, docstrings,
blank lines or formatting.

:func:`canonical_hash` runs on every child (the "unchanged" early check), so it does not build
text: it hashes a compact serialisation of the syntax tree (node names, field names, literal
values; bare string statements dropped), which costs ``ast.parse`` plus about half of that again
(roughly 3x cheaper than ``ast.unparse``). The serialisation skips empty fields, so nodes that later
Python versions grow (``type_params`` in 3.12, ...) do not change the hash: the same source
hashes the same on Python 3.10 to 3.13. :data:`HASH_SCHEME` names the scheme; a store that keeps
hashes should re-hash its programs when it changes."""
from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from typing import Any

HASH_SCHEME = "ast-v2"  # bumped whenever canonical_hash of some program changes
# Fields that never change what a program does: ctx follows from the syntax, kind is the u"" prefix.
_SKIPPED_FIELDS = frozenset({"ctx", "type_comment", "kind"})
_LAYOUT: dict[type, tuple[str, tuple[str, ...]]] = {}


def canonical_code(code: str) -> str:
    """The program with comments, docstrings and formatting normalised away."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _token_canonical(code)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        # Bare string statements (docstrings, string "comments") do nothing: drop them all.
        kept = [s for s in body if not _is_bare_string(s)]
        if len(kept) != len(body):
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
    try:
        return ast.unparse(tree)
    except (ValueError, RecursionError):  # pragma: no cover - exotic trees
        return _token_canonical(code)


def canonical_hash(code: str) -> str:
    """A short hex digest: equal exactly when :func:`canonical_code` is (scheme :data:`HASH_SCHEME`)."""
    try:
        tree = ast.parse(code)
        out: list[str] = []
        _serialise(tree, out)
        text = "\x00".join(out)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        text = "tokens\x00" + _token_canonical(code)  # the prefix keeps the two kinds apart
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _layout(cls: type) -> tuple[str, tuple[str, ...]]:
    layout = _LAYOUT[cls] = (cls.__name__, tuple(f for f in cls._fields if f not in _SKIPPED_FIELDS))  # type: ignore[attr-defined]
    return layout


def _serialise(node: ast.AST, out: list[str]) -> None:
    """Bracketed, unambiguous pre-order dump: name, then (field, value) for each non-empty field, then ')'.

    Absent (None) and empty-list fields are skipped, so fields added by newer Pythons with empty
    defaults leave the output unchanged; the closing ')' keeps optional fields from being read
    as the parent's.
    """
    name, fields = _LAYOUT.get(node.__class__) or _layout(node.__class__)
    out.append(name)
    for f in fields:
        v = getattr(node, f, None)
        if v is None:
            continue
        out.append(f)
        if isinstance(v, ast.AST):
            _serialise(v, out)
        elif isinstance(v, list):
            if not v:
                out.pop()
                continue
            out.append("[")
            if isinstance(v[0], ast.stmt):
                kept = [s for s in v if not _is_bare_string(s)]
                if not kept:
                    out.append("Pass\x00)")  # like canonical_code: a docstring-only body becomes pass
                for s in kept:
                    _serialise(s, out)
            else:
                for x in v:
                    if isinstance(x, ast.AST):
                        _serialise(x, out)
                    else:
                        out.append(_scalar(x))  # None in Dict.keys, names in Global
            out.append("]")
        else:
            out.append(_scalar(v))
    out.append(")")


def _scalar(v: Any) -> str:
    # hex: decimal str() of a huge int literal raises ValueError (int_max_str_digits); bool stays 'True'
    return hex(v) if type(v) is int else repr(v)


def _is_bare_string(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _token_canonical(code: str) -> str:
    """Fallback for code that does not parse: tokens without comments and layout.

    Tokenizing stops at the first error (an unclosed bracket at EOF, a bad dedent); the lines
    after the last good token are then normalised line by line.
    """
    out: list[str] = []
    last_row = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER):
                continue
            last_row = tok.end[0]
            if tok.type == tokenize.NEWLINE:
                out.append("\n")
            elif tok.type == tokenize.INDENT:
                out.append("<indent>")
            elif tok.type == tokenize.DEDENT:
                out.append("<dedent>")
            else:
                out.append(tok.string)
        return " ".join(out)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        rest = code.splitlines()[last_row:]
        lines = (" ".join(line.split("#", 1)[0].split()) for line in rest)
        return " ".join(out) + "\n<rest>\n" + "\n".join(line for line in lines if line)
