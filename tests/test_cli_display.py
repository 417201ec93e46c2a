"""What a person sees: the live panel on a terminal, one line per step in a log."""
from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

CMD = [sys.executable, "-m", "evoforge.cli.main", "run", "circle-packing-26", "--budget", "40", "-B", "4", "-n", "2"]


def _run_under_pty(args: list[str], timeout: float = 240) -> str:
    """Run with stdout and stderr on a pseudo-terminal (as in an interactive shell)."""
    try:
        master, slave = pty.openpty()
    except OSError as exc:  # a container without /dev/pts
        pytest.skip(f"no pseudo-terminal here: {exc}")
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "40"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(args, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 1 << 16)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                out += data
            elif proc.poll() is not None:
                break
    finally:
        proc.kill() if proc.poll() is None else None
        proc.wait()
        os.close(master)
    assert proc.returncode == 0, out.decode(errors="replace")[-2000:]
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode(errors="replace"))  # drop ANSI escapes


def test_live_panel_on_a_terminal(tmp_path):
    text = _run_under_pty(CMD + ["--run-dir", str(tmp_path / "r")])
    for label in ("step", "evaluations", "children/s", "best score", "classes"):
        assert label in text, text[-2000:]
    assert re.search(r"\d+ / 40", text)  # evaluations against the budget
    assert "done: best" in text


def test_one_line_per_step_without_a_terminal(tmp_path):
    res = subprocess.run(CMD + ["--run-dir", str(tmp_path / "r")], capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr
    lines = res.stderr.splitlines()  # progress goes to stderr; stdout stays free for data
    steps = [line for line in lines if line.startswith("step ")]
    assert steps and all(re.search(r"evals \d+/40 .* children/s +best \S+ +\[", line) for line in steps), res.stderr
    assert lines[0].startswith("evoforge: task circle-packing-26") and "run dir" in lines[0]  # not wrapped
    assert any(line.startswith("done: best") and "best_program.py" in line for line in lines)
    assert "\x1b[" not in res.stderr  # no terminal codes in a log
