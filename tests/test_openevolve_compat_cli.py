"""`evoforge run PROGRAM EVALUATOR --config OPENEVOLVE_YAML`: OpenEvolve's command line, end to end (issue 10)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parent / "data" / "openevolve" / "function_minimization"  # vendored, unchanged


def evoforge(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evoforge.cli.main", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def example(tmp_path):
    dst = tmp_path / "examples" / "function_minimization"
    shutil.copytree(EXAMPLE, dst)
    return dst


def test_openevolve_command_line_runs_an_example_unchanged(example, tmp_path):
    run_dir = tmp_path / "run"
    proc = evoforge("run", "examples/function_minimization/initial_program.py",
                    "examples/function_minimization/evaluator.py", "--config", "examples/function_minimization/config.yaml",
                    "--iterations", "6", "--backend", "builtin", "-B", "2", "-n", "2", "--run-dir", str(run_dir), "-q",
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert "max_iterations 10 -> budget 11" in err  # mapped, then --iterations wins
    ignored = [ln for ln in err.splitlines() if "ignored (no meaning in evoforge)" in ln]
    assert len(ignored) == 1 and "checkpoint_interval" in ignored[0] and "database.elite_selection_ratio" in ignored[0]
    assert "task examples/function_minimization" in err
    assert "best.png" not in err and "history.png" in err  # only pictures that exist
    cfg = json.loads(evoforge("show", str(run_dir), "--json", cwd=tmp_path).stdout)
    assert cfg["evaluated"] == 7 and cfg["initial_score"] is not None
    assert "combined_score" in cfg["best_metrics"] and cfg["best_artifacts"]  # EvaluationResult's artifacts kept
    shown = evoforge("show", str(run_dir), cwd=tmp_path).stdout
    assert "best metrics" in shown and "combined_score=" in shown and "artifact" in shown
    assert (example / "evaluator.py").read_text() == (EXAMPLE / "evaluator.py").read_text()


def test_failing_seed_scored_zero_unless_strict(tmp_path):
    (tmp_path / "initial_program.py").write_text("def solve():\n    raise RuntimeError('seed broken')\n")
    (tmp_path / "evaluator.py").write_text(
        "import importlib.util\n"
        "def evaluate(path):\n"
        "    spec = importlib.util.spec_from_file_location('p', path)\n"
        "    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "    return {'combined_score': float(m.solve())}\n")
    common = ("initial_program.py", "evaluator.py", "--budget", "3", "-B", "1", "-n", "1", "-q")
    proc = evoforge("run", *common, "--run-dir", str(tmp_path / "lenient"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stderr.split())  # the log handler wraps long lines
    assert "the initial program failed (crash): RuntimeError: seed broken" in said and "--strict-seed" in said
    proc = evoforge("run", *common, "--strict-seed", "--run-dir", str(tmp_path / "strict"), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith("error: the initial program")


def test_bad_openevolve_value_is_one_error_line(tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "ex")
    (tmp_path / "bad.yaml").write_text("max_iterations: 5\nevaluator:\n  timeout: -3\n")
    proc = evoforge("run", "ex/initial_program.py", "ex/evaluator.py", "--config", "bad.yaml", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "error: bad.yaml: 'evaluator.timeout' must be positive, got -3"
