"""The sandbox contract: values, statuses, evaluator mode, parallelism, pool lifecycle."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from evoforge.sandbox import EvalRequest, SandboxError, SandboxPool, Status, run_one
from evoforge.tasks.programs import circle_packing


def run(pool, code, **kw):
    kw.setdefault("timeout", 10)
    return pool.run_many([EvalRequest(code=code, **kw)])[0]


def test_numpy_values_become_plain_json(pool):
    code = (
        "import numpy as np\n"
        "def solve():\n"
        "    return {'a': np.arange(6).reshape(2, 3), 'f': np.float32(0.5), 'i': np.int64(7), 'b': np.bool_(True),\n"
        "            't': (1, (2, 3)), 3: 'int key', 'nan': np.array([np.nan, np.inf])}\n"
    )
    res = run(pool, code)
    assert res.status is Status.OK, res.error
    v = res.value
    assert v["a"] == [[0, 1, 2], [3, 4, 5]] and v["f"] == 0.5 and v["i"] == 7 and v["b"] is True
    assert v["t"] == [1, [2, 3]] and v["3"] == "int key"
    assert v["nan"][0] != v["nan"][0] and v["nan"][1] == float("inf")


def test_circle_packing_initial_program_runs(pool):
    res = run(pool, Path(circle_packing.__file__).read_text())
    assert res.status is Status.OK, res.error
    assert len(res.value) == 26 and all(len(row) == 3 for row in res.value)
    assert abs(sum(row[2] for row in res.value) - 0.9597642) < 1e-6


def test_module_namespace_and_entry(pool):
    res = run(pool, "def go():\n    return __name__\n", entry="go")
    assert res.status is Status.OK and res.value == "program"
    res = run(pool, "x = 1\n")
    assert res.status is Status.CRASH and "solve" in res.error


def test_error_line_names_the_program_line(pool):
    res = run(pool, "def solve():\n    a = 1\n    return a / 0\n")
    assert res.status is Status.CRASH
    assert res.error == "ZeroDivisionError: division by zero (line 3)"
    assert "ZeroDivisionError" in res.stderr


def test_syntax_error_and_null_bytes(pool):
    res = run(pool, "def solve(:\n  pass\n")
    assert res.status is Status.SYNTAX and "line 1" in res.error
    assert run(pool, "def solve():\n    return 1\x00\n").status is Status.SYNTAX


def test_environment_is_scrubbed_and_cwd_is_private(pool):
    os.environ["EVOFORGE_SECRET_TOKEN"] = "s3cret"
    try:
        code = "import os\ndef solve():\n    return [sorted(os.environ), os.getcwd(), os.listdir('.')]\n"
        res = run(pool, code)
    finally:
        del os.environ["EVOFORGE_SECRET_TOKEN"]
    assert res.status is Status.OK
    env, cwd, files = res.value
    assert "EVOFORGE_SECRET_TOKEN" not in env and set(env) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "OPENBLAS_NUM_THREADS",
                                                                "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED"}
    assert files == ["program.py"]
    assert not os.path.exists(cwd)  # removed after the run


def test_timeout_is_wall_clock_and_reported(pool):
    t0 = time.monotonic()
    res = run(pool, "import time\ndef solve():\n    time.sleep(30)\n", timeout=0.5)
    assert res.status is Status.TIMEOUT and "0.5" in res.error
    assert time.monotonic() - t0 < 5


def test_run_many_is_parallel_and_ordered(pool):
    code = "import time\ndef solve():\n    time.sleep({s})\n    return {s}\n"
    delays = [0.4, 0.1, 0.3, 0.2]
    t0 = time.monotonic()
    res = pool.run_many([EvalRequest(code=code.format(s=d), timeout=5) for d in delays])
    elapsed = time.monotonic() - t0
    assert [r.value for r in res] == delays
    assert elapsed < sum(delays)  # two workers overlap the sleeps


def test_evaluator_mode_and_cascade(pool, tmp_path):
    ev = tmp_path / "private" / "evaluator.py"  # pytest's tmp dirs are 0700: the sandbox uid cannot read them
    ev.parent.mkdir()
    ev.write_text(
        "import importlib.util\n"
        "def _load(path):\n"
        "    spec = importlib.util.spec_from_file_location('p', path)\n"
        "    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m\n"
        "def evaluate_stage1(path):\n"
        "    print('stage1')\n"
        "    return {'combined_score': float(_load(path).solve()), 's1': 1}\n"
        "def evaluate_stage2(path):\n"
        "    return {'combined_score': 10.0, 's2': 2}\n"
    )
    low = run(pool, "def solve():\n    return 0.1\n", evaluator_path=str(ev), cascade_thresholds=(0.5,))
    assert low.status is Status.OK and low.value == {"combined_score": 0.1, "s1": 1}
    assert "stage1" in low.stdout
    high = run(pool, "def solve():\n    return 0.9\n", evaluator_path=str(ev), cascade_thresholds=(0.5,))
    assert high.value == {"combined_score": 10.0, "s1": 1, "s2": 2}
    assert run(pool, "def solve(:\n", evaluator_path=str(ev)).status is Status.SYNTAX


def test_evaluator_plain_evaluate_and_errors(pool, tmp_path):
    ev = tmp_path / "ev.py"
    ev.write_text(
        "class EvaluationResult:\n"
        "    def __init__(self, metrics): self.metrics = metrics\n"
        "def evaluate(path):\n"
        "    src = open(path).read()\n"
        "    if 'boom' in src: raise ValueError('bad program')\n"
        "    return EvaluationResult({'combined_score': len(src), 'ok': True})\n"
    )
    res = run(pool, "x = 1\n", evaluator_path=str(ev))
    assert res.status is Status.OK and res.value == {"combined_score": 6, "ok": True}
    res = run(pool, "boom = 1\n", evaluator_path=str(ev))
    assert res.status is Status.CRASH and "ValueError: bad program" in res.error and "ev.py" in res.error
    res = run(pool, "x = 1\n", evaluator_path=str(tmp_path / "missing.py"))
    assert res.status is Status.CRASH and "cannot read evaluator" in res.error


def test_pool_restarts_a_killed_worker(pool):
    for pid in pool.zygote_pids():
        os.kill(pid, signal.SIGKILL)
    res = pool.run_many([EvalRequest(code="def solve():\n    return 5\n")] * 3)
    assert [r.value for r in res] == [5, 5, 5]
    assert pool.stray_processes() == []


def test_lifecycle_and_bad_input():
    with pytest.raises(ValueError, match="workers"):
        SandboxPool(workers=0)
    p = SandboxPool(workers=1, preload=())
    p.close()
    p.close()  # idempotent
    with pytest.raises(SandboxError, match="closed"):
        p.run_many([EvalRequest(code="def solve():\n    return 1\n")])
    assert run_one(EvalRequest(code="def solve():\n    return [1, 2]\n"), preload=()).value == [1, 2]


@pytest.mark.skipif(os.geteuid() != 0, reason="dedicated uids need root")
def test_two_pools_never_share_a_uid(pool):
    with SandboxPool(workers=1, preload=()) as other:
        assert set(other.slot_uids).isdisjoint(pool.slot_uids)
        assert all(u is not None for u in other.slot_uids)


@pytest.mark.skipif(os.geteuid() != 0, reason="dedicated uids need root")
def test_without_landlock_the_uid_still_confines():
    with SandboxPool(workers=1, use_landlock=False, preload=()) as p:
        assert p.features["landlock_abi"] == 0
        assert run(p, "def solve():\n    return 1\n").value == 1
        res = run(p, "def solve():\n    open('../escape', 'w')\n")
        assert res.status is Status.CRASH and "PermissionError" in res.error
        assert p.stray_processes() == []


def test_worker_killed_mid_run_leaves_nothing_behind(pool):
    code = (
        "import os, time\n"
        "def solve():\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        time.sleep(60)\n"
        "    time.sleep(60)\n"
    )
    zygotes = pool.zygote_pids()
    timer = threading.Timer(1.0, lambda: [os.kill(p, signal.SIGKILL) for p in zygotes])
    timer.start()
    try:
        res = pool.run_many([EvalRequest(code=code, timeout=20)] * 2)
    finally:
        timer.cancel()
    assert all(r.status is Status.CRASH and "worker died" in r.error for r in res)
    if os.geteuid() == 0:  # the daemon's orphans are found by uid (without root they would escape: see SANDBOX.md)
        assert pool.stray_processes() == []
    assert run(pool, "def solve():\n    return 1\n").value == 1


def test_bad_requests_get_one_clear_error(pool):
    with pytest.raises(ValueError, match="timeout"):
        pool.run_many([EvalRequest(code="", timeout=0)])
    with pytest.raises(ValueError, match="entry"):
        pool.run_many([EvalRequest(code="", entry="not a name")])
    with pytest.raises(ValueError, match="code"):
        pool.run_many([EvalRequest(code=b"def solve(): pass")])  # type: ignore[arg-type]


@pytest.mark.slow  # waits out the host's grace period (timeout + 15 s)
def test_hung_worker_is_replaced(pool):
    zygote = pool.zygote_pids()[0]
    timer = threading.Timer(0.5, lambda: os.kill(zygote, signal.SIGSTOP))
    timer.start()
    res = pool.slots[0].run(EvalRequest(code="import time\ndef solve():\n    time.sleep(60)\n", timeout=1))
    assert res.status is Status.TIMEOUT and "stopped answering" in res.error
    if os.geteuid() == 0:
        assert pool.stray_processes() == []
    assert run(pool, "def solve():\n    return 1\n").value == 1
