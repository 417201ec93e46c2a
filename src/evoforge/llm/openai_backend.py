"""The ``openai`` backend: any OpenAI-compatible chat endpoint (vLLM, SGLang, OpenAI, llama.cpp, Ollama).

B prompts x n responses are sent concurrently (at most ``max_concurrency`` requests in flight),
with ``n`` per request where the server honours it (``use_n``: True, False or "auto": try, and
fall back to separate requests when fewer choices come back). Transient failures (429, 5xx,
connection errors, timeouts) are retried with exponential backoff and jitter. A request that
still fails becomes ``Response(text="", error=...)`` so one bad request does not lose the batch;
when every request failed to connect, ``BackendError`` says the server cannot be reached.
Uses httpx directly (no openai import), so the raw JSON, logprobs included, is at hand.
One event loop thread and one connection pool live as long as the backend, so a run's steps
reuse their connections (no new TCP/TLS handshake per step); ``close()`` ends both.
"""
from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

from evoforge.llm.base import BACKENDS, Backend, BackendError, GenerationConfig, Prompt, Response
from evoforge.llm.server_info import (
    GRAMMAR_FIELDS,
    ServerInfo,
    fit_max_tokens,
    grammar_fields,
    kind_from_models,
    n_ctx_from_props,
    plain_sampling_fields,
    strip_reasoning,
)
from evoforge.llm.servers import ServerPool

_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


@dataclass
class _Failure(Exception):
    message: str
    connection: bool = False  # True when the server could not be reached at all


def parse_choice_logprobs(choice: dict[str, Any]) -> tuple[list[int] | None, list[float] | None]:
    """Token ids and sampler log-probs of one choice, when the server returned them.

    Chat format (vLLM, OpenAI): ``choice.logprobs.content[k] = {"token", "logprob", ...}``; with
    vLLM's ``return_tokens_as_token_ids`` the token strings read "token_id:123". Completions
    format: ``choice.logprobs = {"tokens": [...], "token_logprobs": [...]}``. Ids are None when
    the tokens are not in "token_id:N" form (the log-probs are still returned).
    """
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return None, None
    if isinstance(lp.get("content"), list):
        tokens = [c.get("token") for c in lp["content"]]
        logprobs = [c.get("logprob") for c in lp["content"]]
    elif isinstance(lp.get("token_logprobs"), list):
        tokens, logprobs = list(lp.get("tokens") or []), lp["token_logprobs"]
    else:
        return None, None
    try:
        values = [float(x) for x in logprobs]
    except (TypeError, ValueError):
        return None, None
    ids: list[int] | None = []
    for t in tokens:
        if isinstance(t, str) and t.startswith("token_id:") and t[9:].lstrip("-").isdigit():
            ids.append(int(t[9:]))  # type: ignore[union-attr]
        else:
            ids = None
            break
    if ids is not None and len(ids) != len(values):
        ids = None
    return ids, values


@BACKENDS.register("openai")
class OpenAIBackend(Backend):
    name = "openai"

    def __init__(
        self,
        base_url: str | list[str] = "http://127.0.0.1:8000/v1",  # several: balanced (llm/servers.py)
        model: str | None = None,  # None, "auto" or "default": the first model listed at GET /models
        api_key_env: str = "OPENAI_API_KEY",
        use_n: bool | str = "auto",
        max_concurrency: int = 64,
        timeout: float = 600.0,
        connect_timeout: float = 10.0,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        logprobs: bool = False,
        extra_body: dict[str, Any] | None = None,
        grammar_field: str = "auto",  # how Prompt.meta["grammar"] is sent (llm/server_info.py); "none": not
        plain_sampling: bool | str = "auto",  # temperature only; auto: on llama.cpp servers and with logprobs
        fallback_max_tokens: int = 4096,  # max_tokens cap when the server does not tell its context
        strip_reasoning: bool = True,  # parse only the answer after <think>...</think>
        max_response_bytes: int = 32 << 20,  # a larger body is a failed call, not read further (issue 9)
        **_: object,
    ):
        if use_n not in (True, False, "auto"):
            raise BackendError(f"use_n must be true, false or 'auto', got {use_n!r}")
        if max_concurrency < 1:
            raise BackendError(f"max_concurrency must be >= 1, got {max_concurrency}")
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        try:
            self.servers = ServerPool(urls)
        except ValueError as exc:
            raise BackendError(f"base_url: {exc}") from None
        self.base_url = self.servers.urls[0] if len(urls) == 1 else " | ".join(self.servers.urls)
        self.model = None if model in (None, "", "auto", "default") else model
        self.api_key = os.environ.get(api_key_env) or "EMPTY"  # local servers accept any key
        self.use_n = use_n
        self._n_works: bool | None = None if use_n == "auto" else bool(use_n)
        self.max_concurrency = int(max_concurrency)
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self.max_retries = int(max_retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.logprobs = bool(logprobs)
        self.extra_body = dict(extra_body or {})
        if grammar_field not in GRAMMAR_FIELDS:
            raise BackendError(f"grammar_field must be one of {', '.join(GRAMMAR_FIELDS)}, got {grammar_field!r}")
        self.grammar_field = grammar_field
        self.plain_sampling = plain_sampling
        self.fallback_max_tokens = int(fallback_max_tokens)
        self.strip_reasoning = bool(strip_reasoning)
        self.max_response_bytes = int(max_response_bytes)
        self.server_info: ServerInfo | None = None  # probed once, at the first generate
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Any = None  # httpx.AsyncClient, made in the loop thread
        self._lock = threading.Lock()

    # ---- sync entry point ------------------------------------------------------------------

    def generate(self, prompts: list[Prompt], cfg: GenerationConfig) -> list[list[Response]]:
        """Blocking; safe to call from any thread, also from inside a running event loop."""
        if not prompts:
            return []
        future = asyncio.run_coroutine_threadsafe(self._generate(prompts, cfg), self._event_loop())
        try:
            return future.result()
        except BaseException:
            future.cancel()  # e.g. Ctrl-C: do not leave requests running in the loop thread
            raise

    def close(self) -> None:
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None:
            return
        if self._client is not None:
            try:
                asyncio.run_coroutine_threadsafe(self._client.aclose(), loop).result(timeout=5)
            except Exception:  # a dead connection must not fail the shutdown
                pass
            self._client = None
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=5)
        loop.close()

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="evoforge-openai", daemon=True)
                self._thread.start()
            return self._loop

    # ---- async machinery (in the loop thread) -----------------------------------------------

    def _http_client(self) -> Any:
        if self._client is None:
            import httpx

            limits = httpx.Limits(max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency)
            timeout = httpx.Timeout(self.timeout, connect=self.connect_timeout)
            headers = {"Authorization": f"Bearer {self.api_key}"}
            # A TLS context only for https: httpx would otherwise build one (~0.2 s) for nothing.
            https = any(u.startswith("https") for u in self.servers.urls)
            verify: Any = httpx.create_ssl_context() if https else False
            self._client = httpx.AsyncClient(timeout=timeout, limits=limits, headers=headers, verify=verify)
        return self._client

    async def _generate(self, prompts: list[Prompt], cfg: GenerationConfig) -> list[list[Response]]:
        client = self._http_client()
        sem = asyncio.Semaphore(self.max_concurrency)
        if self.model is None:
            self.model = await self._first_model(client)
        if self.server_info is None:
            self.server_info = await self._server_info(client)
        conn_failures: list[str] = []
        rows = await asyncio.gather(*(self._one_prompt(client, sem, p, i, cfg, conn_failures) for i, p in enumerate(prompts)))
        total = sum(len(r) for r in rows)
        if total and len(conn_failures) == total:
            raise BackendError(f"cannot reach the model server at {self.base_url}: {_probe(self.servers.urls[0], conn_failures[0])}")
        return rows

    async def _first_model(self, client: Any) -> str:
        try:
            data = await self._request(client, "GET", "/models", None)
            return str(data["data"][0]["id"])
        except _Failure as f:
            if f.connection:
                raise BackendError(f"cannot reach the model server at {self.base_url}: {_probe(self.servers.urls[0], f.message)}") from None
            raise BackendError(f"could not list models at {self.base_url}/models ({f.message}); set the 'model' option") from None
        except (KeyError, IndexError, TypeError):
            raise BackendError(f"{self.base_url}/models lists no model; set the 'model' option") from None

    async def _server_info(self, client: Any) -> ServerInfo:
        """The server's kind and context (llm/server_info.py); unknown when it does not say."""
        info = ServerInfo()
        try:
            info.kind, info.n_ctx = kind_from_models(await self._request(client, "GET", "/models", None))
        except _Failure:
            pass
        root = self.base_url.split(" | ")[0].rstrip("/")  # several servers: the first tells for all
        root = root[: -len("/v1")] if root.endswith("/v1") else root
        try:  # llama.cpp's own endpoint: the per-slot context
            r = await asyncio.wait_for(self._send(client, "GET", root + "/props", None), 5.0)  # capped too
            n_ctx = n_ctx_from_props(r.json()) if r.status_code == 200 else None
            if n_ctx:
                info.kind, info.n_ctx = "llama.cpp", n_ctx
        except Exception:  # noqa: BLE001 - any server without /props
            pass
        return info

    def _server_fields(self, prompt: Prompt, cfg: GenerationConfig) -> dict[str, Any]:
        """max_tokens that fits, plain sampling and the grammar, as this server spells them."""
        info = self.server_info or ServerInfo()
        chars = len(prompt.text) + len(prompt.system)
        out: dict[str, Any] = {"max_tokens": fit_max_tokens(cfg.max_tokens, chars, info, self.fallback_max_tokens)}
        plain = self.plain_sampling
        if plain is True or (plain == "auto" and (info.kind.startswith("llama") or self.logprobs)):
            out.update(plain_sampling_fields(info.kind))
        gbnf = prompt.meta.get("grammar")
        if gbnf:
            out.update(grammar_fields(info.grammar_field if self.grammar_field == "auto" else self.grammar_field, gbnf))
        return out

    def _finish(self, responses: list[Response]) -> list[Response]:
        for r in responses:
            if self.strip_reasoning:
                r.text = strip_reasoning(r.text)
            if self.logprobs and not r.error and r.token_ids is None:
                kind = (self.server_info or ServerInfo()).kind
                raise BackendError(
                    f"the server at {self.base_url} ({kind}) returned no token ids with the log-probs; "
                    f"training needs them: use vLLM (or --backend hf); llama.cpp server and Ollama never return them"
                )
        return responses

    async def _one_prompt(self, client: Any, sem: asyncio.Semaphore, prompt: Prompt, i: int,
                          cfg: GenerationConfig, conn_failures: list[str]) -> list[Response]:
        n = cfg.n
        out: list[Response] = []
        if n > 1 and self._n_works is not False:
            out = await self._call(client, sem, prompt, cfg, n, _seed(cfg, i, 0), conn_failures)
            if out[0].error:  # the request failed: n failed responses, no verdict on n
                return out
            if self.use_n == "auto":
                self._n_works = len(out) >= n  # fewer choices: the server ignores n; top up below
        missing = n - len(out)
        if missing > 0:
            singles = await asyncio.gather(*(
                self._call(client, sem, prompt, cfg, 1, _seed(cfg, i, len(out) + k), conn_failures) for k in range(missing)
            ))
            out.extend(r[0] for r in singles)
        return out[:n]

    async def _call(self, client: Any, sem: asyncio.Semaphore, prompt: Prompt, cfg: GenerationConfig, n: int,
                    seed: int | None, conn_failures: list[str]) -> list[Response]:
        messages = ([{"role": "system", "content": prompt.system}] if prompt.system else []) + [
            {"role": "user", "content": prompt.text}
        ]
        body: dict[str, Any] = {"model": self.model, "messages": messages, "n": n,
                                "temperature": cfg.temperature, "max_tokens": cfg.max_tokens}
        if seed is not None:
            body["seed"] = seed
        if self.logprobs:
            body["logprobs"] = True
            body["return_tokens_as_token_ids"] = True  # vLLM: tokens come back as "token_id:N"
        body.update(self._server_fields(prompt, cfg))
        body.update(self.extra_body)
        async with sem:
            t0 = time.perf_counter()
            try:
                data = await self._request(client, "POST", "/chat/completions", body)
            except _Failure as f:
                if f.connection:
                    conn_failures.extend([f.message] * n)
                return [Response("", error=f.message, latency=time.perf_counter() - t0) for _ in range(n)]
            latency = time.perf_counter() - t0
        return self._finish(_responses(data, n, latency))

    async def _send(self, client: Any, method: str, url: str, body: dict[str, Any] | None) -> Any:
        """The response, its body read (decoded) up to max_response_bytes: a server cannot fill our memory."""
        import httpx

        async with client.stream(method, url, json=body) as r:
            chunks, size = [], 0
            async for chunk in r.aiter_bytes():
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise _Failure(f"response body over max_response_bytes ({self.max_response_bytes}); not read further")
                chunks.append(chunk)
            skip = ("content-encoding", "content-length", "transfer-encoding")  # the body is decoded already
            headers = [(k, v) for k, v in r.headers.items() if k.lower() not in skip]
            return httpx.Response(r.status_code, headers=headers, content=b"".join(chunks), request=r.request)

    async def _request(self, client: Any, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        import httpx

        last = _Failure("no attempt made")
        tried: str | None = None
        for attempt in range(self.max_retries + 1):
            retry_after = 0.0
            server = self.servers.acquire(avoid=tried if last.connection else None)  # fewest in flight
            tried, ok, unreachable = server.url, False, False
            try:
                r = await self._send(client, method, server.url + path, body)
                if r.status_code == 200:
                    try:
                        data = r.json()
                        ok = True
                        return data
                    except ValueError:
                        last = _Failure(f"HTTP 200 with a body that is not JSON: {r.text[:120]!r}")
                else:
                    last = _Failure(f"HTTP {r.status_code}: {_error_text(r)}")
                    if r.status_code not in _RETRY_STATUS:
                        raise last
                    retry_after = _retry_after(r.headers.get("retry-after"))
            except httpx.ConnectError as exc:
                last = _Failure(_connect_reason(exc), connection=True)
            except httpx.TimeoutException as exc:
                last = _Failure(f"timed out ({type(exc).__name__})", connection=isinstance(exc, httpx.ConnectTimeout))
            except httpx.HTTPError as exc:  # protocol errors, a dropped connection
                last = _Failure(f"{type(exc).__name__}: {exc}")
            finally:
                unreachable = not ok and last.connection
                self.servers.release(server, ok=ok, connection_failed=unreachable)
            if attempt < self.max_retries:
                if unreachable and len(self.servers.servers) > 1:
                    continue  # another server is tried at once; this one sits out its cool-down
                delay = min(self.backoff_max, self.backoff_base * 2**attempt) * random.uniform(0.5, 1.5)
                await asyncio.sleep(max(delay, min(retry_after, self.backoff_max)))
        raise last


def _seed(cfg: GenerationConfig, i: int, j: int) -> int | None:
    # Distinct seeds per request, or servers would return the same sample n times.
    return None if cfg.seed is None else int(cfg.seed) * 1_000_003 + i * 1009 + j


def _responses(data: dict[str, Any], n: int, latency: float) -> list[Response]:
    choices = sorted(data.get("choices") or [], key=lambda c: c.get("index", 0))
    usage = data.get("usage") or {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    total_completion = int(usage.get("completion_tokens") or 0)
    out = []
    for c in choices[:n]:
        msg = c.get("message") or {}
        text = msg.get("content") if isinstance(msg, dict) else None
        if text is None:
            text = c.get("text") or ""
        ids, lps = parse_choice_logprobs(c)
        # usage is per request: split completion tokens evenly unless the choice says how many.
        completion = len(lps) if lps is not None else total_completion // max(1, len(choices))
        out.append(Response(str(text), prompt_tokens=prompt_tokens, completion_tokens=completion,
                            token_ids=ids, logprobs=lps, latency=latency,
                            prompt_token_ids=data.get("prompt_token_ids")))
    if not out:
        out = [Response("", error="the server returned no choices", latency=latency) for _ in range(n)]
    return out


def _error_text(r: Any) -> str:
    try:
        err = r.json().get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        if msg:
            return str(msg)[:200]
    except (ValueError, AttributeError):
        pass
    return r.text[:200] or r.reason_phrase


def _retry_after(value: str | None) -> float:
    try:
        return float(value) if value else 0.0
    except ValueError:
        return 0.0


def _probe(base_url: str, fallback: str) -> str:
    """Why a plain TCP connection to the server fails ("connection refused", ...): httpx only
    says "All connection attempts failed"."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=3):
            return fallback
    except socket.timeout:
        return "connection timed out"
    except socket.gaierror:
        return f"unknown host {parts.hostname!r}"
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()


def _connect_reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    low = text.lower()
    if "refused" in low:
        return "connection refused"
    if "name or service not known" in low or "nodename nor servname" in low or "getaddrinfo" in low:
        return "unknown host"
    return text
