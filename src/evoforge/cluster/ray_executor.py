"""Evaluations on a Ray cluster: one confined sandbox slot per actor, results streamed back.

Each actor owns a one-worker ``SandboxPool`` on its node (the same zygote, uid, namespaces,
Landlock and rlimits as a local run: Ray only moves the request and the result), and runs one
evaluation at a time; there is one actor per CPU the executor may use, spread over the nodes.
The driver hands requests to idle actors and yields each result the moment it arrives
(``run_iter``), so the engine stores every evaluation as it finishes, exactly as with the local
pool. Nothing on the cluster holds state that a resume needs: the driver stays the only writer
of ``run.db``.

Faults: when an actor dies mid-evaluation (its worker process or its node killed), the actor is
replaced and the evaluation is tried ``retries`` more times (default once) on another slot;
after that it is classified ``killed`` with the reason. An actor that does not answer within the
request's own time limit plus ``grace`` seconds is treated the same way. Requests whose
``evaluator_path`` is a file (OpenEvolve layout) need that path on every node: a shared
filesystem, or the same checkout at the same path (docs/SCALING.md).
"""
from __future__ import annotations

import collections
import logging
import os
import socket
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from evoforge.sandbox.base import EvalRequest, SandboxResult, Status

log = logging.getLogger("evoforge.cluster")

INSTALL_HINT = "the ray executor needs Ray: pip install 'evoforge[ray]'"


class RayUnavailable(RuntimeError):
    """Ray is not installed or the cluster cannot be reached; the message is one line."""


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(INSTALL_HINT) from None
    return ray


class _SandboxSlot:
    """Ray actor body: a one-worker sandbox pool on the node it was placed on."""

    def __init__(self, pool_options: dict[str, Any]):
        from evoforge.sandbox import SandboxPool

        self.pool = SandboxPool(workers=1, **pool_options)

    def where(self) -> dict[str, Any]:
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "host": socket.gethostname(), "zygotes": self.pool.zygote_pids()}

    def run(self, request: EvalRequest) -> SandboxResult:
        return self.pool.run_many([request])[0]

    def close(self) -> None:
        self.pool.close()


@dataclass
class _Slot:
    actor: Any
    where: dict[str, Any]


class RayExecutor:
    """An ``Executor`` over a Ray cluster (``address``: None starts a local one; "auto"; "HOST:PORT")."""

    def __init__(self, address: str | None = None, *, workers: int | None = None, retries: int = 1,
                 grace: float = 60.0, start_timeout: float = 120.0, num_cpus: int | None = None,
                 pool_options: dict[str, Any] | None = None, **unknown: Any):
        if unknown:
            raise ValueError(f"unknown ray executor option(s): {', '.join(sorted(unknown))} "
                             "(known: address, workers, retries, grace, start_timeout, num_cpus, pool_options)")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        ray = _import_ray()
        self._ray = ray
        self._own_ray = not ray.is_initialized()
        if self._own_ray:
            kwargs: dict[str, Any] = dict(include_dashboard=False, logging_level=logging.WARNING,
                                          log_to_driver=False)
            if address in (None, "", "local"):
                kwargs["num_cpus"] = num_cpus
            else:
                kwargs["address"] = address
            try:
                ray.init(**kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise RayUnavailable(f"cannot connect to the Ray cluster at {address}: "
                                     f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        self.retries = int(retries)
        self.grace = float(grace)
        self.start_timeout = float(start_timeout)
        self._pool_options = dict(pool_options or {})
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self._target = max(1, int(workers) if workers else cpus)
        self._remote = ray.remote(num_cpus=1, max_concurrency=1)(_SandboxSlot)
        self.slots: list[_Slot] = []
        self.replaced = 0  # actors lost and started again, for the log and the tests
        self.retried = 0  # evaluations sent again after their actor died
        try:
            self._start_slots(self._target)
        except BaseException:
            self.close()
            raise
        nodes = collections.Counter(s.where["host"] + ":" + s.where["node_id"][:8] for s in self.slots)
        log.info("ray executor: %d sandbox slots on %d node(s) (%s)", len(self.slots), len(nodes),
                 ", ".join(f"{k} x{v}" for k, v in sorted(nodes.items())))

    # -- slots -------------------------------------------------------------------------------
    def _start_slots(self, count: int) -> None:
        ray = self._ray
        actors = [self._remote.options(scheduling_strategy="SPREAD").remote(self._pool_options)
                  for _ in range(count)]
        refs = {a.where.remote(): a for a in actors}
        ready, not_ready = ray.wait(list(refs), num_returns=len(refs), timeout=self.start_timeout)
        for ref in ready:
            try:
                self.slots.append(_Slot(refs[ref], ray.get(ref)))
            except ray.exceptions.RayError as exc:
                log.warning("ray executor: a sandbox slot failed to start: %s", _first_line(exc))
                ray.kill(refs[ref], no_restart=True)
        for ref in not_ready:  # no CPU left for it (e.g. a node is gone): run with fewer slots
            ray.kill(refs[ref], no_restart=True)
        if not self.slots:
            raise RayUnavailable(f"no sandbox slot started on the Ray cluster within {self.start_timeout:.0f} s "
                                 "(no free CPU, or evoforge is not importable on its nodes)")

    def _replace(self, index: int) -> bool:
        """Start a new actor in place of slot ``index``; False (slot dropped) if none can start."""
        ray = self._ray
        old = self.slots[index]
        try:
            ray.kill(old.actor, no_restart=True)
        except Exception:  # already gone with its node
            pass
        actor = self._remote.options(scheduling_strategy="SPREAD").remote(self._pool_options)
        ref = actor.where.remote()
        ready, _ = ray.wait([ref], timeout=self.start_timeout)
        if ready:
            try:
                self.slots[index] = _Slot(actor, ray.get(ref))
                self.replaced += 1
                return True
            except ray.exceptions.RayError:
                pass
        ray.kill(actor, no_restart=True)
        return False

    @property
    def workers(self) -> int:
        return len(self.slots)

    def actor_pids(self) -> list[tuple[str, int]]:
        """(host, pid) of every actor's worker process, e.g. for a test that kills one."""
        return [(s.where["host"], s.where["pid"]) for s in self.slots]

    # -- Executor ----------------------------------------------------------------------------
    def run_many(self, requests: Sequence[EvalRequest]) -> list[SandboxResult]:
        out: list[SandboxResult | None] = [None] * len(requests)
        for i, res in self.run_iter(requests):
            out[i] = res
        return [r for r in out if r is not None]

    def run_iter(self, requests: Sequence[EvalRequest]) -> Iterator[tuple[int, SandboxResult]]:
        """(index, result) pairs in the order the evaluations finish."""
        ray = self._ray
        pending = collections.deque(range(len(requests)))
        failures: dict[int, int] = collections.defaultdict(int)
        idle = list(range(len(self.slots)))
        inflight: dict[Any, tuple[int, int, float]] = {}  # ref -> (request, slot, deadline)
        try:
            while pending or inflight:
                while pending and idle:
                    i, s = pending.popleft(), idle.pop()
                    ref = self.slots[s].actor.run.remote(requests[i])
                    inflight[ref] = (i, s, time.monotonic() + requests[i].timeout + self.grace)
                if not inflight:  # every slot was lost
                    for i in pending:
                        yield i, SandboxResult(Status.KILLED, error="no Ray sandbox slot is left to run it")
                    return
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=1.0)
                now = time.monotonic()
                done = ready or [r for r, (_, _, dl) in inflight.items() if dl < now]
                for ref in done:
                    i, s, _ = inflight.pop(ref)
                    try:
                        result = ray.get(ref) if ref in ready else None  # else: past its deadline
                        reason = "" if result is not None else "its Ray worker stopped answering"
                    except ray.exceptions.RayError as exc:
                        result, reason = None, _first_line(exc)
                    if result is not None:
                        idle.append(s)
                        yield i, result
                        continue
                    log.warning("ray executor: evaluation lost (%s); starting a new sandbox slot", reason)
                    if self._replace(s):
                        idle.append(s)
                    failures[i] += 1
                    if failures[i] <= self.retries:
                        self.retried += 1
                        pending.appendleft(i)
                    else:
                        yield i, SandboxResult(Status.KILLED, error=f"the Ray worker running it died "
                                                                   f"{failures[i]} times ({reason})")
        finally:
            for ref in inflight:  # the consumer stopped early (Ctrl-C): drop what is still running
                try:
                    ray.cancel(ref)
                except Exception:
                    pass

    def close(self) -> None:
        ray = getattr(self, "_ray", None)
        if ray is None:
            return
        slots, self.slots = getattr(self, "slots", []), []
        if ray.is_initialized():
            closing = [s.actor.close.remote() for s in slots]
            if closing:
                ray.wait(closing, num_returns=len(closing), timeout=10)
            for s in slots:
                try:
                    ray.kill(s.actor, no_restart=True)
                except Exception:
                    pass
            if self._own_ray:
                ray.shutdown()
        self._ray = None

    def __enter__(self) -> "RayExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]
