"""A local OpenAI-compatible stand-in server that answers with the builtin mutation operator.

It is not a model: each completion is a SEARCH/REPLACE response written by ``BuiltinMutator``
for the program in the LAST ```python fenced block of the last user message. It serves
``POST /v1/chat/completions`` (``n``, usage counts, optional fake logprobs in vLLM's
"token_id:N" form) and ``GET /v1/models``, on 127.0.0.1 only. Used by the openai backend's
tests and to drive other tools (OpenEvolve) without a GPU::

    python -m evoforge.llm.standin_server --port 8011
    with StandinServer(fail_first_k=2) as srv: ... srv.url ...
"""
from __future__ import annotations

import argparse
import json
import re
import socket
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from evoforge.llm.builtin import BuiltinMutator

_FENCE_RE = re.compile(r"```[ \t]*(\w*)[ \t]*\r?\n(.*?)```", re.DOTALL)
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
MODEL_NAME = "evoforge-standin"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # the default backlog of 5 stalls B*n concurrent connects


def last_python_block(text: str) -> str | None:
    """The last ```python block (or, failing that, the last unlabelled fenced block)."""
    blocks = _FENCE_RE.findall(text)
    python = [body for lang, body in blocks if lang.lower() in ("python", "py", "python3")]
    plain = [body for lang, body in blocks if not lang]
    found = python or plain
    return found[-1] if found else None


def count_tokens(text: str) -> int:
    """A crude token count (words and punctuation): the stand-in has no tokenizer."""
    return len(_TOKEN_RE.findall(text))


class StandinServer:
    """Background-thread server; use as a context manager. ``url`` is the OpenAI base URL."""

    def __init__(self, port: int = 0, latency_s: float = 0.0, fail_first_k: int = 0, seed: int = 0,
                 host: str = "127.0.0.1", honour_n: bool = True):
        if host not in ("127.0.0.1", "localhost"):
            raise ValueError("the stand-in server listens on 127.0.0.1 only")
        self.latency_s = float(latency_s)
        self.fail_first_k = int(fail_first_k)
        self.seed = int(seed)
        self.honour_n = honour_n  # False: behave like a server that ignores n (one choice)
        self.mutator = BuiltinMutator(seed=seed)
        self.lock = threading.Lock()
        self.requests = 0  # POSTs to /chat/completions received
        self.connections = 0  # TCP connections accepted (a client that keeps them alive reuses them)
        self.failed = 0  # of which answered with an injected 429/500
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies: list[dict[str, Any]] = []  # request bodies, for tests
        self._httpd = _Server(("127.0.0.1", port), _handler_for(self))
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "StandinServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="standin-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "StandinServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- the completion ---------------------------------------------------------------------

    def complete(self, body: dict[str, Any], request_no: int) -> dict[str, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError("'messages' must be a non-empty list")
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        prompt_text = "\n".join(_content_text(m.get("content")) for m in messages if isinstance(m, dict))
        user_text = _content_text(users[-1].get("content")) if users else ""
        parent = last_python_block(user_text)
        n = int(body.get("n") or 1)
        if not 1 <= n <= 512:
            raise ValueError(f"'n' must be between 1 and 512, got {n}")
        n_out = n if self.honour_n else 1
        seed = body.get("seed")
        base = [self.seed, request_no if seed is None else int(seed) & 0x7FFFFFFF, zlib.crc32((parent or "").encode())]
        choices, completion_tokens = [], 0
        for j in range(n_out):
            if parent is None:
                text = "I found no ```python block with a program to improve in your message."
            else:
                text = self.mutator.mutate(parent, np.random.default_rng(base + [j])).text
            tokens = _TOKEN_RE.findall(text)
            completion_tokens += len(tokens)
            choice: dict[str, Any] = {"index": j, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop", "logprobs": None}
            if body.get("logprobs"):
                choice["logprobs"] = {"content": _fake_logprobs(tokens, bool(body.get("return_tokens_as_token_ids")))}
            choices.append(choice)
        prompt_tokens = count_tokens(prompt_text)
        return {
            "id": f"chatcmpl-standin-{request_no}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or MODEL_NAME),
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _fake_logprobs(tokens: list[str], as_ids: bool) -> list[dict[str, Any]]:
    # Deterministic stand-ins, clearly not a model's: ids from a hash, log-prob from the length.
    out = []
    for t in tokens:
        tid = zlib.crc32(t.encode()) % 32000
        out.append({"token": f"token_id:{tid}" if as_ids else t, "logprob": -0.1 * len(t), "top_logprobs": []})
    return out


def _handler_for(server: StandinServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            with server.lock:
                server.connections += 1
            # Headers and body go out in separate writes: without NODELAY each answer waits ~40 ms.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            pass

        def _send(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, code: int, message: str, kind: str = "invalid_request_error") -> None:
            self._send(code, {"error": {"message": message, "type": kind, "code": code}})

        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "evoforge"}]})
            elif self.path.rstrip("/") in ("/health", "/v1/health"):
                self._send(200, {"status": "ok"})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                return self._error(404, f"no route {self.path} (the stand-in serves /v1/chat/completions)")
            with server.lock:
                server.requests += 1
                request_no = server.requests
                inject = request_no <= server.fail_first_k
                if inject:
                    server.failed += 1
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                if server.latency_s > 0:
                    time.sleep(server.latency_s)
                if inject:  # alternate 429 and 500, as a loaded server would
                    if request_no % 2:
                        return self._error(429, "rate limited (injected by the stand-in)", "rate_limit_error")
                    return self._error(500, "internal error (injected by the stand-in)", "server_error")
                try:
                    body = json.loads(raw or b"{}")
                    if not isinstance(body, dict):
                        raise ValueError("the request body must be a JSON object")
                    if body.get("stream"):
                        raise ValueError("streaming is not supported by the stand-in server")
                    server.bodies.append(body)
                    payload = server.complete(body, request_no)
                except (ValueError, TypeError) as exc:
                    return self._error(400, str(exc))
                self._send(200, payload)
            finally:
                with server.lock:
                    server.in_flight -= 1

    return Handler


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="OpenAI-compatible stand-in server (builtin mutation operator, not a model)")
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds to wait before each answer")
    ap.add_argument("--fail-first-k", type=int, default=0, help="answer the first K requests with 429/500")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        srv = StandinServer(args.port, args.latency, args.fail_first_k, args.seed)
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}")
        return 1
    print(f"stand-in server (builtin mutation operator, not a model) at {srv.url}  model={MODEL_NAME}", flush=True)
    try:
        srv._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv._httpd.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
