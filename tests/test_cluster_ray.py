"""Evaluations on a real Ray cluster that the tests start themselves (slow: ~1-2 min in all).

    python -m pytest -m slow tests/test_cluster_ray.py

1. in-process ``ray.init`` with 2 CPUs: a run through the Engine, every evaluation stored;
2. ``ray start --head`` on 127.0.0.1 plus a second node joined to it: ``evoforge run --executor
   ray --ray-address`` through the CLI while a Ray worker process is killed mid-run (the run
   completes, nothing lost), then the driver killed and ``evoforge resume`` reconnecting.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the Ray tests need pip install 'evoforge[ray]'")

pytestmark = pytest.mark.slow

EVOFORGE = [sys.executable, "-m", "evoforge.cli.main"]
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _evaluations(run_dir: Path) -> dict:
    out = subprocess.run([*EVOFORGE, "show", str(run_dir), "--json"], capture_output=True, text=True,
                         timeout=120, env=ENV)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _scores(run_dir: Path) -> dict[int, float]:
    import sqlite3

    db = sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True)
    try:
        return dict(db.execute("SELECT id, score FROM children WHERE child_class = 'evaluated'"))
    finally:
        db.close()


def test_engine_on_in_process_ray(tmp_path, monkeypatch):
    from evoforge.cluster import RayExecutor
    from evoforge.engine import Engine, build_config

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    with RayExecutor(num_cpus=2) as ex:
        assert ex.workers == 2
        cfg = build_config(task="circle-packing-26", budget=60, batch_size=4, n=4, picture_interval=1e9)
        summary = Engine(cfg, tmp_path / "run", executor=ex).run()
    assert summary["evaluated"] >= 60
    info = _evaluations(tmp_path / "run")
    assert info["evaluated"] == summary["evaluated"]
    assert info["best_score"] >= info["initial_score"]


def _actor_pids() -> list[int]:
    out = subprocess.run(["pgrep", "-f", "ray::_SandboxSlot"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


@pytest.fixture()
def cluster(tmp_path):
    """A head node and one worker node joined to it, both on 127.0.0.1."""
    if shutil.which("ray") is None and not (Path(sys.executable).parent / "ray").exists():
        pytest.skip("the ray command is not installed")
    ray_cli = str(Path(sys.executable).parent / "ray") if (Path(sys.executable).parent / "ray").exists() else "ray"
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus", "1", "--disable-usage-stats"]
    try:
        subprocess.run([ray_cli, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
                        "--include-dashboard", "false", *common], check=True, env=ENV, timeout=180,
                       capture_output=True)
        subprocess.run([ray_cli, "start", "--address", address, "--node-ip-address", "127.0.0.1", *common],
                       check=True, env=ENV, timeout=180, capture_output=True)
        yield address
    finally:
        subprocess.run([ray_cli, "stop", "--force"], env=ENV, timeout=120, capture_output=True)


def test_cli_run_on_a_two_node_cluster_survives_a_killed_worker_and_a_killed_driver(cluster, tmp_path):
    run_dir = tmp_path / "run"
    # slow evaluations, so the kills land mid-evaluation: each child sleeps inside the sandbox
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    (task_dir / "initial_program.py").write_text(
        "import time\n# EVOLVE-BLOCK-START\nx = 1.0\n# EVOLVE-BLOCK-END\n"
        "def run():\n    time.sleep(0.3)\n    return x\n")
    (task_dir / "evaluator.py").write_text(
        "import importlib.util\n"
        "def evaluate(path):\n"
        "    spec = importlib.util.spec_from_file_location('p', path)\n"
        "    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "    return {'combined_score': -abs(float(m.run()) - 3.0)}\n")
    cmd = [*EVOFORGE, "run", str(task_dir), "--run-dir", str(run_dir), "--budget", "40", "-B", "2", "-n", "2",
           "--executor", "ray", "--ray-address", cluster, "--quiet"]
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not _actor_pids() and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(3)
        victims = _actor_pids()
        assert victims, "no Ray sandbox actor appeared"
        os.kill(victims[0], signal.SIGKILL)  # a Ray worker dies mid-run
        time.sleep(4)
        proc.send_signal(signal.SIGKILL)  # then the driver
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = _scores(run_dir)
    out = subprocess.run([*EVOFORGE, "resume", str(run_dir), "--quiet"], env=ENV, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    info = _evaluations(run_dir)
    assert info["evaluated"] >= 40 > len(before)  # finished by the resume
    after = _scores(run_dir)
    assert {k: after[k] for k in before} == before  # nothing evaluated before the kills was lost or redone
    assert sum(info["classes"].values()) == info["children"] + 1  # every child classified (+ the seed)


def test_an_evaluation_whose_worker_dies_twice_is_classified_killed(monkeypatch):
    """retries=1: the first death is retried on a new actor, the second classifies it."""
    import threading

    from evoforge.cluster import RayExecutor
    from evoforge.sandbox import EvalRequest, Status

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    slow = EvalRequest(code="import time\ndef solve():\n    time.sleep(4)\n    return [1]\n", timeout=20)
    quick = EvalRequest(code="def solve():\n    return [2]\n", timeout=20)
    with RayExecutor(num_cpus=1, workers=1, retries=1) as ex:
        stop = threading.Event()

        def killer():  # kill whichever actor runs the slow request, twice
            for _ in range(2):
                time.sleep(1.5)
                os.kill(ex.actor_pids()[0][1], signal.SIGKILL)
            stop.set()

        threading.Thread(target=killer, daemon=True).start()
        results = dict(ex.run_iter([slow]))
        stop.wait(10)
        assert results[0].status is Status.KILLED and "died 2 times" in results[0].error
        assert ex.retried == 1 and ex.replaced == 2
        assert ex.run_many([quick])[0].value == [2]  # the replacement slot works
