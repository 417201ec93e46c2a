"""Edit formats for small models: EVOLVE-BLOCK rewrite and the GBNF grammars (pure Python).

The grammars are checked without llama.cpp by a small GBNF interpreter (the subset the grammars
use): random responses drawn from a grammar must all parse and apply with no failure, and
responses outside it must not match.
"""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from evoforge.edits import apply_edits, parse_edits
from evoforge.edits.block import block_body
from evoforge.edits.diff import NoEditFound
from evoforge.edits.grammar import diff_grammar, gbnf_literal, grammar_for

PROGRAMS = Path(__file__).resolve().parents[1] / "src" / "evoforge" / "tasks" / "programs"
CP = (PROGRAMS / "circle_packing.py").read_text()


# ---- a tiny GBNF interpreter: parse -> (regex, random generator) --------------------------------
_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(\[(?:[^\]\\]|\\.)*\])|([A-Za-z][A-Za-z0-9-]*)|(\(|\)|\||\?|\*|\+|\{\d+,\d+\}))')


def _parse_rules(text: str) -> dict[str, list]:
    rules = {}
    for line in text.strip().splitlines():
        name, _, body = line.partition("::=")
        toks = []
        pos = 0
        while pos < len(body) and body[pos:].strip():
            m = _TOKEN.match(body, pos)
            assert m, f"cannot read {body[pos:]!r}"
            toks.append(next(g for g in m.groups() if g is not None))
            pos = m.end()
        rules[name.strip()] = toks
    return rules


def _decode_literal(lit: str) -> str:
    return bytes(lit[1:-1], "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")


class Gbnf:
    def __init__(self, text: str):
        self.rules = {k: self._expr(v, [0]) for k, v in _parse_rules(text).items()}
        self._re: dict[str, str] = {}

    def _expr(self, toks, i):  # alternation of sequences
        alts, seq = [], []
        while i[0] < len(toks) and toks[i[0]] != ")":
            t = toks[i[0]]
            i[0] += 1
            if t == "|":
                alts.append(seq)
                seq = []
                continue
            if t == "(":
                node = ("group", self._expr(toks, i))
                i[0] += 1  # ")"
            elif t.startswith('"'):
                node = ("lit", _decode_literal(t))
            elif t.startswith("["):
                node = ("cls", t)
            else:
                node = ("ref", t)
            while i[0] < len(toks) and (toks[i[0]] in "?*+" or toks[i[0]].startswith("{")):
                node = (toks[i[0]], node)
                i[0] += 1
            seq.append(node)
        alts.append(seq)
        return ("alt", alts)

    def regex(self, name: str = "root") -> re.Pattern:
        return re.compile(self._rx(("ref", name)), re.DOTALL)

    def _rx(self, node) -> str:
        kind = node[0]
        if kind == "alt":
            return "(?:" + "|".join("".join(self._rx(n) for n in seq) for seq in node[1]) + ")"
        if kind == "group":
            return self._rx(node[1])
        if kind == "lit":
            return re.escape(node[1])
        if kind == "cls":
            return node[1]
        if kind == "ref":
            if node[1] not in self._re:
                self._re[node[1]] = self._rx(self.rules[node[1]])
            return self._re[node[1]]
        return "(?:" + self._rx(node[1]) + ")" + kind

    def sample(self, rng: random.Random, name: str = "root") -> str:
        return self._gen(("ref", name), rng)

    def _gen(self, node, rng) -> str:
        kind = node[0]
        if kind == "alt":
            return "".join(self._gen(n, rng) for n in rng.choice(node[1]))
        if kind == "group":
            return self._gen(node[1], rng)
        if kind == "lit":
            return node[1]
        if kind == "cls":  # only negated classes of single characters are used
            banned = _decode_literal('"' + node[1][2:-1] + '"')
            return rng.choice([c for c in "abc xyz0123456789+-*/().,:=<>`" if c not in banned])
        if kind == "ref":
            return self._gen(self.rules[node[1]], rng)
        if kind.startswith("{"):
            lo, hi = map(int, kind[1:-1].split(","))
            reps = rng.randint(lo, min(hi, lo + 3))
        else:
            reps = {"?": rng.randint(0, 1), "*": rng.choice([0, 1, 2, 3]), "+": rng.choice([1, 2, 3])}[kind]
        return "".join(self._gen(node[1], rng) for _ in range(reps))


# ---- block rewrite --------------------------------------------------------------------------------
def test_block_rewrite_replaces_only_the_block_body():
    resp = "My idea:\n```python\ndef construct_packing():\n    return None, None\n```\nDone."
    res = apply_edits(CP, parse_edits(resp, mode="block"), evolve_blocks=True)
    assert res.ok and res.applied == 1
    before, after = CP.split("# EVOLVE-BLOCK-START")[0], CP.split("# EVOLVE-BLOCK-END")[1]
    assert res.code.startswith(before) and res.code.endswith(after)
    assert block_body(res.code) == "def construct_packing():\n    return None, None\n"


def test_block_rewrite_of_a_whole_program_keeps_the_parents_outside():
    """A model that answers with the whole program (and changed code outside) cannot touch it."""
    changed = CP.replace("import numpy as np", "import os").replace("n = 26", "n = 26  # new")
    res = apply_edits(CP, parse_edits(f"```python\n{changed}```", mode="block"), evolve_blocks=True)
    assert res.ok and "import numpy as np" in res.code and "import os" not in res.code
    assert "n = 26  # new" in res.code


def test_block_rewrite_unterminated_fence_and_longest_of_several():
    res = apply_edits(CP, parse_edits("```python\ndef construct_packing():\n    pass\n", mode="block"), True)
    assert res.ok and "    pass" in res.code
    two = "```python\nx = 1\n```\nand the block:\n```python\ndef construct_packing():\n    return 1, 2\n```"
    res = apply_edits(CP, parse_edits(two, mode="block"), True)
    assert res.ok and "return 1, 2" in res.code and "x = 1" not in res.code


def test_block_rewrite_errors_are_one_line():
    with pytest.raises(NoEditFound):
        parse_edits("no code here", mode="block")
    res = apply_edits(CP, parse_edits("```python\n# EVOLVE-BLOCK-END\nx = 1\n```", mode="block"), True)
    assert res.ok  # a stray marker line is dropped: the body is what remains
    two_regions = "a = 1\n# EVOLVE-BLOCK-START\nb = 2\n# EVOLVE-BLOCK-END\n# EVOLVE-BLOCK-START\nc = 3\n# EVOLVE-BLOCK-END\n"
    res = apply_edits(two_regions, parse_edits("```python\nb = 5\n```", mode="block"), True)
    assert res.applied == 0 and "2 EVOLVE-BLOCK regions" in res.failures[0]
    res = apply_edits(two_regions, parse_edits("```python\nb = 5\n```\n```python\nc = 6\n```", mode="block"), True)
    assert res.ok and "b = 5" in res.code and "c = 6" in res.code and res.code.startswith("a = 1\n")


def test_block_rewrite_without_markers_is_the_whole_program():
    res = apply_edits("x = 1\n", parse_edits("```python\nx = 2\n```", mode="block"), evolve_blocks=True)
    assert res.ok and res.code == "x = 2\n"


# ---- grammars -------------------------------------------------------------------------------------
def test_gbnf_literal_escapes():
    assert gbnf_literal('a"b\\c\nd\te') == '"a\\"b\\\\c\\nd\\te"'
    assert _decode_literal(gbnf_literal('x = "é"\\n\n')) == 'x = "é"\\n\n'


@pytest.mark.parametrize("program", ["circle_packing.py", "heilbronn_triangle.py", "ac1.py", "kissing.py"])
def test_every_response_of_the_diff_grammar_applies(program):
    code = (PROGRAMS / program).read_text()
    g = Gbnf(diff_grammar(code))
    rng = random.Random(0)
    for _ in range(60):
        resp = g.sample(rng)
        blocks = parse_edits(resp, mode="diff")
        res = apply_edits(code, blocks, evolve_blocks=True)
        # each block's SEARCH is unique and inside the block; later blocks see the edited program,
        # so only the first is guaranteed to apply
        assert res.applied >= 1 and not any("block 1:" in f for f in res.failures), (resp, res.failures)


def test_diff_grammar_admits_exactly_unique_runs_of_the_block():
    rx = Gbnf(diff_grammar(CP)).regex()

    def resp(search: str) -> str:
        return f"<<<<<<< SEARCH\n{search}=======\n    n = 27\n>>>>>>> REPLACE\n"

    assert rx.fullmatch(resp("    n = 26\n"))
    assert rx.fullmatch(resp("    n = 26\n    centers = np.zeros((n, 2))\n"))
    assert not rx.fullmatch(resp("    n = 25\n"))  # not a line of the program
    assert not rx.fullmatch(resp("import numpy as np\n"))  # outside the EVOLVE-BLOCK
    assert not rx.fullmatch(resp("    for i in range(n):\n"))  # occurs twice: ambiguous
    assert rx.fullmatch(resp("    for i in range(n):\n        x, y = centers[i]\n"))  # made unique
    assert not rx.fullmatch(resp("    n = 26\n    radii = np.ones(n)\n"))  # not consecutive
    assert not rx.fullmatch("Here is my edit:\n" + resp("    n = 26\n"))  # no prose
    assert rx.fullmatch(resp("    n = 26\n") * 2) and not rx.fullmatch(resp("    n = 26\n") * 4)
    cp_lines = CP.splitlines(keepends=True)
    start = cp_lines.index("    n = 26\n")
    assert rx.fullmatch(resp("".join(cp_lines[start : start + 5])))  # the unique line and 4 more
    assert not rx.fullmatch(resp("".join(cp_lines[start : start + 6])))  # a longer SEARCH is cut
    # REPLACE: at most the longest SEARCH from its start (1 + 4 lines here) plus 4 lines
    many = "<<<<<<< SEARCH\n    n = 26\n=======\n" + "    x = 1\n" * 10 + ">>>>>>> REPLACE\n"
    assert not rx.fullmatch(many) and rx.fullmatch(many.replace("    x = 1\n", "", 1))
    assert not rx.fullmatch(resp("    n = 26\n").replace("    n = 27", "# EVOLVE-BLOCK-END"))  # no markers
    assert not rx.fullmatch(resp("    n = 26\n").replace("    n = 27", "    n = " + "7" * 200))  # lines <= 200 chars


def test_block_and_full_grammars():
    rx = Gbnf(grammar_for("block", CP)).regex()
    assert rx.fullmatch("```python\ndef construct_packing():\n    return 1\n```")
    assert not rx.fullmatch("```python\ndef other():\n    return 1\n```")  # must start with the block's first line
    assert not rx.fullmatch("```python\ndef construct_packing():\n```\n```")  # one fence only
    g = Gbnf(grammar_for("block", CP))
    rng = random.Random(1)
    for _ in range(30):
        res = apply_edits(CP, parse_edits(g.sample(rng), mode="block"), evolve_blocks=True)
        assert res.ok
    assert Gbnf(grammar_for("full", CP)).regex().fullmatch("```python\nx = 1\n```")


def test_prompt_builder_attaches_the_grammar():
    from evoforge.database.base import Pick, Program
    from evoforge.prompts import PromptBuilder
    from evoforge.tasks import get_task

    task = get_task("circle-packing-26")
    parent = Program(id=1, code=task.initial_program, score=0.9, fitness=0.9)
    for mode in ("diff", "block", "full"):
        p = PromptBuilder(task, mode=mode, grammar=True).build(Pick(parent=parent))
        assert p.meta["grammar"] == grammar_for(mode, task.initial_program, task.evolve_blocks)
        assert p.meta["mode"] == mode
    p = PromptBuilder(task, mode="block").build(Pick(parent=parent))
    assert "grammar" not in p.meta and "EVOLVE-BLOCK-START and EVOLVE-BLOCK-END" in p.text


def test_early_check_runs_block_mode_through_the_same_dispatch():
    from evoforge.edits import canonical_hash
    from evoforge.engine.checks import early_check

    cand = early_check("```python\ndef construct_packing():\n    return 1\n```", "", CP, canonical_hash(CP), set(),
                       mode="block", evolve_blocks=True)
    assert cand.child_class is None and "return 1" in (cand.code or "")
