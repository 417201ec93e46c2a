"""Issue 9: nothing of one evaluation is visible to the next, workers die with the host, cleanup never breaks.

Each leak test runs a program that leaves something behind, then a second one that looks for it
on the same worker; a sanity step shows the probe would see such a thing if it were there.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evoforge.sandbox import EvalRequest, SandboxPool, Status, procs
from evoforge.sandbox.fsclean import remove_tree

SECRET = "evoforge-secret-" + "7f3a9c" * 4


@pytest.fixture(scope="module")
def one():
    with SandboxPool(workers=1) as p:  # one slot: the second program surely runs where the first did
        yield p


def run(pool, code, **kw):
    kw.setdefault("timeout", 10)
    return pool.run_many([EvalRequest(code=code, **kw)])[0]


# Scans the child's own memory (made readable again with PR_SET_DUMPABLE) for a needle.
SCAN = """
import ctypes, os
def solve():
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: /proc/self/mem readable after the uid drop
    needles = [NEEDLE.encode(), NEEDLE.encode("utf-16-le"), NEEDLE.encode("utf-32-le")]
    found = []
    mem = os.open("/proc/self/mem", os.O_RDONLY)
    for line in open("/proc/self/maps"):
        addr, perms = line.split()[:2]
        if not perms.startswith("r") or "[vvar" in line or "[vsyscall" in line:
            continue
        lo, hi = (int(x, 16) for x in addr.split("-"))
        try:
            data = os.pread(mem, hi - lo, lo)
        except OSError:
            continue
        found += [data.count(n) for n in needles]
    return sum(found)
"""


def probe(needle_expr: str, extra: str = "") -> str:
    return SCAN.replace("NEEDLE", needle_expr) + extra


def test_a_child_does_not_hold_the_previous_programs_source_or_output(one):
    # the probe holds its own needle (3 encodings): a count above its baseline is a copy from elsewhere
    fresh = "evoforge-never-seen-" + "1b2c3d" * 4
    baseline = run(one, probe(repr(fresh[::-1]) + "[::-1]")).value
    first = f"def solve():\n    print({SECRET!r} * 50)\n    return {SECRET!r}\n"
    assert run(one, first).value == SECRET
    assert run(one, probe(repr(SECRET[::-1]) + "[::-1]")).value == baseline
    # sanity: one more copy of the needle in the probing child is counted
    held = f"held = [({fresh!r}[::-1] * 1)[::-1] + '']\n"
    assert run(one, probe(repr(fresh[::-1]) + "[::-1]", held)).value > baseline


def test_ipc_objects_do_not_reach_the_next_evaluation(one):
    if one.features.get("ipc") != "namespace":
        pytest.skip("no IPC namespace on this machine (degraded mode, see docs/SANDBOX.md)")
    leave = (Path(__file__).parent / "hostile" / "sysv_msg_sem_leak.py").read_text()
    assert run(one, leave).status is Status.OK
    look = ("import ctypes\nlibc = ctypes.CDLL(None)\n"
            "def solve():\n    return [libc.msgget(0x5EC12E8, 0), libc.semget(0x5EC12E9, 0, 0), libc.shmget(0x5EC12E7, 0, 0)]\n")
    assert run(one, look).value == [-1, -1, -1]
    # sanity: inside one evaluation the same lookup finds the queue
    both = leave.replace("    return [q, s]", "    return libc.msgget(0x5EC12E8, 0) == q >= 0")
    assert run(one, both).value is True


def test_cleanup_removes_any_tree(tmp_path):
    top = tmp_path / "t"
    os.makedirs(top, exist_ok=True)
    fd = os.open(top, os.O_RDONLY)
    cur = fd
    for _ in range(1100):  # deeper than the recursion limit, longer than PATH_MAX
        os.mkdir("n" * 100, dir_fd=cur)
        nxt = os.open("n" * 100, os.O_RDONLY, dir_fd=cur)
        if cur != fd:
            os.close(cur)
        cur = nxt
    os.symlink("/etc", "link", dir_fd=cur)  # never followed
    os.close(cur)
    os.close(fd)
    (top / "locked").mkdir()
    (top / "locked" / "f").write_text("x")
    (top / "locked").chmod(0)
    assert remove_tree(str(top)) and not top.exists()
    assert Path("/etc/passwd").exists()
    assert remove_tree(str(tmp_path / "absent"))


HOST = """
import json, sys, time
sys.path.insert(0, {src!r})
from evoforge.sandbox import EvalRequest, SandboxPool
pool = SandboxPool(workers=1)
print(json.dumps({{"zygote": pool.zygote_pids()[0], "uid": pool.slot_uids[0]}}), flush=True)
pool.run_many([EvalRequest(code="import time, os\\ndef solve():\\n    os.fork()\\n    time.sleep(120)\\n", timeout=120)])
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_and_children_die_with_the_host(sig):
    src = str(Path(__file__).resolve().parents[1] / "src")
    host = subprocess.Popen([sys.executable, "-c", HOST.format(src=src)], stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(host.stdout.readline())
        zygote = info["zygote"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(procs.descendants(zygote)) < 3:  # template, child, its fork
            time.sleep(0.05)
        below = procs.descendants(zygote)
        assert len(below) >= 3
        host.send_signal(sig)
        host.wait(timeout=10)
        deadline = time.monotonic() + 5
        alive = [zygote, *below]
        while time.monotonic() < deadline:
            alive = [p for p in alive if _alive(p)]
            if not alive:
                break
            time.sleep(0.05)
        assert alive == [], f"left running after the host died: {alive}"
        if info["uid"] is not None:
            assert [p for p in procs.processes_of_uid(info["uid"]) if not procs.is_zombie(p)] == []
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return not procs.is_zombie(pid)


def test_the_hardening_can_be_switched_off_and_says_so():
    with SandboxPool(workers=1, harden=False) as p:
        assert p.features["ipc"] == p.features["seccomp"] == p.features["memory_cgroup"] == "off"
        assert run(p, "def solve():\n    return 3\n").value == 3


def test_lone_surrogates_in_the_source_do_not_kill_the_worker(one):
    """A model's JSON answer can hold any lone surrogate; the program file must still be written."""
    zygotes = one.zygote_pids()
    for code in ('def solve():\n    return "\ud800"\n', 'def solve():\n    return "\udcff"\n'):
        res = run(one, code)
        assert res.status in (Status.OK, Status.SYNTAX, Status.CRASH) and "worker died" not in res.error
    assert one.zygote_pids() == zygotes  # the same worker: it did not die
    assert run(one, "def solve():\n    return 1\n").value == 1
