"""Issue 9, the host's side: what children and servers send is stored safely and bounded; one
writer per run directory; user-facing failures are one line."""
from __future__ import annotations

import http.server
import json
import math
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evoforge.cli.textsafe import terminal_safe
from evoforge.database import sanitize
from evoforge.database.runlock import RunLock, RunLocked
from evoforge.database.store import RunStore
from evoforge.database.sanitize import StoreLimits

CMD = [sys.executable, "-m", "evoforge.cli.main"]
ENV = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))


def test_sanitize_makes_any_value_storable():
    assert sanitize.text("a\udcffb").encode("utf-8")
    assert sanitize.text("x" * 100, 10).startswith("x" * 10) and "cut by evoforge" in sanitize.text("x" * 100, 10)
    assert sanitize.number(10**400) == math.inf and sanitize.number(-(10**400)) == -math.inf
    assert sanitize.number(float("nan")) is None and sanitize.number("3") is None and sanitize.number(True) == 1.0
    shared: list = [1]
    for _ in range(40):
        shared = [shared, shared]  # 2^40 leaves if copied naively
    weird = {1: 10**5000, "s\udcff": "\ud800", "t": (1, 2), "deep": shared, "obj": object(), "nan": float("nan")}
    out = json.loads(sanitize.dumps(weird))
    assert out["1"] == math.inf and out["t"] == [1, 2] and "obj" in out
    big = {"combined_score": 1.5, "blob": "x" * 5_000_000, **{f"m{i}": float(i) for i in range(10)}}
    cut = json.loads(sanitize.dumps(big, 4096))
    assert cut["combined_score"] == 1.5 and "blob" not in cut and "_evoforge_cut" in cut
    assert len(sanitize.dumps(big, 4096)) <= 4096


def test_store_boundary_bounds_and_cleans(tmp_path):
    store = RunStore(tmp_path / "run.db", limits=StoreLimits(response_chars=1000, feedback_chars=500, metrics_bytes=2000))
    [cid] = store.add_responses(1, [dict(pick=0, resp=0, response="r\udcff" * 10_000, response_error="e\ud800",
                                         prompt_tokens=10**30, completion_tokens="many")])
    store.classify(cid, code="c\udcff", canon_hash="h", child_class="evaluated", status="ok", score=10**400,
                   fitness=float("nan"), reward=2, metrics={"a": "\udcff", "n": 10**400, "blob": "x" * 10**6},
                   feedback="f\udcff" * 10_000, wall_time="1.5")
    store.put_object(cid, {"x": 10**9000, "y": "\udcff"})
    row = store.child_detail(cid)
    assert len(row["response"]) < 1100 and "cut by evoforge" in row["response"]
    assert len(row["feedback"]) < 600 and row["score"] == math.inf and row["fitness"] is None
    assert row["metrics"]["n"] == math.inf and "blob" not in row["metrics"]
    assert store.get_object(cid)["x"] == math.inf
    store.close()


def test_a_run_directory_has_one_writer(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(RunLocked, match=f"pid {os.getpid()}"):
            RunLock(tmp_path).acquire()
    with RunLock(tmp_path):  # released on exit, and by the kernel when a holder dies
        pass
    # `run` removes an empty run.db of a failed start, but never one a starting process holds
    from evoforge.cli.run import UserError, _holds_a_run

    RunStore(tmp_path / "run.db").close()
    with RunLock(tmp_path):
        with pytest.raises(UserError, match="pid"):
            _holds_a_run(tmp_path)
    assert (tmp_path / "run.db").exists()
    assert _holds_a_run(tmp_path) is False and not (tmp_path / "run.db").exists()


def test_terminal_escapes_are_made_visible():
    s = terminal_safe("a\x1b]0;title\x07b\x1b[2Jc\x1b]52;c;aGk=\x07\r\n\tok\x9b\udcff")
    assert "\x1b" not in s and "\x07" not in s and "\r" not in s and "\x9b" not in s
    assert "\n\tok" in s and "\\x1b[2J" in s
    s.encode("utf-8")


class _Huge(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(200 << 20))
        self.end_headers()
        chunk = b" " * (1 << 20)
        try:
            for _ in range(200):
                self.wfile.write(chunk)
        except OSError:
            pass

    do_GET = do_POST

    def log_message(self, *args):
        pass


def test_openai_backend_does_not_read_a_200_mb_body():
    from evoforge.llm import BACKENDS, GenerationConfig, Prompt

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Huge)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        b = BACKENDS.get("openai")(base_url=f"http://127.0.0.1:{srv.server_port}/v1", model="m",
                                   max_response_bytes=4 << 20, max_retries=0)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = b.generate([Prompt(text="hi")], GenerationConfig(n=1, max_tokens=16))
        b.close()
        assert "max_response_bytes" in out[0][0].error
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 100 << 10  # KiB: far below 200 MB
    finally:
        srv.shutdown()


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(CMD + list(args), capture_output=True, text=True, timeout=timeout, env=ENV)


def test_user_facing_failures_are_one_line(tmp_path):
    bad = _cli("run", "circle-packing-26", "--adapter", "x", "--run-dir", str(tmp_path / "a"), "--quiet")
    assert bad.returncode == 2 and "--adapter" in bad.stderr and "hf" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "a").exists()  # a failed start leaves no run directory
    opt = tmp_path / "opt.json"
    opt.write_text(json.dumps({"backend": {"name": "builtin", "options": {"no_such_option": 1}}}))
    bad = _cli("run", "circle-packing-26", "--config", str(opt), "--run-dir", str(tmp_path / "b"), "--quiet")
    assert bad.returncode == 2 and "no_such_option" in bad.stderr and not (tmp_path / "b").exists()
    prog = tmp_path / "p.py"
    prog.write_text("def solve():\n    return 1\n")
    inf = _cli("verify", "circle-packing-26", str(prog), "--timeout", "inf")
    assert inf.returncode == 2 and "--timeout" in inf.stderr and "Overflow" not in inf.stderr
    # an empty run store (a start that stopped before its config was stored): the advice does not loop
    empty = tmp_path / "empty"
    empty.mkdir()
    RunStore(empty / "run.db").close()
    res = _cli("resume", str(empty))
    assert res.returncode == 2 and "evoforge run" in res.stderr
    run = _cli("run", "circle-packing-26", "--budget", "2", "-B", "1", "-n", "1", "--run-dir", str(empty), "--quiet")
    assert run.returncode == 0, run.stderr
    _archived_run_is_readable(empty, tmp_path / "ro")


def _archived_run_is_readable(run_dir: Path, mount: Path) -> None:
    """A run on a read-only mount: `show` reads it, `resume` says why it cannot (root: a bind mount)."""
    mount.mkdir()
    ok = os.geteuid() == 0 and subprocess.run(["mount", "--bind", str(run_dir), str(mount)], capture_output=True).returncode == 0
    if not ok:
        return  # no way to make a read-only directory for root here; the check needs a bind mount
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mount)], check=True, capture_output=True)
        show = _cli("show", str(mount))
        assert show.returncode == 0 and "best_score" in show.stdout, show.stderr
        res = _cli("resume", str(mount))
        assert res.returncode == 2 and "read-only" in res.stderr
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


@pytest.mark.slow  # ~10 s of real runs; the lock itself is covered above (python -m pytest -m slow tests/test_hardening_host.py)
def test_sigterm_and_a_second_writer(tmp_path):
    run_dir = tmp_path / "r"
    proc = subprocess.Popen(CMD + ["run", "circle-packing-26", "--budget", "100000", "--run-dir", str(run_dir), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (run_dir / "best_program.py").exists():
            time.sleep(0.1)
        second = _cli("resume", str(run_dir), "--quiet")
        assert second.returncode == 2 and f"pid {proc.pid}" in second.stderr and "Traceback" not in second.stderr
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    res = _cli("resume", str(run_dir), "--budget", "40", "--quiet")
    assert res.returncode == 0, res.stderr


def test_extreme_metric_values_do_not_break_map_elites_cells():
    from evoforge.database.base import Program
    from evoforge.selectors.features import FeatureSpace

    space = FeatureSpace(["m"], 10)
    cells = [space.cell(Program(i, "x", 1.0, 1.0, None, 0, {"m": v}, "", ""))
             for i, v in enumerate((-1.7e308, 1.7e308, 0.0, float("inf"), float("nan"), 10**400))]
    assert all(0 <= c[0] < 10 for c in cells)
