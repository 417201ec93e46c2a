from __future__ import annotations

import asyncio

import socket
import time
from pathlib import Path

import httpx
import pytest

from evoforge.edits import apply_edits, parse_edits
from evoforge.llm import BACKENDS, BackendError, GenerationConfig, OpenAIBackend, Prompt, parse_choice_logprobs
from evoforge.llm.standin_server import MODEL_NAME, StandinServer, count_tokens, last_python_block

ROOT = Path(__file__).resolve().parents[1]
CP = (ROOT / "src/evoforge/tasks/programs/circle_packing.py").read_text()
PROMPT = Prompt(text=f"Improve it.\n```python\nold = 1\n```\nCurrent:\n```python\n{CP}```\n", system="You are terse.", parent_code=CP)


def backend(url: str, **kw) -> OpenAIBackend:
    kw.setdefault("backoff_base", 0.01)
    return BACKENDS.get("openai")(base_url=url, **kw)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_n_per_request_usage_and_real_edits():
    with StandinServer(seed=1) as srv:
        b = backend(srv.url)
        out = b.generate([PROMPT, PROMPT], GenerationConfig(n=4, seed=3))
        assert srv.requests == 2 and b.model == MODEL_NAME  # one request per prompt, model discovered
        assert b._n_works is True
        body = srv.bodies[0]
        assert body["n"] == 4 and body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert [len(row) for row in out] == [4, 4]
    for r in out[0]:
        assert r.error == "" and r.prompt_tokens == count_tokens(PROMPT.system + "\n" + PROMPT.text)
        assert r.completion_tokens > 0 and r.latency > 0
    # the server mutates the LAST python block: edits apply to CP, not to 'old = 1'
    applied = [apply_edits(CP, parse_edits(r.text)).applied for row in out for r in row if "SEARCH" in r.text]
    assert sum(a > 0 for a in applied) >= 6


def test_server_that_ignores_n_falls_back_to_separate_requests():
    with StandinServer(honour_n=False) as srv:
        b = backend(srv.url, model="m")
        out = b.generate([PROMPT], GenerationConfig(n=3))
        assert len(out[0]) == 3 and all(not r.error for r in out[0]) and b._n_works is False
        assert srv.requests == 3  # one with n=3 (1 choice back), two top-ups
        b.generate([PROMPT], GenerationConfig(n=3))
        assert srv.requests == 6 and all(body["n"] == 1 for body in srv.bodies[3:])


def test_retries_on_429_and_500():
    with StandinServer(fail_first_k=3) as srv:
        out = backend(srv.url, model="m", use_n=False).generate([PROMPT], GenerationConfig(n=2))
        assert srv.failed == 3 and srv.requests == 5
    assert all(r.error == "" and r.text for r in out[0])


def test_failed_request_becomes_an_error_response_not_an_exception():
    with StandinServer(fail_first_k=100) as srv:
        out = backend(srv.url, model="m", max_retries=1).generate([PROMPT], GenerationConfig(n=2))
    assert [r.text for r in out[0]] == ["", ""]
    assert all(r.error.startswith("HTTP 429") or r.error.startswith("HTTP 500") for r in out[0])


def test_client_error_is_not_retried():
    with StandinServer() as srv:
        out = backend(srv.url, model="m", extra_body={"stream": True}).generate([PROMPT], GenerationConfig(n=1))
        assert srv.requests == 1
    assert out[0][0].error == "HTTP 400: streaming is not supported by the stand-in server"


def test_bounded_concurrency():
    with StandinServer(latency_s=0.2) as srv:
        t0 = time.perf_counter()
        backend(srv.url, model="m", use_n=False, max_concurrency=8).generate([PROMPT] * 4, GenerationConfig(n=4))
        wall = time.perf_counter() - t0
        assert srv.max_in_flight == 8 and wall < 16 * 0.2 * 0.6  # 16 requests, 8 at a time
    with StandinServer(latency_s=0.05) as srv:
        backend(srv.url, model="m", use_n=False, max_concurrency=2).generate([PROMPT] * 3, GenerationConfig(n=2))
        assert srv.max_in_flight <= 2 and srv.requests == 6


def test_dead_server_raises_one_line_backend_error():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(BackendError) as err:
        backend(url, model="m", max_retries=1).generate([PROMPT], GenerationConfig(n=2))
    assert str(err.value) == f"cannot reach the model server at {url}: connection refused"
    with pytest.raises(BackendError, match="cannot reach the model server"):
        backend(url, max_retries=0).generate([PROMPT], GenerationConfig(n=1))  # model discovery


def test_logprobs_and_token_ids():
    with StandinServer() as srv:
        out = backend(srv.url, model="m", logprobs=True).generate([PROMPT], GenerationConfig(n=2))
        assert srv.bodies[0]["logprobs"] is True and srv.bodies[0]["return_tokens_as_token_ids"] is True
    for r in out[0]:
        assert r.token_ids and r.logprobs and len(r.token_ids) == len(r.logprobs) == r.completion_tokens
        assert all(isinstance(t, int) for t in r.token_ids) and all(lp <= 0 for lp in r.logprobs)


def test_parse_choice_logprobs_formats():
    chat = {"logprobs": {"content": [{"token": "token_id:5", "logprob": -0.5}, {"token": "token_id:7", "logprob": -1}]}}
    assert parse_choice_logprobs(chat) == ([5, 7], [-0.5, -1.0])
    text_tokens = {"logprobs": {"content": [{"token": "Hi", "logprob": -0.25}]}}
    assert parse_choice_logprobs(text_tokens) == (None, [-0.25])
    completions = {"logprobs": {"tokens": ["token_id:1"], "token_logprobs": [-2.0]}}
    assert parse_choice_logprobs(completions) == ([1], [-2.0])
    assert parse_choice_logprobs({"logprobs": None}) == (None, None)


def test_repeated_calls_and_call_from_a_running_event_loop():
    with StandinServer() as srv:
        b = backend(srv.url, model="default")
        for _ in range(3):
            assert len(b.generate([PROMPT], GenerationConfig(n=2))[0]) == 2

        async def inside() -> int:
            return len(b.generate([PROMPT], GenerationConfig(n=2))[0])

        assert asyncio.run(inside()) == 2
        assert b.model == MODEL_NAME  # "default" means: ask the server


def test_standin_accepts_openevolve_style_requests_and_reports_errors():
    with StandinServer() as srv:
        body = {"model": "whatever", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": PROMPT.text}],
                "temperature": 0.7, "top_p": 0.95, "max_tokens": 4096}
        r = httpx.post(srv.url + "/chat/completions", json=body, timeout=10)
        assert r.status_code == 200
        data = r.json()
        assert len(data["choices"]) == 1 and data["usage"]["total_tokens"] > 0
        assert data["choices"][0]["message"]["content"]
        assert httpx.get(srv.url + "/models", timeout=10).json()["data"][0]["id"] == MODEL_NAME
        bad = httpx.post(srv.url + "/chat/completions", content=b"{not json", timeout=10)
        assert bad.status_code == 400 and "error" in bad.json()
        assert httpx.post(srv.url + "/completions", json=body, timeout=10).status_code == 404
        parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "```python\nx = 1.5\n```"}]}]}
        assert "SEARCH" in httpx.post(srv.url + "/chat/completions", json=parts, timeout=10).json()["choices"][0]["message"]["content"]


def test_last_python_block():
    assert last_python_block("```python\na\n```\n```python\nb\n```") == "b\n"
    assert last_python_block("```\nc\n```") == "c\n"
    assert last_python_block("none") is None
    with pytest.raises(ValueError, match="127.0.0.1 only"):
        StandinServer(host="0.0.0.0")


def test_bad_options():
    with pytest.raises(BackendError, match="use_n"):
        OpenAIBackend(use_n="sometimes")
    with pytest.raises(BackendError, match="max_concurrency"):
        OpenAIBackend(max_concurrency=0)


def test_connections_are_reused_across_calls_and_closed_with_the_backend():
    with StandinServer() as srv:
        b = backend(srv.url, model="m", max_concurrency=4)
        for _ in range(5):
            out = b.generate([PROMPT] * 2, GenerationConfig(n=2))
            assert all(r.text and not r.error for g in out for r in g)
        assert srv.requests == 10 and srv.connections <= 4  # one pool for the backend's life
        thread = b._thread
        b.close()
        assert thread is not None and not thread.is_alive()
        b.close()  # twice is harmless


def test_generate_from_inside_a_running_event_loop():
    async def main(url: str):
        b = backend(url, model="m")
        try:
            return b.generate([PROMPT], GenerationConfig(n=2))
        finally:
            b.close()

    with StandinServer() as srv:
        out = asyncio.run(main(srv.url))
    assert len(out) == 1 and len(out[0]) == 2 and not out[0][0].error
