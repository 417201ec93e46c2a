"""GBNF grammars for the memory's answers, so a constrained backend can only answer in format.

Sent as ``Prompt.meta["grammar"]`` (the llamacpp backend decodes under it; the openai backend
passes it to servers with structured outputs; others ignore it). Idea ids are spelled out as
alternatives, so select / classify / prune can only name ideas that exist. What a grammar
cannot promise (distinct ids, a length limit in characters) the parsers still check. Only
``*``, ``+``, ``?`` and alternation are used, as in evoforge.edits.grammar.
"""
from __future__ import annotations

from typing import Iterable

from evoforge.edits.grammar import gbnf_literal

_TEXT = 'text ::= [^\\n] [^\\n]*\n'


def _ids(name: str, ids: Iterable[int]) -> str:
    return f"{name} ::= " + " | ".join(gbnf_literal(str(i)) for i in sorted(set(ids))) + "\n"


def _optional_chain(item: str, count: int) -> str:
    """``item (item (item)?)?``: one to ``count`` items."""
    chain = item
    for _ in range(count - 1):
        chain = f"{item} ({chain})?"
    return chain


def propose(count: int) -> str:
    return f"root ::= {_optional_chain('idea', count)}\nidea ::= \"IDEA: \" text \"\\n\"\n{_TEXT}"


def select(count: int, ids: Iterable[int]) -> str:
    lines = " ".join(f'"{k}: #" id "\\n"' for k in range(1, count + 1))
    return f"root ::= {lines}\n{_ids('id', ids)}"


def classify(candidates: dict[int, list[int]]) -> str:
    rules, parts = [], []
    for row, ids in sorted(candidates.items()):
        parts.append(f"n{row}")
        rules.append(f'n{row} ::= "N{row + 1}: " ("NEW" | "MERGE #" id{row} ": " text) "\\n"')
        rules.append(_ids(f"id{row}", ids).rstrip("\n"))
    return "root ::= " + " ".join(parts) + "\n" + "\n".join(rules) + "\n" + _TEXT


def summarise(ids: Iterable[int], max_findings: int) -> str:
    more = " ".join(['("; " finding)?'] * (max_findings - 1))
    lines = " ".join(f'"#{i}: " finding {more} "\\n"' for i in sorted(set(ids)))
    return f"root ::= {lines}\nfinding ::= [^\\n;] [^\\n;]*\n"


def prune(count: int, ids: Iterable[int]) -> str:
    line = '"DROP #" id ": " ("useless" | "no potential" | "explored") ": " text "\\n"'
    return "root ::= " + " ".join([line] * count) + "\n" + _ids("id", ids) + _TEXT
