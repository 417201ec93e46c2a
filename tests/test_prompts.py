from __future__ import annotations

import re
from pathlib import Path

import pytest

from evoforge.database.base import Pick, Program
from evoforge.prompts import TEMPLATE_NAMES, PromptBuilder, TemplateError
from evoforge.tasks.base import Direction, KnownValue, Task

PARENT = "# EVOLVE-BLOCK-START\ndef solve():\n    return [1, 2]\n# EVOLVE-BLOCK-END\n"
PARTNER = "def solve():\n    return [3, 4]\n"


def make_task(**kw) -> Task:
    base = dict(name="toy-sum", description="Return a list with a large sum.", initial_program=PARENT,
                direction=Direction.MAX, best_human=KnownValue(10.0, "folklore"), evolve_blocks=True)
    base.update(kw)
    return Task(**base)


def prog(pid: int, code: str, score: float, **kw) -> Program:
    return Program(pid, code, score, score, **kw)


def last_python_block(text: str) -> str:
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)[-1]


def test_parent_only_prompt_has_meta_parent_results_and_instruction():
    parent = prog(7, PARENT, 3.0, metrics={"n": 2}, feedback="stdout:\nhello")
    p = PromptBuilder(make_task()).build(Pick(parent, inspirations=[prog(1, PARTNER, 7.0)]))
    assert "Return a list with a large sum." in p.text and "toy-sum" in p.text
    assert "maximise" in p.text and "10" in p.text
    assert "Score: 3" in p.text and '"n": 2' in p.text and "hello" in p.text
    assert last_python_block(p.text).strip() == PARENT.strip()
    assert "<<<<<<< SEARCH" in p.text and "EVOLVE-BLOCK-START and EVOLVE-BLOCK-END" in p.text
    assert "return [3, 4]" not in p.text  # parent-only is the default: no inspirations shown
    assert p.parent_code == PARENT and p.inspirations == [] and p.partner_code is None
    assert p.meta == {"task": "toy-sum", "direction": "max", "parent_id": 7, "parent_score": 3.0,
                      "target": 10.0, "mode": "diff", "evolve_blocks": True}
    assert p.system


def test_inspirations_shown_when_asked():
    pick = Pick(prog(2, PARENT, 3.0), inspirations=[prog(1, PARTNER, 7.0)])
    p = PromptBuilder(make_task(), show_inspirations=True).build(pick)
    assert "Prior program 1" in p.text and "return [3, 4]" in p.text
    assert p.inspirations == [PARTNER]
    assert last_python_block(p.text).strip() == PARENT.strip()  # the parent stays last


def test_crossover_shows_both_parents_parent_last():
    p = PromptBuilder(make_task()).build(Pick(prog(2, PARENT, 3.0), partner=prog(5, PARTNER, 4.0)))
    assert "Second parent" in p.text and "Combine" in p.text
    assert p.text.index("return [3, 4]") < p.text.index("return [1, 2]")
    assert p.partner_code == PARTNER
    assert last_python_block(p.text).strip() == PARENT.strip()


def test_full_mode_and_min_direction():
    task = make_task(direction=Direction.MIN, best_human=None, evolve_blocks=False)
    p = PromptBuilder(task, mode="full").build(Pick(prog(0, PARENT, 3.0)))
    assert "complete new program" in p.text and "minimise" in p.text and "unknown" in p.text
    assert "EVOLVE-BLOCK-START and" not in p.text
    with pytest.raises(ValueError, match="unknown prompt mode"):
        PromptBuilder(task, mode="patch")


def test_template_override(tmp_path: Path):
    (tmp_path / "user.txt").write_text("TASK=$task_name\n$parent\nDO: $instruction\n")
    (tmp_path / "system.txt").write_text("be brief")
    p = PromptBuilder(make_task(), template_dir=tmp_path).build(Pick(prog(0, PARENT, 1.0)))
    assert p.text.startswith("TASK=toy-sum") and "DO: # Instruction" in p.text and p.system == "be brief"
    assert set(TEMPLATE_NAMES) >= {"user.txt", "system.txt"}


def test_bad_template_gives_one_clear_error(tmp_path: Path):
    (tmp_path / "user.txt").write_text("$nonsense")
    with pytest.raises(TemplateError, match=r"template user.txt uses \$nonsense"):
        PromptBuilder(make_task(), template_dir=tmp_path).build(Pick(prog(0, PARENT, 1.0)))
    with pytest.raises(TemplateError, match="template directory not found"):
        PromptBuilder(make_task(), template_dir=tmp_path / "missing")


def test_dollar_signs_in_code_and_description_are_safe():
    task = make_task(description="Costs $5 and ${x}.")
    p = PromptBuilder(task).build(Pick(prog(0, "s = '$a ${b}'\n", 1.0)))
    assert "Costs $5 and ${x}." in p.text and "s = '$a ${b}'" in p.text
