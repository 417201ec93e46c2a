"""Several OpenAI-compatible servers behind one backend: balanced by outstanding requests.

ThetaEvolve and TTT-Discover generate from many inference engines at once. Each request goes to
the live server with the fewest requests in flight (ties: the one used least recently), so a slow
server gets less work without any tuning. A server that cannot be reached is taken out of the
rotation for ``cooldown`` seconds (doubling while it stays dead, up to ``max_cooldown``) and then
tried again; when every server is out, the one due back first is used, so a batch never stalls
on the bookkeeping. Thread- and asyncio-safe (one lock, no awaits while holding it).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence


@dataclass
class Server:
    url: str
    outstanding: int = 0
    served: int = 0  # requests answered
    failures: int = 0  # consecutive connection failures
    dead_until: float = 0.0
    last_used: float = field(default=0.0, repr=False)

    def alive(self, now: float) -> bool:
        return self.dead_until <= now


class ServerPool:
    def __init__(self, urls: Sequence[str], *, cooldown: float = 5.0, max_cooldown: float = 120.0,
                 clock: Callable[[], float] = time.monotonic):
        cleaned = [u.rstrip("/") for u in urls if u and u.strip()]
        if not cleaned:
            raise ValueError("no server URL given")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError(f"a server URL is given twice: {cleaned}")
        self.servers = [Server(u) for u in cleaned]
        self.cooldown = float(cooldown)
        self.max_cooldown = float(max_cooldown)
        self._clock = clock
        self._lock = threading.Lock()

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    def acquire(self, avoid: str | None = None) -> Server:
        """The server for the next request (its outstanding count is raised; call ``release``)."""
        with self._lock:
            now = self._clock()
            live = [s for s in self.servers if s.alive(now)]
            if avoid is not None and len(live) > 1:
                live = [s for s in live if s.url != avoid] or live
            if live:
                s = min(live, key=lambda s: (s.outstanding, s.last_used))
            else:  # all out of rotation: the one due back first
                s = min(self.servers, key=lambda s: s.dead_until)
            s.outstanding += 1
            s.last_used = now
            return s

    def release(self, server: Server, *, ok: bool, connection_failed: bool = False) -> None:
        with self._lock:
            server.outstanding = max(0, server.outstanding - 1)
            if connection_failed:
                server.failures += 1
                wait = min(self.max_cooldown, self.cooldown * 2 ** (server.failures - 1))
                server.dead_until = self._clock() + wait
            elif ok:
                server.failures = 0
                server.dead_until = 0.0
                server.served += 1

    def summary(self) -> str:
        now = self._clock()
        return ", ".join(f"{s.url} ({s.served} served{'' if s.alive(now) else ', out of rotation'})"
                         for s in self.servers)
