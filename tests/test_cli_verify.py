"""``evoforge tasks`` and ``evoforge verify``: output, exit codes, one-line errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from evoforge.cli.verify import register
from evoforge.tasks import all_task_names

REF = Path(__file__).parent / "data" / "reference"


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    a = typer.Typer(pretty_exceptions_enable=False)
    register(a)
    return a


def run(app, *args):
    return CliRunner().invoke(app, list(args))


def test_tasks_json_and_table(app):
    r = run(app, "tasks", "--json")
    assert r.exit_code == 0
    rows = json.loads(r.stdout)
    assert [row["name"] for row in rows] == all_task_names()  # every family, mathematics first
    assert rows[0]["family"] == "mathematics" and {r["family"] for r in rows} >= {"algorithm-engineering", "symbolic-regression"}
    cp = rows[0]
    assert cp["direction"] == "max" and cp["best_known"] > cp["initial_score"] and cp["best_source"]
    r = run(app, "tasks")
    assert r.exit_code == 0 and "circle-packing-26" in r.stdout and "hadamard-29" in r.stdout


def test_verify_reference_file_valid(app):
    r = run(app, "verify", "circle-packing-26", str(REF / "cp26__alphaevolve_v2.json"), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["status"] == "ok" and out["valid"] is True
    assert out["score"] == pytest.approx(2.6359830849176076, rel=1e-12)
    assert {"reason", "metrics", "wall_time"} <= set(out)


def test_verify_invalid_exits_1(app):
    r = run(app, "verify", "circle-packing-26", str(REF / "cp26__thetaevolve_init.json"), "--json")
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert out["status"] == "invalid" and out["valid"] is False and out["score"] is None and "overlaps" in out["reason"]
    r = run(app, "verify", "circle-packing-26-t", str(REF / "cp26__thetaevolve_init.json"))
    assert r.exit_code == 0 and "valid:  yes" in r.stdout and "0.9597642169962064" in r.stdout


def test_verify_bare_array(app, tmp_path):
    f = tmp_path / "h.json"
    f.write_text(json.dumps([1.0, 1.0, 1.0]))
    r = run(app, "verify", "ac1", str(f), "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["score"] == pytest.approx(2 * 3 * 3 / 9)


@pytest.mark.parametrize(
    "args, words",
    [
        (["verify", "no-such-task", "x.json"], "unknown task 'no-such-task'"),
        (["verify", "ac1", "/nonexistent/file.json"], "no such file"),
        (["verify", "ac1", "BAD"], "malformed JSON"),
        (["verify", "ac1", "TXT"], "expected a .json construction or a .py program"),
        (["verify", "ac1", "REFAC1", "--timeout", "-3"], "--timeout must be positive"),
    ],
)
def test_usage_errors_one_line_exit_2(app, tmp_path, args, words):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    txt = tmp_path / "x.txt"
    txt.write_text("1")
    subst = {"BAD": str(bad), "TXT": str(txt), "REFAC1": str(REF / "ac1__alphaevolve_v1.json")}
    r = run(app, *[subst.get(a, a) for a in args])
    assert r.exit_code == 2
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], r.output
    assert "Traceback" not in r.output


def test_directory_task_needs_a_program(app, tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    (d / "initial_program.py").write_text("def solve():\n    return 1\n")
    (d / "evaluator.py").write_text("def evaluate(p):\n    return {'combined_score': 1.0}\n")
    r = run(app, "verify", str(d), str(REF / "ac1__alphaevolve_v1.json"))
    assert r.exit_code == 2 and "no built-in verifier" in r.output


def _sandbox_available() -> bool:
    try:
        from evoforge.sandbox import SandboxPool  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _sandbox_available(), reason="sandbox not importable")
def test_verify_program_through_sandbox(app, tmp_path):
    """One end-to-end run: the shipped strict CP-26 program, then a crashing program."""
    from evoforge.tasks import get_task

    prog = tmp_path / "p.py"
    prog.write_text(get_task("circle-packing-26").initial_program)
    r = run(app, "verify", "circle-packing-26", str(prog), "--json", "--timeout", "30")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["status"] == "ok" and out["score"] == pytest.approx(0.9597642169952467, rel=1e-12)
    prog.write_text("def solve():\n    raise ValueError('boom')\n")
    r = run(app, "verify", "circle-packing-26", str(prog), "--json", "--timeout", "30")
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and out["valid"] is False and out["status"] != "ok"


@pytest.mark.skipif(not _sandbox_available(), reason="sandbox not importable")
def test_verify_directory_task_program_through_sandbox(app, tmp_path):
    """An evoforge-layout task: its evaluator runs in the sandbox; error -> invalid, exit 1."""
    d = tmp_path / "near"
    d.mkdir()
    (d / "task.toml").write_text('description = "x near 3.7"\ntime_limit = 20\n')
    (d / "initial_program.py").write_text("def solve():\n    return 3.0\n")
    (d / "evaluator.py").write_text(
        "import importlib.util\n"
        "def evaluate(path):\n"
        "    spec = importlib.util.spec_from_file_location('c', path)\n"
        "    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "    x = m.solve()\n"
        "    if not 0 <= x <= 10:\n"
        "        return {'error': f'x = {x} is outside [0, 10]'}\n"
        "    return {'combined_score': -(x - 3.7) ** 2, 'x': x}\n"
    )
    r = run(app, "verify", str(d), str(d / "initial_program.py"), "--json")
    out = json.loads(r.stdout)
    assert r.exit_code == 0 and out["score"] == pytest.approx(-0.49) and out["metrics"]["x"] == 3.0
    bad = tmp_path / "bad.py"
    bad.write_text("def solve():\n    return 11\n")
    r = run(app, "verify", str(d), str(bad), "--json")
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and out["status"] == "invalid" and "outside" in out["reason"]
