"""Canonical form of a program: equal for programs that differ only in comments, docstrings,
blank lines or formatting. Used for the "unchanged" early check on every child, so it is cheap:
one ``ast.parse`` + ``ast.unparse`` (about a millisecond for a 100-line program)."""
from __future__ import annotations

import ast
import hashlib
import io
import tokenize

_DOC_OWNERS = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


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
    """A short hex digest of :func:`canonical_code`."""
    return hashlib.blake2b(canonical_code(code).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


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
