"""Issue 9: `evoforge run` whose model answers only poison programs, killed, then resumed to the end.

The programs (through an OpenEvolve-layout evaluator that returns whatever the program says)
attack the host's side: ints too large for a float, a 20 MB metrics dict, lone surrogates in
errors and metrics, a tree deeper than the recursion limit, non-finite scores, terminal escape
sequences, memfd beyond the memory limit. The run must classify every one, survive a kill -9,
resume to its end, keep run.db small, and `show` must print no escape sequence.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

CMD = [sys.executable, "-m", "evoforge.cli.main"]

INITIAL = "# EVOLVE-BLOCK-START\ndef value():\n    return 1.0\n# EVOLVE-BLOCK-END\n"
EVALUATOR = '''
import importlib.util


def evaluate(path):
    spec = importlib.util.spec_from_file_location("candidate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    v = module.value()
    return v if isinstance(v, dict) else {"combined_score": v}
'''
POISON = [
    '    return {"combined_score": 10**400}',  # int beyond float range
    '    return {"combined_score": 2.0, "blob": "x" * 20_000_000}',  # 20 MB of metrics
    '    raise ValueError("bad \\udcff\\ud800 text")',  # not encodable as UTF-8
    '    return {"combined_score": 3.0, "s\\udcff": "\\ud800", "n": 10**400}',
    '    import os\n    for _ in range(1100):\n        os.mkdir("d")\n        os.chdir("d")\n    return 4.0',
    '    return {"combined_score": float("inf")}',
    '    return {"combined_score": float("nan"), "x": 1}',
    '    print("\\x1b]0;owned\\x07\\x1b[2J")\n    raise RuntimeError("\\x1b[31mred\\x1b]52;c;aGk=\\x07")',
    '    return {"combined_score": 5.0, 7: "int key", "t": (1, [2, {"d": None}])}',
    '    import os\n    fd = os.memfd_create("m")\n    for i in range(64):\n        if i % 15 == 0:\n'
    '            fd = os.memfd_create("m")\n        os.write(fd, b"1" * (16 << 20))\n    return 6.0',
    '    return {"combined_score": 7.0, "deep": eval("[" * 5000 + "]" * 5000)}',
    '    return {"combined_score": 8.0}',  # a normal one: the run goes on improving
]


def _responses() -> list[str]:
    return [f"<<<<<<< SEARCH\n    return 1.0\n=======\n{p}\n>>>>>>> REPLACE\n" for p in POISON]


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    task = tmp_path / "task"
    task.mkdir()
    (task / "initial_program.py").write_text(INITIAL)
    (task / "evaluator.py").write_text(EVALUATOR)
    (task / "config.yaml").write_text("evaluator:\n  timeout: 20\n  cascade_evaluation: false\n")
    cfg = tmp_path / "run.json"
    cfg.write_text(json.dumps({"backend": {"name": "scripted", "options": {"responses": _responses()}},
                               "selector": "greedy", "workers": 2, "picture_interval": 1e9}))
    return task, cfg


def test_poison_programs_are_classified_and_the_run_survives_a_kill(tmp_path):
    task, cfg = _setup(tmp_path)
    run_dir = tmp_path / "run"
    args = ["run", str(task), "--config", str(cfg), "--budget", "30", "-B", "2", "-n", "6", "--seed", "3",
            "--run-dir", str(run_dir), "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    proc = subprocess.Popen(CMD + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and _evaluated(run_dir) < 8:
        time.sleep(0.1)
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert killed or proc.returncode == 0, err[-2000:]
    res = subprocess.run(CMD + ["resume", str(run_dir), "--quiet"], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    db = sqlite3.connect(run_dir / "run.db")
    try:
        unclassified = db.execute("SELECT COUNT(*) FROM children WHERE child_class IS NULL").fetchone()[0]
        evaluated = db.execute("SELECT COUNT(*) FROM children WHERE child_class IN ('evaluated', 'invalid', 'no_solution')").fetchone()[0]
        best = db.execute("SELECT MAX(score) FROM children WHERE child_class = 'evaluated'").fetchone()[0]
        big = db.execute("SELECT MAX(LENGTH(metrics)), MAX(LENGTH(feedback)) FROM children").fetchone()
    finally:
        db.close()
    assert unclassified == 0 and evaluated >= len(POISON) + 1  # the seed and every poison child (then only repeats)
    assert best == 8.0
    assert max(big) <= 70_000  # the 20 MB dict was cut at the store's cap
    assert (run_dir / "run.db").stat().st_size < 20 << 20
    show = subprocess.run(CMD + ["show", str(run_dir)], capture_output=True, text=True, timeout=60, env=env)
    assert show.returncode == 0, show.stderr
    assert "\x1b" not in show.stdout and "\x07" not in show.stdout


def _evaluated(run_dir: Path) -> int:
    if not (run_dir / "run.db").exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True, timeout=1)
        try:
            return db.execute("SELECT COUNT(*) FROM children WHERE child_class IS NOT NULL").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0


class _HostBreaks(Exception):
    pass


class _BreaksOnPoison:
    """An executor that dies (as a host broken by a child would) whenever a batch holds the poison."""

    def __init__(self, inner):
        self.inner, self.broke = inner, 0

    def run_iter(self, requests):
        if any("POISON" in r.code for r in requests):
            self.broke += 1
            raise _HostBreaks
        yield from self.inner.run_iter(requests)

    def run_many(self, requests):
        return [r for _, r in sorted(self.run_iter(requests), key=lambda x: x[0])]

    def close(self):
        pass


def test_a_child_that_breaks_the_host_is_classified_not_retried_for_ever(tmp_path, pool):
    """The issue: the stored response is evaluated again on every resume, so every resume died."""
    import pytest

    from evoforge.engine import Engine, build_config
    from evoforge.llm.base import BACKENDS

    from test_engine import diff, toy_task

    responses = [diff("    x = 1.0", "    x = 2.0  # POISON"), diff("    x = 1.0", "    x = 3.0")]
    cfg = build_config(task="toy", budget=4, batch_size=1, n=2, max_steps=1, selector="greedy")
    executor = _BreaksOnPoison(pool)
    for attempt in range(3):
        with pytest.raises(_HostBreaks):
            Engine(cfg, tmp_path, task=toy_task(), backend=BACKENDS.get("scripted")(responses=responses),
                   executor=executor).run()
    Engine(cfg, tmp_path, task=toy_task(), backend=BACKENDS.get("scripted")(responses=responses), executor=executor).run()
    assert executor.broke == 3
    db = sqlite3.connect(tmp_path / "run.db")
    try:
        rows = db.execute("SELECT child_class, feedback FROM children WHERE step = 1 ORDER BY resp").fetchall()
    finally:
        db.close()
    assert rows[0][0] == "no_solution" and "not run again" in rows[0][1]
    assert rows[1][0] == "evaluated"
