"""Task directories: the evoforge layout (task.toml / task.yaml) and OpenEvolve's layout."""
from __future__ import annotations

from pathlib import Path

import pytest

from evoforge.tasks import Direction, TaskError, builtin_names, get_task

PROGRAM = """import numpy as np
# EVOLVE-BLOCK-START
def solve():
    return [1.0, 2.0]
# EVOLVE-BLOCK-END
"""
EVALUATOR = """import importlib.util
def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("p", program_path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return {"combined_score": float(sum(mod.solve())), "length": 2}
"""


def make_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    d = tmp_path / "my-task"
    d.mkdir()
    for name, text in files.items():
        (d / name).write_text(text)
    return d


def test_evoforge_toml_manifest(tmp_path):
    d = make_dir(tmp_path, {
        "task.toml": """
name = "sum-two"
description = "Make the sum small."
direction = "min"
time_limit = 12.5
memory_mb = 512
object_kind = "step_function"
initial_score = 3.0
best_human = { value = 1.0, source = "folklore" }
best_ai = 0.5
cascade_thresholds = [0.5, 0.9]
[shaping]
lower = 0.0
upper = 3.0
alpha = 2
[params]
n = 2
""",
        "initial_program.py": PROGRAM,
        "evaluator.py": EVALUATOR,
    })
    t = get_task(str(d))
    assert t.name == "sum-two" and t.direction is Direction.MIN and t.verify is None
    assert t.evaluator_path == (d / "evaluator.py").resolve()
    assert t.time_limit == 12.5 and t.memory_mb == 512 and t.evolve_blocks
    assert t.best_human.value == 1.0 and t.best_human.source == "folklore" and t.best_ai.value == 0.5
    assert t.target == 0.5 and t.initial_score == 3.0
    assert t.shaping.alpha == 2.0 and t.shaping.k == 3.0
    assert t.params == {"n": 2, "cascade_thresholds": [0.5, 0.9]}
    assert t.initial_program == PROGRAM


def test_evoforge_yaml_manifest_defaults(tmp_path):
    d = make_dir(tmp_path, {"task.yaml": "description: hello\n", "initial_program.py": "def solve():\n    return 1\n",
                            "evaluator.py": EVALUATOR})
    t = get_task(d)
    assert t.name == "my-task" and t.direction is Direction.MAX and not t.evolve_blocks and t.time_limit == 60.0


@pytest.mark.parametrize(
    "manifest, words",
    [
        ("name = ", "malformed manifest"),
        ('direction = "up"', "direction must be 'max' or 'min'"),
        ('colour = "red"', "unknown key(s) colour"),
        ("time_limit = -1", "positive"),
        ('time_limit = "fast"', "must be a number"),
        ("[shaping]\nlower = 1\nupper = 0", "upper > lower"),
        ('best_ai = "great"', "best_ai"),
    ],
)
def test_bad_manifests(tmp_path, manifest, words):
    d = make_dir(tmp_path, {"task.toml": manifest, "initial_program.py": PROGRAM, "evaluator.py": EVALUATOR})
    with pytest.raises(TaskError) as err:
        get_task(d)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_yaml_that_is_not_a_table(tmp_path):
    d = make_dir(tmp_path, {"task.yaml": "- a\n- b\n", "initial_program.py": PROGRAM, "evaluator.py": EVALUATOR})
    with pytest.raises(TaskError, match="table of keys"):
        get_task(d)


def test_missing_and_broken_files(tmp_path):
    d = make_dir(tmp_path, {"task.toml": "", "initial_program.py": PROGRAM})
    with pytest.raises(TaskError, match="evaluator not found"):
        get_task(d)
    (d / "evaluator.py").write_text("def score(path):\n    return {}\n")
    with pytest.raises(TaskError, match="no evaluate"):
        get_task(d)
    (d / "evaluator.py").write_text("def evaluate(path)\n    return {}\n")
    with pytest.raises(TaskError, match="does not compile"):
        get_task(d)
    (d / "evaluator.py").write_text(EVALUATOR)
    (d / "initial_program.py").write_text("def solve(:\n")
    with pytest.raises(TaskError, match="initial program does not compile"):
        get_task(d)


def test_openevolve_layout_with_config(tmp_path):
    d = make_dir(tmp_path, {
        "initial_program.py": PROGRAM,
        "evaluator.py": EVALUATOR + "\ndef evaluate_stage1(p):\n    return {'combined_score': 1.0}\n",
        "config.yaml": """
max_iterations: 100
llm:
  models: [{name: gpt, weight: 1.0}]
prompt:
  system_message: |
    You are an expert. Pack circles.
  some_future_key: 3
evaluator:
  timeout: 90
  cascade_evaluation: true
  cascade_thresholds: [0.5, 0.75]
""",
    })
    t = get_task(d)
    assert t.name == "my-task" and t.direction is Direction.MAX and t.verify is None
    assert t.description == "You are an expert. Pack circles."
    assert t.time_limit == 90 and t.params["cascade_thresholds"] == [0.5, 0.75]
    assert t.evaluator_path.name == "evaluator.py" and t.evolve_blocks


def test_openevolve_layout_without_config_and_thetaevolve_prompt_list(tmp_path):
    d = make_dir(tmp_path, {"initial_program.py": PROGRAM, "evaluator.py": EVALUATOR})
    t = get_task(d)
    assert "combined_score" in t.description
    assert t.params["cascade_thresholds"] == [0.5, 0.75, 0.9] and t.time_limit == 300  # OpenEvolve's defaults
    (d / "config.yaml").write_text("prompt:\n  system_message_list:\n    - message: first prompt\n      weight: 0.5\n")
    assert get_task(d).description == "first prompt"
    (d / "config.yaml").write_text("prompt: [unclosed\n")
    with pytest.raises(TaskError, match="malformed manifest"):
        get_task(d)


def test_not_a_task_directory(tmp_path):
    d = make_dir(tmp_path, {"README.md": "hi"})
    with pytest.raises(TaskError, match="missing initial_program.py and evaluator.py"):
        get_task(d)


def test_unknown_name_lists_builtins_and_file_is_not_a_task(tmp_path):
    with pytest.raises(TaskError) as err:
        get_task("circle-packing-27")
    msg = str(err.value)
    assert "unknown task 'circle-packing-27'" in msg and all(n in msg for n in builtin_names())
    f = tmp_path / "x.py"
    f.write_text("")
    with pytest.raises(TaskError, match="is a file"):
        get_task(f)
    assert issubclass(TaskError, ValueError)
