"""Hostile programs (tests/hostile/*.py): right status, host alive, no stray process, pool still fine.

Each file states what it must get: `# expect: timeout` (or several, `crash|killed`, where the
outcome legitimately depends on timing), optionally `# max_result_bytes: N` and `# timeout: S`
(default 1.5 s).
"""
from __future__ import annotations

import importlib.util
import math
import os
import socket
from pathlib import Path

import pytest

from evoforge.sandbox import EvalRequest, Status

HOSTILE = Path(__file__).parent / "hostile"
NORMAL = "import numpy as np\n\ndef solve():\n    return float(np.sum(np.arange(4)))\n"
MARKER = Path("/tmp/evoforge_hostile_marker")


def _load_spec():
    spec = importlib.util.spec_from_file_location("hostile_spec", Path(__file__).parent / "hostile" / "_spec.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SPEC = _load_spec()
FILES = SPEC.PROGRAMS
unmet_needs = SPEC.unmet_needs


def expectation(code: str) -> tuple[set[Status], dict[str, float]]:
    expect, fields, _ = SPEC.header(code)
    assert expect, "hostile program without '# expect:' line"
    return {Status(s) for s in expect}, fields


UNIX_PATH = "/tmp/evoforge-hostile.sock"


@pytest.fixture(scope="module")
def unix_listener():
    """A world-writable UNIX pathname socket, as a database or model server would leave one."""
    Path(UNIX_PATH).unlink(missing_ok=True)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(UNIX_PATH)
    os.chmod(UNIX_PATH, 0o777)
    srv.listen(8)
    srv.settimeout(0.01)
    yield srv
    srv.close()
    Path(UNIX_PATH).unlink(missing_ok=True)


def host_ipc_objects() -> list[str]:
    """SysV IPC objects in the host's namespace (a program's must never appear here)."""
    out = []
    for kind in ("shm", "msg", "sem"):
        try:
            out += [f"{kind}: {line.split()[0]}" for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]]
        except OSError:
            pass
    return out


def leftovers(pool) -> list[str]:
    """Files a run left in the workers' base directories (the bin/ of `python` wrappers is the workers' own)."""
    found = []
    for s in pool.slots:
        base = s.hello.get("base")
        if base and s.proc is not None:  # seen from inside the worker (its run dirs may be a private tmpfs)
            inside = f"/proc/{s.proc.pid}/root{base}"
            found += [n for n in os.listdir(inside) if n != "bin"] if os.path.isdir(inside) else []
    return found


@pytest.fixture(scope="module")
def listener():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.01)
    yield srv
    srv.close()


def request_for(path: Path, port: int, memory_mb: int) -> tuple[EvalRequest, set[Status]]:
    code = path.read_text().replace("PORT", str(port)).replace("UNIXPATH", UNIX_PATH)
    statuses, extra = expectation(code)
    extra.setdefault("timeout", 1.5)
    return EvalRequest(code=code, memory_mb=memory_mb, max_output_bytes=4096, **extra), statuses


def test_there_are_enough_hostile_programs():
    assert len(FILES) >= 30


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_hostile_program(pool, listener, unix_listener, path):
    MARKER.unlink(missing_ok=True)
    ipc_before = host_ipc_objects()
    missing = unmet_needs(path.read_text(), pool.features)
    if missing:
        pytest.skip(f"this machine's sandbox lacks {missing} (degraded mode, see docs/SANDBOX.md)")
    # a small address-space budget above what the warm worker already maps keeps memory bombs quick
    req, expected = request_for(path, listener.getsockname()[1], pool.features["vm_mb"] + 300)
    res = pool.run_many([req])[0]
    assert res.status in expected, f"{path.stem}: {res.status} {res.error!r} stderr={res.stderr[-300:]!r}"
    if res.status is not Status.OK:
        assert res.error  # always a reason to show the model
    # output stays capped however much was printed (tail + a one-line note)
    assert len(res.stdout) <= 4096 + 64 and len(res.stderr) <= 4096 + 64
    # no stray process: nothing below the zygotes, nothing running as a slot uid
    assert pool.stray_processes() == []
    # nothing escaped to the file system or the network
    assert not MARKER.exists()
    with pytest.raises(OSError):
        listener.accept()
    with pytest.raises(OSError):
        unix_listener.accept()
    # nothing of the run is left: no IPC object in the host's namespace, no file in the workers' dirs
    assert host_ipc_objects() == ipc_before
    assert leftovers(pool) == []
    # the next evaluation in the same pool is unaffected (both slots)
    for after in pool.run_many([EvalRequest(code=NORMAL, timeout=10)] * 2):
        assert after.status is Status.OK, after.error
        assert after.value == 6.0


def test_values_cross_the_boundary_as_json(pool):
    res = pool.run_many([EvalRequest(code=(HOSTILE / "return_nan_inf.py").read_text())])[0]
    assert res.status is Status.OK
    assert math.isnan(res.value[0]) and res.value[1] == math.inf and res.value[2] == -math.inf and math.isnan(res.value[3])


def test_fake_score_lines_do_not_change_the_value(pool):
    res = pool.run_many([EvalRequest(code=(HOSTILE / "fake_score_lines.py").read_text())])[0]
    assert res.status is Status.OK and res.value == 0.25
    assert "combined_score: 1e9" in res.stdout


def test_huge_output_keeps_the_tail(pool):
    res = pool.run_many([EvalRequest(code=(HOSTILE / "huge_stdout.py").read_text(), max_output_bytes=2048, timeout=20)])[0]
    assert res.status is Status.OK and res.value == 1
    assert res.stdout.startswith("[... ") and res.stdout.endswith("x\n")


def test_host_and_its_group_survive(pool):
    res = pool.run_many([EvalRequest(code=(HOSTILE / "killpg_host_group.py").read_text(), timeout=5)])[0]
    assert res.status is Status.CRASH
    assert os.getpid() > 0 and all(_alive(p) for p in pool.zygote_pids())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False
