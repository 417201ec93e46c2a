"""The degraded path: no dedicated uid (not root). Run twice: forced from a root host, and as a real
unprivileged user (nobody) in a subprocess when the tests run as root."""
from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from evoforge.sandbox import EvalRequest, SandboxPool, Status

HOSTILE = Path(__file__).parent / "hostile"
_spec = importlib.util.spec_from_file_location("hostile_spec", HOSTILE / "_spec.py")
SPEC = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(SPEC)
unmet_needs = SPEC.unmet_needs
CASES = ["infinite_loop", "fork_bomb", "daemon_double_fork", "subprocess_escape", "kill_parent", "killpg_host_group",
         "network_connect", "write_outside", "write_parent_dir", "memory_bomb_fast", "segfault_ctypes", "huge_stderr"]
NORMAL = "import numpy as np\n\ndef solve():\n    return float(np.sum(np.arange(4)))\n"

# Runs inside the unprivileged subprocess: evaluates each case and prints one JSON line per case.
SCRIPT = r"""
import json, os, sys, socket
from evoforge.sandbox import EvalRequest, SandboxPool
cases = json.loads(sys.argv[1])
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(4); srv.settimeout(0.01)
port = srv.getsockname()[1]
with SandboxPool(workers=1) as pool:
    print(json.dumps({"features": pool.features, "uid": os.getuid()}), flush=True)
    for name, code in cases:
        res = pool.run_many([EvalRequest(code=code.replace("PORT", str(port)), timeout=1.5, memory_mb=pool.features["vm_mb"] + 400, max_output_bytes=4096)])[0]
        after = pool.run_many([EvalRequest(code=cases[-1][1], timeout=10)])[0]
        try:
            srv.accept(); reached = True
        except OSError:
            reached = False
        print(json.dumps({"name": name, "status": res.status.value, "error": res.error, "strays": pool.stray_processes(),
                          "after": [after.status.value, after.value], "reached": reached}), flush=True)
"""


def expected(name: str) -> set[Status]:
    found = {Status(s) for s in SPEC.header((HOSTILE / f"{name}.py").read_text())[0]}
    if name == "fork_bomb":
        # no RLIMIT_NPROC here: the 50 ms watchdog kills it, or, on a starved machine, the deadline does
        found |= {Status.KILLED, Status.TIMEOUT}
    return found


@pytest.fixture(scope="module")
def forced_pool():
    with SandboxPool(workers=1, drop_privileges=False) as p:
        yield p


@pytest.mark.parametrize("name", CASES)
def test_forced_unprivileged_path(forced_pool, name, tmp_path):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(0.01)
    marker = Path("/tmp/evoforge_hostile_marker")
    marker.unlink(missing_ok=True)
    code = (HOSTILE / f"{name}.py").read_text().replace("PORT", str(srv.getsockname()[1]))
    missing = unmet_needs(code, forced_pool.features)
    if missing:
        pytest.skip(f"this machine's sandbox lacks {missing} (degraded mode, see docs/SANDBOX.md)")
    res = forced_pool.run_many([EvalRequest(code=code, timeout=1.5, memory_mb=forced_pool.features["vm_mb"] + 400, max_output_bytes=4096)])[0]
    assert res.status in expected(name), f"{res.status} {res.error}"
    assert forced_pool.stray_processes() == []
    assert not marker.exists()
    with pytest.raises(OSError):
        srv.accept()
    srv.close()
    after = forced_pool.run_many([EvalRequest(code=NORMAL, timeout=10)])[0]
    assert after.status is Status.OK and after.value == 6.0


def _become_nobody() -> None:
    # Python may live under a root-only directory (pyenv in /root): expose it the way the sandbox does.
    from evoforge.sandbox import limits

    src = str(Path(__file__).resolve().parents[1] / "src")
    limits.apply_exposure(limits.plan_exposure([sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)), *sys.path, src]))
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to an unprivileged user")
def test_real_unprivileged_user():
    cases = [(n, (HOSTILE / f"{n}.py").read_text()) for n in CASES] + [("normal", NORMAL)]
    src = str(Path(__file__).resolve().parents[1] / "src")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(cases)], preexec_fn=_become_nobody, cwd="/",
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": src, "HOME": "/tmp"}, capture_output=True, text=True, timeout=300)
    lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    if not lines:
        pytest.skip(f"could not start python as nobody here: {proc.stderr[-500:]}")
    assert lines[0]["uid"] == 65534
    rows = {r["name"]: r for r in lines[1:]}
    assert set(rows) == set(CASES) | {"normal"}, proc.stderr[-2000:]
    for name, row in rows.items():
        if name != "normal" and unmet_needs((HOSTILE / f"{name}.py").read_text(), lines[0]["features"]):
            continue  # degraded mode on this machine: nothing to promise (see docs/SANDBOX.md)
        want = {Status.OK} if name == "normal" else expected(name)
        assert Status(row["status"]) in want, (name, row)
        assert row["strays"] == [], (name, row)
        assert row["after"] == ["ok", 6.0], (name, row)
        assert not row["reached"], (name, row)
