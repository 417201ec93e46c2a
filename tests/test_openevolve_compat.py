"""OpenEvolve compatibility (issue 10): config mapping, task loading, and the evaluator's world in the sandbox."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from evoforge.compat.openevolve_config import OE_THRESHOLDS, looks_like_openevolve, map_openevolve
from evoforge.sandbox.base import EvalRequest, Status
from evoforge.tasks import TaskError, get_task
from evoforge.tasks.evaluate import score_result
from evoforge.tasks.loader import TaskOverrides

PROGRAM = "# EVOLVE-BLOCK-START\ndef solve():\n    return 2.0\n# EVOLVE-BLOCK-END\n"
EVALUATOR = (
    "import importlib.util\n"
    "def evaluate(path):\n"
    "    spec = importlib.util.spec_from_file_location('p', path)\n"
    "    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
    "    return {'combined_score': m.solve()}\n"
)


def make_dir(root: Path, files: dict[str, str]) -> Path:
    d = root / "examples" / "nested" / "my-task"
    d.mkdir(parents=True)
    for name, text in files.items():
        (d / name).write_text(text)
    return d


# -- config mapping -------------------------------------------------------------------------
OE_YAML = {
    "max_iterations": 50, "checkpoint_interval": 10, "log_level": "INFO", "random_seed": 7,
    "diff_based_evolution": False, "made_up_key": 1,
    "llm": {"api_base": "http://127.0.0.1:9/v1", "api_key": "${MY_KEY}", "temperature": 0.5, "max_tokens": 999,
            "top_p": 0.9, "timeout": 30, "retries": 2,
            "models": [{"name": "small", "weight": 0.2}, {"name": "big", "weight": 0.8}]},
    "prompt": {"system_message": "Be clever.", "num_top_programs": 0, "num_diverse_programs": 0,
               "use_template_stochasticity": True, "include_artifacts": False},
    "database": {"population_size": 200, "archive_size": 20, "num_islands": 3, "db_path": "x", "in_memory": True},
    "evaluator": {"timeout": 45, "cascade_evaluation": False, "cascade_thresholds": [0.1], "parallel_evaluations": 3,
                  "max_retries": 2, "memory_limit_mb": 3000},
}


def test_map_openevolve_config():
    assert looks_like_openevolve(OE_YAML) and not looks_like_openevolve({"budget": 10, "selector": "puct"})
    m = map_openevolve(OE_YAML)
    assert m.run["budget"] == 51 and m.run["seed"] == 7 and m.run["workers"] == 3
    assert m.run["backend"] == {"name": "openai", "model": "big", "base_url": "http://127.0.0.1:9/v1",
                                "api_key_env": "MY_KEY",
                                "options": {"extra_body": {"top_p": 0.9}, "timeout": 30.0, "max_retries": 2}}
    assert m.run["temperature"] == 0.5 and m.run["max_tokens"] == 999
    assert m.run["prompt"] == {"edit_mode": "full", "show_inspirations": False}
    assert m.run["selector"] == "map-elites"
    assert m.run["selector_options"] == {"population_size": 200, "archive_size": 20, "num_islands": 3}
    assert m.task == {"time_limit": 45.0, "cascade": False, "cascade_thresholds": [0.1], "memory_mb": 3000,
                      "artifacts_in_prompt": False}
    ignored = [line.split(" (")[0] for line in m.ignored]
    assert len(ignored) == len(set(ignored))  # each listed once
    for key in ("checkpoint_interval", "log_level", "made_up_key", "llm.models",
                "prompt.use_template_stochasticity", "database.db_path", "database.in_memory", "evaluator.max_retries"):
        assert key in ignored, key
    assert any("not an OpenEvolve key" in line for line in m.ignored if line.startswith("made_up_key"))
    # every evoforge RunConfig accepts what the mapping produced
    from evoforge.engine.config import build_config

    cfg = build_config({**m.run, "task_options": m.task})
    assert cfg.budget == 51 and cfg.task_options["memory_mb"] == 3000


def test_literal_api_key_is_not_kept():
    m = map_openevolve({"llm": {"api_key": "sk-secret", "primary_model": "gpt"}})
    assert "sk-secret" not in repr(m.run) and any(line.startswith("llm.api_key") for line in m.ignored)
    assert m.run["backend"]["model"] == "gpt"


# -- loading --------------------------------------------------------------------------------
def test_openevolve_layout_defaults_and_config_star(tmp_path, monkeypatch):
    d = make_dir(tmp_path, {"initial_program.py": PROGRAM, "evaluator.py": EVALUATOR})
    monkeypatch.chdir(tmp_path)
    t = get_task(d)
    assert t.name == os.path.join("examples", "nested", "my-task")  # the path from where the user is
    assert t.time_limit == 300 and t.params["cascade"] is True and t.params["cascade_thresholds"] == OE_THRESHOLDS
    (d / "config_phase_1.yaml").write_text("evaluator:\n  timeout: 33\n  memory_limit_mb: 5000\n"
                                           "prompt:\n  system_message: phase one\n")
    (d / "config_phase_2.yaml").write_text("evaluator:\n  timeout: 99\n")
    t = get_task(d)
    assert (t.time_limit, t.memory_mb, t.description) == (33, 5000, "phase one")
    assert t.params["config_file"] == "config_phase_1.yaml"


def test_other_language_program_and_program_evaluator_pair(tmp_path, monkeypatch):
    d = make_dir(tmp_path, {"initial_program.rs": "fn main() { /* EVOLVE-BLOCK-START */ }\n", "evaluator.py": EVALUATOR})
    t = get_task(d)
    assert t.params["program_suffix"] == ".rs" and "fn main" in t.initial_program
    monkeypatch.chdir(d)
    pair = get_task(str(d / "initial_program.rs"), {"evaluator": str(d / "evaluator.py"), "time_limit": 5})
    assert pair.name == "my-task" and pair.time_limit == 5 and pair.evaluator_path == (d / "evaluator.py").resolve()
    with pytest.raises(TaskError, match="unknown key"):
        get_task(d, {"timeout": 3})


def test_task_env_declared_and_passed(monkeypatch):
    monkeypatch.setenv("EVOFORGE_T_PASSED", "yes")
    over = TaskOverrides.parse({"env": {"FIXED": 1}, "env_pass": ["EVOFORGE_T_PASSED", "EVOFORGE_T_UNSET"]})
    t = over.apply(get_task("circle-packing-26"))
    assert t.params["env"] == {"FIXED": "1", "EVOFORGE_T_PASSED": "yes"}


# -- the evaluator in the sandbox -----------------------------------------------------------
def _task(tmp_path: Path, evaluator: str, program: str = PROGRAM, **options):
    d = tmp_path / "pub" / "task"
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(tmp_path, 0o755)
    os.chmod(tmp_path / "pub", 0o755)
    os.chmod(d, 0o755)
    (d / "initial_program.py").write_text(program)
    (d / "evaluator.py").write_text(evaluator)
    (d / "data.txt").write_text("original\n")
    return get_task(d, options or None), d


def _run(pool, task, code=None):
    from evoforge.tasks.evaluate import request_for

    return score_result(task, pool.run_many([request_for(task, code or task.initial_program)])[0])


def test_evaluation_result_shim_artifacts_and_metrics(pool, tmp_path):
    task, _ = _task(tmp_path, (
        "from openevolve.evaluation_result import EvaluationResult\n"
        "def evaluate(path):\n"
        "    return EvaluationResult(metrics={'combined_score': 0.5, 'note': 'text value', 'ok': True},\n"
        "                            artifacts={'stderr': 'why it failed', 'blob': b'\\xff' * 10, 'huge': 'x' * 100000})\n"
    ))
    ev = _run(pool, task)
    assert ev.valid and ev.score == 0.5, ev.reason + ev.stderr
    arts = ev.metrics["artifacts"]
    assert arts["stderr"] == "why it failed" and arts["note"] == "text value" and ev.metrics["ok"] is True
    assert "huge" in arts and len(arts["huge"]) < 40000  # bounded
    assert "### stderr\nwhy it failed" in ev.feedback()  # fed to the next prompt


def test_openevolve_cascade_semantics(pool, tmp_path):
    stages = (
        "def evaluate(path):\n    return {'combined_score': -1.0, 'direct': 1}\n"
        "def evaluate_stage1(path):\n    return {'combined_score': 0.6, 's1': 1, 'error': 0.0}\n"
        "def evaluate_stage2(path):\n    return {'combined_score': 0.9, 's2': 1}\n"
        "def evaluate_stage3(path):\n    return {'combined_score': 1.0, 's3': 1}\n"
    )
    single, _ = _task(tmp_path, stages, cascade_thresholds=[0.5])
    ev = _run(pool, single)  # one threshold: OpenEvolve stops after stage 2 ('error' dropped in the merge)
    assert ev.metrics == {"combined_score": 0.9, "s1": 1.0, "s2": 1.0}, ev.reason
    both, _ = _task(tmp_path, stages, cascade_thresholds=[0.5, 0.8])
    assert _run(pool, both).metrics["s3"] == 1.0
    off, _ = _task(tmp_path, stages, cascade=False)
    assert _run(pool, off).metrics == {"combined_score": -1.0, "direct": 1.0}
    failing, _ = _task(tmp_path, stages.replace("return {'combined_score': 0.9, 's2': 1}", "raise ValueError('s2 broke')"),
                       cascade_thresholds=[0.5, 0.8])
    ev = _run(pool, failing)  # stage 2 raising keeps stage 1, as OpenEvolve does
    assert ev.score == 0.6 and ev.metrics["stage2_passed"] == 0.0 and "s2 broke" in ev.metrics["artifacts"]["stage2_stderr"]


def test_evaluator_environment_python_env_and_scratch(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("EVOFORGE_T_SECRET", "hunter2")
    monkeypatch.setenv("EVOFORGE_T_SHARED", "shared-value")
    task, folder = _task(tmp_path, (
        "import os, subprocess\n"
        "HERE = os.path.dirname(os.path.abspath(__file__))\n"
        "def evaluate(path):\n"
        "    out = subprocess.run(['python', '-c', 'import numpy, sys; print(sys.executable)'],\n"
        "                         capture_output=True, text=True, timeout=60)\n"
        "    os.makedirs(os.path.join(HERE, 'temp'), exist_ok=True)\n"
        "    open(os.path.join(HERE, 'temp', 'x.txt'), 'w').write('written')\n"
        "    open('data.txt', 'a').write('appended')\n"
        "    return {'combined_score': 1.0, 'python_rc': out.returncode, 'exe': out.stdout.strip() + out.stderr[-300:],\n"
        "            'secret': os.environ.get('EVOFORGE_T_SECRET', 'absent'),\n"
        "            'shared': os.environ.get('EVOFORGE_T_SHARED', 'absent'), 'declared': os.environ.get('MINE', 'absent'),\n"
        "            'data': open('data.txt').read()}\n"
    ), env={"MINE": "declared"}, env_pass=["EVOFORGE_T_SHARED"])
    ev = _run(pool, task)
    assert ev.valid, ev.reason + ev.stderr
    m, arts = ev.metrics, ev.metrics["artifacts"]
    assert m["python_rc"] == 0, arts["exe"]
    assert arts["secret"] == "absent" and arts["shared"] == "shared-value" and arts["declared"] == "declared"
    assert arts["data"] == "original\nappended"  # its own copy, relative paths included
    assert (folder / "data.txt").read_text() == "original\n" and not (folder / "temp").exists()


def test_program_handed_with_its_extension(pool, tmp_path):
    task, folder = _task(tmp_path, (
        "def evaluate(path):\n"
        "    return {'combined_score': float(len(open(path).read())), 'name': path.rsplit('/', 1)[-1]}\n"
    ), program_suffix=".rs")
    ev = _run(pool, task, "fn main() { not python }")
    assert ev.valid and ev.metrics["artifacts"]["name"] == "program.rs"


def test_mean_fallback_warned_once_and_memory_hint(pool, tmp_path, caplog):
    task, _ = _task(tmp_path, "def evaluate(path):\n    return {'a': 1.0, 'b': 3.0, 'flag': True}\n")
    with caplog.at_level(logging.WARNING):
        first, second = _run(pool, task), _run(pool, task)
    assert first.score == second.score == 2.0  # flags are not averaged (OpenEvolve's rule)
    warned = [r.getMessage() for r in caplog.records if "no combined_score" in r.getMessage()]
    assert len(warned) == 1 and "a, b" in warned[0]
    hog, _ = _task(tmp_path, "def evaluate(path):\n    x = bytearray(400 << 20)\n    return {'combined_score': 1.0}\n",
                   memory_mb=200)
    ev = _run(pool, hog)
    assert ev.status in (Status.MEMORY, Status.KILLED) and "200 MB" in ev.reason


def test_request_defaults_unchanged_for_builtin_tasks():
    from evoforge.tasks.evaluate import request_for

    req = request_for(get_task("circle-packing-26"), "def solve(): return []")
    assert isinstance(req, EvalRequest) and req.env == () and req.scratch is False and req.program_suffix == ".py"
    folder_task = get_task(str(EXAMPLE_DIR))
    assert request_for(folder_task, "x").scratch is True
    assert request_for(get_task(str(EXAMPLE_DIR), {"scratch": False}), "x").scratch is False


EXAMPLE_DIR = Path(__file__).parent / "data" / "openevolve" / "function_minimization"


def test_async_evaluate_and_evaluation_result_as_a_dict(pool, tmp_path):
    task, _ = _task(tmp_path, (
        "async def evaluate(path):\n"
        "    return {'metrics': {'combined_score': 0.25}, 'artifacts': {'status': 'ERROR', 'why': 'bad config'}}\n"
    ))
    ev = _run(pool, task)  # OpenEvolve's R example is async; k_module_problem returns this dict shape
    assert ev.valid and ev.score == 0.25, ev.reason + ev.stderr
    assert ev.metrics["artifacts"] == {"status": "ERROR", "why": "bad config"}
