"""Small pieces of the sandbox, in-process: exposure planning, output tails, result parsing, encoding."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from evoforge.sandbox import limits
from evoforge.sandbox.harness import ReturnValueError, encode_value
from evoforge.sandbox.outcome import Tail, parse_result as _parse_result


@pytest.fixture
def open_dir():
    d = Path(tempfile.mkdtemp(prefix="evoforge-test-"))  # pytest's own tmp folders are 0700 already
    d.chmod(0o755)
    yield d
    shutil.rmtree(d)


def test_plan_exposure_covers_the_outermost_blocked_folder(open_dir):
    outer = open_dir / "outer"
    inner = outer / "a" / "inner"
    (inner / "pkg").mkdir(parents=True)
    (open_dir / "open").mkdir()
    outer.chmod(0o700)
    (outer / "a").chmod(0o700)
    plan = limits.plan_exposure([str(inner), str(inner / "pkg"), str(open_dir / "open")])
    assert plan == [(str(outer), [str(inner)])]  # pkg is inside inner: one bind is enough; open needs none


def test_tail_keeps_the_end():
    t = Tail(10)
    for i in range(1000):
        t.add(f"{i:04d}\n".encode())
    text = t.text()
    assert text.endswith("0998\n0999\n") and text.startswith("[... ") and len(text) < 60


def _frame(b: bytes) -> bytes:
    return len(b).to_bytes(4, "big") + b


def test_parse_result_rejects_forgeries():
    assert _parse_result(b"")[0] is None
    assert _parse_result(b"\xff\xff\xff\xffxx")[0] is None  # claims 4 GB, has 2 bytes
    assert _parse_result(_frame(b"[[[[["))[0]["status"] == "crash"
    assert _parse_result(_frame(b'{"status": "invalid"}'))[0]["status"] == "crash"  # only the caller sets INVALID
    head, value = _parse_result(_frame(b'{"status": "ok", "error": ""}') + _frame(b"[1, 2]"))
    assert head["status"] == "ok" and json.loads(value) == [1, 2]
    assert _parse_result(_frame(b'{"status": "ok"}'))[0]["status"] == "crash"  # value frame missing


def test_encode_value_conversions_and_errors():
    data = encode_value({"a": np.arange(3, dtype=np.int32), "b": (np.float64(1.5), np.bool_(False)), "c": float("nan")}, 1 << 20)
    assert data == b'{"a":[0,1,2],"b":[1.5,false],"c":NaN}'
    for bad in ({1, 2}, (x for x in ()), np.array([1j]), object(), b"bytes"):
        with pytest.raises(ReturnValueError):
            encode_value(bad, 1 << 20)
    with pytest.raises(ReturnValueError, match="too large"):
        encode_value(list(range(1000)), 100)


def test_landlock_probe_is_harmless():
    assert limits.landlock_abi() >= 0
    assert os.getpid() > 0
