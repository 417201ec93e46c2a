"""The evolution loop end to end: penalty classes, persistence, the builtin operator's progress."""
from __future__ import annotations

import sqlite3
import textwrap

import pytest

from evoforge.engine import Engine, build_config
from evoforge.llm.base import BACKENDS
from evoforge.tasks.base import Direction, Task, Verdict

TOY_PROGRAM = textwrap.dedent(
    """\
    def solve():
        x = 1.0
        return [x, 2.0]
    """
)


def _toy_verify(obj):
    if not isinstance(obj, list) or len(obj) != 2:
        return Verdict.reject("expected a list of two numbers")
    x, y = obj
    if x < 0:
        return Verdict.reject(f"x must be non-negative, got {x}")
    return Verdict.accept(x + y)


def toy_task() -> Task:
    return Task(name="toy", description="Maximise x + y with x >= 0.", initial_program=TOY_PROGRAM,
                direction=Direction.MAX, verify=_toy_verify, time_limit=5.0)


def diff(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def test_every_penalty_class_is_recorded_with_its_score(tmp_path, pool):
    responses = [
        "I would rather not change anything.",  # no block: -0.4
        diff("    x = 1.0", "    x = 1.0  # same"),  # only a comment: -0.3
        diff("    x = 1.0", "    x = 1.0 +"),  # syntax error: -0.2
        diff("    x = 1.0", "    x = -5.0"),  # verifier rejects: -0.1
        diff("    x = 1.0", "    x = 3.0"),  # evaluated: 5.0
        diff("    x = 1.0", "    x = 3.0"),  # the same child again in the batch: -0.3
    ]
    backend = BACKENDS.get("scripted")(responses=responses)
    cfg = build_config(task="toy", budget=10, batch_size=1, n=6, max_steps=1, selector="greedy")
    summary = Engine(cfg, tmp_path, task=toy_task(), backend=backend, executor=pool).run()
    db = sqlite3.connect(tmp_path / "run.db")
    rows = db.execute("SELECT resp, child_class, reward, score FROM children WHERE step = 1 ORDER BY resp").fetchall()
    assert [(r[1], r[2]) for r in rows] == [
        ("no_diff", -0.4), ("unchanged", -0.3), ("no_solution", -0.2), ("invalid", -0.1),
        ("evaluated", 5.0), ("unchanged", -0.3),
    ]
    assert summary["best_score"] == 5.0
    assert summary["classes"]["evaluated"] == 2  # the seed and the improved child
    assert summary["evaluated"] == 4  # seed + syntax error + invalid + improved


def test_initial_program_that_fails_is_one_clear_error(tmp_path, pool):
    from evoforge.engine import EngineError

    task = toy_task()
    task.initial_program = "def solve():\n    return [-1.0, 0.0]\n"
    backend = BACKENDS.get("scripted")(responses=["nothing"])
    with pytest.raises(EngineError, match="initial program"):
        Engine(build_config(task="toy", budget=5), tmp_path, task=task, backend=backend, executor=pool).run()


def test_builtin_operator_improves_circle_packing(tmp_path, pool):
    """The issue's floor: 300 evaluations from the naive program (0.96) reach at least 1.3."""
    cfg = build_config(task="circle-packing-26", budget=300, seed=0)
    summary = Engine(cfg, tmp_path, executor=pool).run()
    assert summary["initial_score"] == pytest.approx(0.9597642, abs=1e-6)
    assert summary["best_score"] >= 1.3, summary
    assert (tmp_path / "best_program.py").is_file()
    assert (tmp_path / "best_object.json").is_file()
