"""Edits: parse SEARCH/REPLACE (or full-rewrite) responses, apply them, canonicalise programs."""
from evoforge.edits.canonical import canonical_code, canonical_hash
from evoforge.edits.diff import (
    EVOLVE_END,
    EVOLVE_START,
    ApplyResult,
    EditBlock,
    NoEditFound,
    apply_edits,
    evolve_regions,
    parse_edits,
)

__all__ = [
    "EVOLVE_END",
    "EVOLVE_START",
    "ApplyResult",
    "EditBlock",
    "NoEditFound",
    "apply_edits",
    "canonical_code",
    "canonical_hash",
    "evolve_regions",
    "parse_edits",
]
