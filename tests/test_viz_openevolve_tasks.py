"""The OpenEvolve-side files of benchmarks/bench_vs_openevolve.py: same scoring as evoforge's tasks."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
OE_TASKS = ROOT / "benchmarks" / "openevolve_tasks"
REFERENCE = ROOT / "tests" / "data" / "reference"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cp_evaluator() -> ModuleType:
    return _load(OE_TASKS / "circle_packing" / "evaluator.py", "oe_cp_evaluator")


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_vs_openevolve", ROOT / "benchmarks" / "bench_vs_openevolve.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_vs_openevolve"] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def test_cp_evaluator_scores_the_naive_program_like_evoforge(cp_evaluator: ModuleType) -> None:
    from evoforge.tasks import get_task

    result = cp_evaluator.evaluate(str(OE_TASKS / "circle_packing" / "initial_program.py"))
    assert result["validity"] == 1.0
    task = get_task("circle-packing-26-t")
    assert result["combined_score"] == pytest.approx(task.initial_score, abs=1e-7)


def test_cp_initial_program_is_evoforges_construction() -> None:
    from evoforge.tasks import get_task

    oe = _load(OE_TASKS / "circle_packing" / "initial_program.py", "oe_cp_program")
    ours: dict = {}
    exec(get_task("circle-packing-26-t").initial_program, ours)
    centers, radii, total = oe.run_packing()
    assert np.allclose(np.column_stack([centers, radii]), np.asarray(ours["solve"]()))
    assert total == pytest.approx(float(np.sum(radii)))


@pytest.mark.parametrize("path", sorted(REFERENCE.glob("cp26__*.json")), ids=lambda p: p.stem)
def test_cp_check_agrees_with_evoforge_verifier(path: Path, cp_evaluator: ModuleType) -> None:
    from evoforge.tasks import get_task

    rows = np.asarray(json.loads(path.read_text())["data"], dtype=float)
    verdict = get_task("circle-packing-26-t").verify(rows.tolist())
    reason = cp_evaluator.check_packing(rows[:, :2], rows[:, 2])
    assert (reason is None) == verdict.valid, (reason, verdict.reason)


@pytest.mark.parametrize("mutate,expected", [
    (lambda r: r.__setitem__((0, 2), np.nan), "non-finite"),
    (lambda r: r.__setitem__((0, 2), -0.01), "negative radius"),
    (lambda r: r.__setitem__((1, slice(0, 2)), r[0, :2]), "overlap"),
    (lambda r: r.__setitem__((0, 0), 1.0), "leaves the unit square"),
])
def test_cp_check_rejects(mutate, expected: str, cp_evaluator: ModuleType) -> None:
    rows = np.asarray(json.loads((REFERENCE / "cp26__alphaevolve_v2.json").read_text())["data"], dtype=float)
    assert cp_evaluator.check_packing(rows[:, :2], rows[:, 2]) is None
    mutate(rows)
    assert expected in cp_evaluator.check_packing(rows[:, :2], rows[:, 2])
    assert "wrong shapes" in cp_evaluator.check_packing(rows[:25, :2], rows[:25, 2])


def test_cp_evaluator_survives_a_broken_program(tmp_path: Path, cp_evaluator: ModuleType) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def run_packing():\n    raise RuntimeError('boom')\n")
    result = cp_evaluator.evaluate(str(bad))
    assert result["combined_score"] == 0.0 and "boom" in result["error"]


def test_trivial_evaluator(tmp_path: Path) -> None:
    ev = _load(OE_TASKS / "trivial" / "evaluator.py", "oe_trivial_evaluator")
    assert ev.evaluate(str(OE_TASKS / "trivial" / "initial_program.py"))["combined_score"] == pytest.approx(1 / 38)
    exact = tmp_path / "p.py"
    exact.write_text("def solve():\n    return 42\n")
    assert ev.evaluate(str(exact))["combined_score"] == 1.0
    exact.write_text("def solve():\n    return float('nan')\n")
    assert ev.evaluate(str(exact))["combined_score"] == 0.0


def test_report_ratio_and_verdict(bench: ModuleType, capsys: pytest.CaptureFixture) -> None:
    task = bench.BenchTask("cp", "circle-packing-26-t", OE_TASKS / "circle_packing", 10)
    runs = [bench.RunResult("evoforge", "cp", s, True, 2.0, 100, 1.5) for s in range(3)]
    runs += [bench.RunResult("openevolve", "cp", s, True, 10.0, 50 + s, 1.2 + s / 10) for s in range(3)]
    runs.append(bench.RunResult("openevolve", "cp", 9, False, 1.0, note="boom"))
    rows = bench.report([task], runs)
    ratio = [r for r in rows if r["system"] == "ratio"][0]
    assert ratio["children_per_s"] == pytest.approx(50 / 5.1)
    assert ratio["best_verdict"] == "equal or better"
    out = capsys.readouterr().out
    assert "seed 9 FAILED: boom" in out and "3/4" in out


def test_missing_openevolve_is_reported(bench: ModuleType, tmp_path: Path) -> None:
    python, note = bench.find_openevolve(str(tmp_path / "no-python"))
    assert python is None and "OpenEvolve not found" in note
