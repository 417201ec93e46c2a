from __future__ import annotations

from pathlib import Path

import pytest

from evoforge.edits import ApplyResult, EditBlock, NoEditFound, apply_edits, canonical_code, canonical_hash, parse_edits

PROG = """import numpy as np


# EVOLVE-BLOCK-START
def build():
    x = 0.5
    for i in range(8):
        x = x + 0.1 * i
    return x
# EVOLVE-BLOCK-END


def solve():
    return build()
"""


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE"


def test_parse_several_blocks_inside_fences_and_prose():
    text = "Idea: tweak.\n```python\n" + block("    x = 0.5", "    x = 0.6") + "\n```\nand\n" + block("a", "b")
    blocks = parse_edits(text)
    assert blocks == [EditBlock("    x = 0.5", "    x = 0.6"), EditBlock("a", "b")]


def test_parse_keeps_multiline_sections_and_empty_replace():
    blocks = parse_edits("<<<<<<< SEARCH\nl1\nl2\n=======\n>>>>>>> REPLACE\n")
    assert blocks == [EditBlock("l1\nl2", "")]


def test_parse_without_block_raises():
    with pytest.raises(NoEditFound, match="no SEARCH/REPLACE block"):
        parse_edits("I think the program is fine.")


def test_parse_full_mode_takes_the_python_fence():
    text = "Here:\n```python\nprint(1)\nprint(2)\n```\n"
    (b,) = parse_edits(text, mode="full")
    assert b.full and b.replace == "print(1)\nprint(2)\n"
    with pytest.raises(NoEditFound):
        parse_edits("no code here", mode="full")
    with pytest.raises(ValueError, match="unknown edit mode"):
        parse_edits("x", mode="patch")


def test_apply_exact_and_sequential():
    blocks = parse_edits(block("    x = 0.5", "    x = 0.7") + "\n" + block("    x = 0.7", "    x = 0.9"))
    res = apply_edits(PROG, blocks)
    assert isinstance(res, ApplyResult)
    assert res.applied == 2 and res.failures == [] and "    x = 0.9\n" in res.code
    assert res.code.replace("0.9", "0.5") == PROG


def test_apply_tolerates_trailing_whitespace_and_reindents():
    # The model quoted the loop with no indentation: match, then re-indent the replacement.
    res = apply_edits(PROG, parse_edits(block("for i in range(8):  \n    x = x + 0.1 * i", "for i in range(9):\n    x = x - i")))
    assert res.failures == []
    assert "    for i in range(9):\n        x = x - i\n" in res.code
    # The opposite direction: quoted with extra indentation.
    res = apply_edits(PROG, parse_edits(block("            return x", "            return 2 * x")))
    assert res.failures == [] and "    return 2 * x\n" in res.code


def test_apply_rejects_inconsistent_indentation():
    res = apply_edits(PROG, parse_edits(block("for i in range(8):\nx = x + 0.1 * i", "pass")))
    assert res.applied == 0
    assert res.failures == ["block 1: SEARCH text not found (first line: 'for i in range(8):')"]


def test_not_found_is_reported_with_block_number_and_partial_result_kept():
    text = block("    x = 0.5", "    x = 0.25") + "\n" + block("    y = 3", "    y = 4")
    res = apply_edits(PROG, parse_edits(text))
    assert res.applied == 1 and "x = 0.25" in res.code
    assert res.failures == ["block 2: SEARCH text not found (first line: 'y = 3')"]


def test_ambiguous_search_is_rejected():
    code = "a = 1\nb = 2\na = 1\n"
    res = apply_edits(code, parse_edits(block("a = 1", "a = 5")))
    assert res.applied == 0 and res.code == code
    assert "matches 2 places (lines 1, 3" in res.failures[0]


def test_empty_search_is_a_failure():
    res = apply_edits(PROG, [EditBlock("", "x")])
    assert res.applied == 0 and "SEARCH section is empty" in res.failures[0]


def test_evolve_blocks_reject_outside_edits():
    outside = parse_edits(block("    return build()", "    return 1.0"))
    res = apply_edits(PROG, outside, evolve_blocks=True)
    assert res.applied == 0 and "outside the EVOLVE-BLOCK regions" in res.failures[0]
    assert apply_edits(PROG, outside, evolve_blocks=False).applied == 1
    inside = apply_edits(PROG, parse_edits(block("    x = 0.5", "    x = 0.4")), evolve_blocks=True)
    assert inside.applied == 1
    removes_marker = apply_edits(PROG, parse_edits(block("    return x\n# EVOLVE-BLOCK-END", "    return x")), evolve_blocks=True)
    assert removes_marker.applied == 0 and removes_marker.failures


def test_evolve_blocks_ignored_when_program_has_no_markers():
    code = "def solve():\n    return 1\n"
    res = apply_edits(code, parse_edits(block("    return 1", "    return 2")), evolve_blocks=True)
    assert res.applied == 1 and res.code == "def solve():\n    return 2\n"


def test_full_rewrite_respects_evolve_blocks():
    good = PROG.replace("x = 0.5", "x = 0.3")
    assert apply_edits(PROG, [EditBlock("", good, full=True)], evolve_blocks=True).code == good
    bad = PROG.replace("return build()", "return 3")
    res = apply_edits(PROG, [EditBlock("", bad, full=True)], evolve_blocks=True)
    assert res.applied == 0 and "outside the EVOLVE-BLOCK" in res.failures[0]


def test_canonical_hash_ignores_comments_docstrings_and_formatting():
    variant = '''import numpy as np
# a comment


# EVOLVE-BLOCK-START
def build( ):
    """Docstring."""
    x=0.5   # half
    for i in range( 8 ):

        x = x + 0.1*i
    return (x)
# EVOLVE-BLOCK-END
def solve():
    "another docstring"
    return build()
'''
    assert canonical_hash(variant) == canonical_hash(PROG)
    assert canonical_hash(PROG.replace("0.5", "0.50001")) != canonical_hash(PROG)
    assert canonical_hash(PROG.replace("range(8)", "range(9)")) != canonical_hash(PROG)


def test_canonical_hash_of_code_that_does_not_parse():
    broken = "def f(:\n    return 1  # c\n"
    assert canonical_hash(broken) == canonical_hash("def f(:\n\n    return 1\n")
    assert canonical_hash(broken) != canonical_hash("def f(:\n    return 2\n")
    assert isinstance(canonical_code("'''unterminated"), str)


def test_docstring_only_function_stays_valid():
    assert canonical_code('def f():\n    """doc"""\n') == "def f():\n    pass"


def test_context_lines_may_quote_markers_but_changes_stay_inside():
    ok = apply_edits(PROG, parse_edits(block("# EVOLVE-BLOCK-START\ndef build():", "# EVOLVE-BLOCK-START\ndef build(scale=1):")), evolve_blocks=True)
    assert ok.applied == 1 and "def build(scale=1):" in ok.code
    bad = apply_edits(PROG, parse_edits(block("# EVOLVE-BLOCK-END\n\n\ndef solve():", "# EVOLVE-BLOCK-END\n\n\ndef solve(x=2):")), evolve_blocks=True)
    assert bad.applied == 0 and "outside the EVOLVE-BLOCK regions" in bad.failures[0]
    # a pure insertion just inside the region is fine; just before it is not
    ins = apply_edits(PROG, parse_edits(block("    return x\n# EVOLVE-BLOCK-END", "    return x\nZ = 1\n# EVOLVE-BLOCK-END")), evolve_blocks=True)
    assert ins.applied == 1
    before = apply_edits(PROG, parse_edits(block("import numpy as np", "import numpy as np\nimport os")), evolve_blocks=True)
    assert before.applied == 0


def test_crlf_responses():
    res = apply_edits(PROG, parse_edits(block("    x = 0.5", "    x = 0.6").replace("\n", "\r\n")))
    assert res.applied == 1 and "\r" not in res.code


def test_canonical_hash_agrees_with_canonical_code_on_mutants():
    # The fast hash must define the same equivalence as the canonical text it replaced.
    import numpy as np

    from evoforge.llm.builtin import BuiltinMutator

    base = (Path(__file__).resolve().parents[1] / "src/evoforge/tasks/programs/circle_packing.py").read_text()
    m = BuiltinMutator(seed=0)
    codes = [base, base.replace("\n\n", "\n"), "# c\n" + base]
    for s in range(40):
        text = m.mutate(base, np.random.default_rng(s)).text
        if "SEARCH" in text:
            codes.append(apply_edits(base, parse_edits(text)).code)
    by_code: dict[str, str] = {}
    for c in codes:
        by_code.setdefault(canonical_code(c), canonical_hash(c))
        assert by_code[canonical_code(c)] == canonical_hash(c)
    assert len(set(by_code.values())) == len(by_code) > 5


def test_canonical_hash_keeps_optional_fields_apart_and_handles_odd_literals():
    # Without an end marker `x: (yield) = 5` and `x: (yield 5)` would serialise alike.
    assert canonical_hash("def f():\n    x: (yield) = 5\n") != canonical_hash("def f():\n    x: (yield 5)\n")
    assert canonical_hash("def f(): return\n") != canonical_hash("def f(): return None\n")
    assert canonical_hash("x = 1\n") != canonical_hash("x = True\n") != canonical_hash("x = 1.0\n")
    assert canonical_hash("x = -0.0\n") != canonical_hash("x = 0.0\n")
    big = "x = " + "9" * 5000 + "\n"  # str() of this int is refused by int_max_str_digits
    assert canonical_hash(big) != canonical_hash(big.replace("9", "8", 1))
    deep = "x = " + "+".join(["1"] * 3000) + "\n"  # deeper than the recursion limit: falls back to tokens
    assert canonical_hash(deep) == canonical_hash(deep.replace("+", " + "))
    assert canonical_hash(deep) != canonical_hash(deep.replace("1", "2", 1))
    assert canonical_hash('def f():\n    "only a docstring"\n') == canonical_hash("def f():\n    pass\n")
