"""Admission L1-L5 in the sandbox: candidates failing at each layer in turn, hostile ones, good
ones; each gets the right layer and reason, and the host is unaffected. Plus `envs check`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evoforge.envs.admission import Admission, CheckConfig, check_sources, request
from evoforge.envs.candidates import CANDIDATES, GOOD, SECRET_READER
from evoforge.sandbox import Status

FAST = CheckConfig(timeout=8.0)


@pytest.fixture(scope="module")
def checked(pool):
    names = list(CANDIDATES)
    marker = Path("/tmp/evoforge-envs-pwned")
    marker.unlink(missing_ok=True)
    # generous limits (a loaded machine), except for the loop the sandbox itself must stop
    slow = ["loop_ignoring_alarm"]
    rest = [n for n in names if n not in slow]
    results = dict(zip(rest, check_sources([CANDIDATES[n][0] for n in rest], pool, CheckConfig(timeout=60.0))))
    results.update(zip(slow, check_sources([CANDIDATES[n][0] for n in slow], pool, FAST)))
    return results, marker, pool


@pytest.mark.parametrize("name", list(CANDIDATES))
def test_each_candidate_gets_its_layer_and_reason(checked, name):
    results, _, _ = checked
    _, layer, fragment = CANDIDATES[name]
    got: Admission = results[name]
    assert (got.layer, got.passed) == (layer, layer == 5), got.reason
    assert fragment in got.reason
    if layer < 5:
        prefix = ("L1 parse", "L2 instantiate", "L3 determinism", "L4 non-triviality", "L5 scoring")[layer]
        assert got.reason.startswith(prefix)


def test_the_host_is_unaffected(checked):
    _, marker, pool = checked
    assert not marker.exists()  # the write outside the sandbox's directory was refused
    assert pool.stray_processes() == []  # forks, the second process and the killed loop left nothing


def test_host_secrets_do_not_reach_the_environment(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("EVOFORGE_HOST_SECRET", "hunter2-env")
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2-file")
    secret.chmod(0o600)
    source = SECRET_READER.replace("{SECRET_FILE!r}", repr(str(secret)))
    req, _ = request(source, "sample", {"cases": [[0, 1], [1, 2]], "call_timeout": 2.0}, 10.0, 1024)
    res = pool.run(req)
    assert res.status is Status.OK, res.error
    shown = json.dumps(res.value)
    assert "What is the sum" in shown and "hunter2-env" not in shown  # the environment is scrubbed
    if pool.features.get("uid") is not None:  # a dedicated uid cannot read the host user's 0600 file
        assert "hunter2-file" not in shown


def test_check_cli_json_and_exit_codes(tmp_path):
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(GOOD)
    bad.write_text(CANDIDATES["answer_leaked"][0])
    run = [sys.executable, "-m", "evoforge.cli.main", "envs", "check"]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    ok = subprocess.run(run + [str(good), "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) | {"stats": None} == {"layer": 5, "passed": True, "reason": "", "name": "list_sum",
                                                       "stats": None}
    no = subprocess.run(run + [str(bad), "--json"], capture_output=True, text=True, timeout=120, env=env)
    out = json.loads(no.stdout)
    assert no.returncode == 1 and out["layer"] == 3 and not out["passed"] and "answer" in out["reason"]
    missing = subprocess.run(run + [str(tmp_path / "none.py")], capture_output=True, text=True, timeout=120, env=env)
    assert missing.returncode == 2 and missing.stderr.startswith("error:")
