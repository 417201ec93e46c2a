"""Scale-out pieces that need no cluster: server balancing, dead servers, Ray absent."""
from __future__ import annotations

import builtins
import socket
from pathlib import Path

import pytest

from evoforge.llm import BACKENDS, GenerationConfig, Prompt
from evoforge.llm.servers import ServerPool
from evoforge.llm.standin_server import StandinServer

ROOT = Path(__file__).resolve().parents[1]
CP = (ROOT / "src/evoforge/tasks/programs/circle_packing.py").read_text()
PROMPT = Prompt(text=f"Improve it.\n```python\n{CP}```\n", parent_code=CP)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def dead_url() -> str:
    with socket.socket() as s:  # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_pool_picks_the_server_with_fewest_requests_in_flight():
    pool = ServerPool(["http://a/v1", "http://b/v1/", "http://c/v1"], clock=Clock())
    first = [pool.acquire() for _ in range(3)]
    assert sorted(s.url for s in first) == ["http://a/v1", "http://b/v1", "http://c/v1"]
    pool.release(first[1], ok=True)  # b finished: it has the fewest in flight now
    assert pool.acquire().url == first[1].url
    assert [s.outstanding for s in pool.servers] == [1, 1, 1]


def test_dead_server_sits_out_a_growing_cooldown_and_comes_back():
    clock = Clock()
    pool = ServerPool(["http://a/v1", "http://b/v1"], cooldown=5, max_cooldown=12, clock=clock)
    a = next(s for s in pool.servers if s.url == "http://a/v1")
    pool.acquire()
    pool.release(a, ok=False, connection_failed=True)
    assert {pool.acquire().url for _ in range(4)} == {"http://b/v1"}  # a is out of rotation
    clock.t += 5.1
    assert "http://a/v1" in {pool.acquire().url for _ in range(6)}  # back after its cooldown
    pool.release(a, ok=False, connection_failed=True)  # fails again: 10 s, then capped at 12
    assert a.dead_until == pytest.approx(clock.t + 10)
    pool.release(a, ok=False, connection_failed=True)
    assert a.dead_until == pytest.approx(clock.t + 12)
    pool.release(a, ok=True)
    assert a.alive(clock.t) and a.failures == 0


def test_all_dead_uses_the_one_due_back_first():
    clock = Clock()
    pool = ServerPool(["http://a/v1", "http://b/v1"], cooldown=5, clock=clock)
    a, b = pool.servers
    pool.release(a, ok=False, connection_failed=True)
    pool.release(a, ok=False, connection_failed=True)  # a: 10 s
    pool.release(b, ok=False, connection_failed=True)  # b: 5 s
    assert pool.acquire().url == "http://b/v1"


def test_pool_rejects_empty_and_repeated_urls():
    with pytest.raises(ValueError, match="no server"):
        ServerPool([])
    with pytest.raises(ValueError, match="twice"):
        ServerPool(["http://a/v1", "http://a/v1/"])


def test_openai_backend_spreads_requests_and_routes_around_a_dead_server():
    with StandinServer(seed=1, honour_n=False, latency_s=0.05) as s1, StandinServer(seed=2, honour_n=False, latency_s=0.05) as s2:
        dead = dead_url()
        b = BACKENDS.get("openai")(base_url=[s1.url, dead, s2.url], model="m", backoff_base=0.01)
        try:
            out = b.generate([PROMPT] * 6, GenerationConfig(n=2, seed=0))
            out += b.generate([PROMPT] * 6, GenerationConfig(n=2, seed=1))
        finally:
            b.close()
        assert all(not r.error and r.text for row in out for r in row)
        assert s1.requests > 0 and s2.requests > 0  # both live servers served
        assert abs(s1.requests - s2.requests) <= max(4, (s1.requests + s2.requests) // 3)
        by_url = {s.url: s for s in b.servers.servers}
        assert by_url[dead].served == 0 and by_url[dead].failures >= 1
        assert not by_url[dead].alive(by_url[dead].dead_until - 0.01)  # out of rotation


def test_every_server_dead_is_one_clear_error():
    from evoforge.llm.base import BackendError

    b = BACKENDS.get("openai")(base_url=[dead_url(), dead_url()], model="m", backoff_base=0.0, max_retries=1)
    try:
        with pytest.raises(BackendError, match="cannot reach the model server"):
            b.generate([PROMPT], GenerationConfig(n=1))
    finally:
        b.close()


def test_ray_executor_without_ray_is_one_line(monkeypatch):
    from evoforge.cluster import INSTALL_HINT, RayExecutor, RayUnavailable

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(RayUnavailable) as info:
        RayExecutor()
    assert str(info.value) == INSTALL_HINT and "\n" not in str(info.value)


def test_executor_config_as_a_mapping_or_a_name():
    from evoforge.engine.config import build_config

    cfg = build_config({"executor": {"name": "ray", "address": "auto", "workers": 8}})
    assert cfg.executor == "ray" and cfg.executor_options == {"address": "auto", "workers": 8}
    assert build_config({"executor": "sandbox"}).executor_options == {}
    from evoforge.engine.config import ConfigError

    with pytest.raises(ConfigError, match="needs a 'name'"):
        build_config({"executor": {"address": "auto"}})


def test_ray_address_without_the_ray_executor_is_one_line(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "evoforge.cli.main", "run", "circle-packing-26", "--ray-address",
                          "auto", "--run-dir", str(tmp_path / "r")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.strip() == "error: --ray-address needs --executor ray"
