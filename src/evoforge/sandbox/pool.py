"""Host side: a pool of zygote slots that runs EvalRequests in parallel (implements Executor).

Each slot owns one zygote process and, when the host is root, one dedicated unprivileged
uid (claimed with a lock file, so two pools on one machine never share a uid). A slot that
loses its zygote (killed, hung, crashed) cleans up after it and starts a new one on the next
request: nothing a program does can take the pool down.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import pwd
import signal
import subprocess
import sys
import time
import threading
from pathlib import Path
from typing import Any, Iterator, Sequence

from evoforge.sandbox import fsclean, limits, procs
from evoforge.sandbox.base import EvalRequest, SandboxResult
from evoforge.sandbox.dispatch import Dispatcher
from evoforge.sandbox.protocol import ChannelClosed, ChannelTimeout, read_json

log = logging.getLogger("evoforge.sandbox")

# numpy 2 loads numpy.random / numpy.fft lazily: left out, every child using them paid ~20-40 ms
DEFAULT_PRELOAD = ("numpy", "numpy.random", "numpy.fft", "scipy", "scipy.optimize", "scipy.spatial", "scipy.linalg")
# Nothing at start: each preload module is imported the first time a program names it. A zygote
# without numpy forks in 1.6 ms of CPU instead of 2.3 (benchmarks/bench_fork_floor.py), so runs
# whose programs never use numpy evaluate ~20 % more children per second; the others pay the
# import once per worker, outside any evaluation's timeout.
DEFAULT_EAGER: tuple[str, ...] = ()
UID_RANGE = range(61000, 62000)
MAX_TIMEOUT = 7 * 86400.0  # rlimits, poll timeouts and deadlines need finite numbers
_SRC_DIR = str(Path(__file__).resolve().parents[2])  # the directory holding the evoforge package
_ZYGOTE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
_warned: set[str] = set()


class SandboxError(RuntimeError):
    """The sandbox machinery itself failed (not the program): e.g. a worker could not start."""


def _warn_once(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        log.warning(msg)


def _lock_dir() -> str:
    d = "/run/evoforge-sandbox" if os.path.isdir("/run") and os.access("/run", os.W_OK) else os.path.join("/tmp", "evoforge-sandbox-locks")
    os.makedirs(d, mode=0o700, exist_ok=True)
    return d


def _claim_uid() -> tuple[int, int]:
    """A free uid from UID_RANGE, held by an flock for as long as the returned fd is open."""
    d = _lock_dir()
    for uid in UID_RANGE:
        try:
            pwd.getpwuid(uid)
            continue  # a real account: never ours to kill
        except KeyError:
            pass
        fd = os.open(os.path.join(d, f"uid-{uid}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return uid, fd
        except OSError:
            os.close(fd)
    raise SandboxError(f"no free sandbox uid in {UID_RANGE.start}-{UID_RANGE.stop - 1}")


def kill_uid(uid: int) -> None:
    """SIGKILL every process running as `uid`, from a forked child that takes that uid.

    Forked rather than exec'd: the interpreter may live where `uid` cannot read it. The child
    only makes syscalls, so forking a multi-threaded host is safe here.
    """
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for _ in range(3):  # kill(-1) reaches every process we may signal, except ourselves
                os.kill(-1, signal.SIGKILL)
        except BaseException:
            pass
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    deadline = time.monotonic() + 2.0  # SIGKILL is delivered at once, but dying takes a moment
    while time.monotonic() < deadline and not all(procs.is_zombie(p) for p in procs.processes_of_uid(uid)):
        time.sleep(0.005)


class Slot:
    """One zygote and the uid its children run as."""

    def __init__(self, index: int, cfg: dict[str, Any], start_timeout: float) -> None:
        self.index = index
        self.cfg = cfg
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.hello: dict[str, Any] = {}
        self.restarts = -1

    @property
    def uid(self) -> int | None:
        """The uid children run as (the worker may have fallen back to none: see hello['fallback'])."""
        return self.hello["uid"] if "uid" in self.hello else self.cfg["uid"]

    def start(self) -> None:
        boot = f"import sys; sys.path.insert(0, {_SRC_DIR!r}); from evoforge.sandbox.zygote import main; main()"
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", boot, json.dumps(self.cfg)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(_ZYGOTE_ENV), start_new_session=True, close_fds=True,
        )
        self.restarts += 1

    def wait_ready(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            self.hello = read_json(self.proc.stdout.fileno(), time.monotonic() + self.start_timeout)["hello"]
        except (ChannelClosed, ChannelTimeout, KeyError, ValueError, OSError) as exc:
            self.stop()
            raise SandboxError(f"sandbox worker {self.index} did not start: {exc}") from None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def run(self, req: EvalRequest) -> SandboxResult:
        """One request on this slot alone (the pool normally dispatches through run_iter)."""
        return list(Dispatcher([self]).run([req]))[0][1]

    def needs_exposure(self, evaluator_path: str) -> bool:
        """Whether the dropped uid cannot reach this evaluator's folder yet (the zygote must restart)."""
        folder = os.path.dirname(os.path.abspath(evaluator_path))
        return self.uid is not None and folder not in self.cfg["expose"] and bool(limits.plan_exposure([folder]))

    def expose(self, evaluator_path: str) -> None:
        """Make an evaluator's folder reachable for the dropped uid: stops the zygote, the next request restarts it."""
        if self.needs_exposure(evaluator_path):
            self.cfg["expose"].append(os.path.dirname(os.path.abspath(evaluator_path)))
            self.stop()

    def lost(self, child: int | None) -> None:
        """The zygote is gone or hung: end it, its child's group, and (root) every process of our uid."""
        if child is not None:
            procs.kill_group(child)
        self.stop()
        if self.uid is not None:
            kill_uid(self.uid)

    def stop(self) -> None:
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=2)  # EOF on its stdin makes a healthy zygote clean up and leave
        except subprocess.TimeoutExpired:
            procs.kill_group(proc.pid)
            proc.wait()
        base = self.hello.get("base")
        if base and os.path.isdir(base):
            fsclean.remove_tree(base)  # whatever a program left there, however deep


class SandboxPool:
    """Runs EvalRequests in isolated processes, `workers` at a time. Context manager; close() is idempotent.

    drop_privileges: run children under a per-slot unprivileged uid (default: when root).
    isolate_network: give the workers a private network namespace (root, or user namespaces).
    use_landlock: confine writes to the run's directory, deny TCP and outside signals (kernel permitting).
    preload / eager: modules the workers import so programs find them warm. Those whose top-level
    package is in `eager` are imported at start; the others the first time a request's code names
    their package (every fork pays for what the worker has mapped: scipy roughly doubles the cost of
    an evaluation, so runs that never use it should not carry it). eager=None: all at start.
    """

    def __init__(self, workers: int = 2, *, drop_privileges: bool | None = None, isolate_network: bool = True,
                 use_landlock: bool = True, preload: Sequence[str] = DEFAULT_PRELOAD, max_processes: int = 64,
                 start_timeout: float = 60.0, eager: Sequence[str] | None = DEFAULT_EAGER, harden: bool = True) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        root = os.geteuid() == 0
        if drop_privileges is None:
            drop_privileges = root
        if drop_privileges and not root:
            raise ValueError("drop_privileges=True needs root (run as root or leave it unset)")
        self._lock_fds: list[int] = []
        self.slots: list[Slot] = []
        self._closed = False
        try:
            for i in range(workers):
                uid = None
                if drop_privileges:
                    uid, fd = _claim_uid()
                    self._lock_fds.append(fd)
                    kill_uid(uid)  # a pool killed with SIGKILL may have left a program of this uid running
                cfg = dict(slot=i, uid=uid, gid=uid, isolate_network=isolate_network, preload=list(preload),
                           eager=None if eager is None else list(eager),
                           max_processes=max_processes, use_landlock=use_landlock, expose=[], harden=harden)
                self.slots.append(Slot(i, cfg, start_timeout))
            for s in self.slots:
                s.start()
            for s in self.slots:
                s.wait_ready()
        except BaseException:
            self.close()
            raise
        self._report_degraded(drop_privileges)
        self._lock = threading.Lock()  # one batch at a time drives the slots
        self._owner: int | None = None  # thread consuming the running batch

    def _report_degraded(self, dropped: bool) -> None:
        h = self.slots[0].hello
        if h.get("fallback"):
            _warn_once(f"sandbox: {h['fallback']}")
            dropped = False
        if not dropped:
            _warn_once("sandbox: no dedicated uid (not root, or drop_privileges=False): programs run as this user "
                       "without capabilities; "
                       "stray processes are found through the subreaper tree and a process-count watchdog")
        if isinstance(h.get("network"), str) and not h["network"].startswith("namespace") and self.slots[0].cfg["isolate_network"]:
            extra = " (Landlock still denies TCP)" if h.get("landlock_abi", 0) >= 4 else ""
            _warn_once(f"sandbox: no network namespace available: {h['network']}{extra}")
        if not h.get("landlock_abi"):
            _warn_once("sandbox: Landlock unavailable: writes outside the run directory are only limited by file permissions")
        if not self.slots[0].cfg.get("harden", True):
            return
        missing = {"ipc": "System V / POSIX IPC objects are shared between evaluations (no IPC namespace)",
                   "seccomp": "UNIX sockets, io_uring and keyrings are not filtered (no seccomp)",
                   "memory_cgroup": "memfd and shared memory are not counted against memory_mb (no memory cgroup; "
                                    "RLIMIT_AS only)"}
        for key, what in missing.items():
            got = str(h.get(key, ""))
            if got not in ("namespace", "on") and not got.startswith("/"):
                _warn_once(f"sandbox: {what}: {got}")

    @property
    def workers(self) -> int:
        return len(self.slots)

    @property
    def slot_uids(self) -> list[int | None]:
        return [s.uid for s in self.slots]

    @property
    def features(self) -> dict[str, Any]:
        """What the first worker reported: network, landlock_abi, uid, vm_mb (address space already used)."""
        return dict(self.slots[0].hello)

    def zygote_pids(self) -> list[int]:
        return [s.proc.pid for s in self.slots if s.proc is not None]

    def stray_processes(self) -> list[int]:
        """Processes a program left behind: anything below a zygote or running as a slot uid (should be [])."""
        found: set[int] = set()
        for s in self.slots:
            if s.proc is not None:
                found.update(p for p in procs.descendants(s.proc.pid) if p != s.hello.get("template"))
            if s.uid is not None:
                found.update(procs.processes_of_uid(s.uid))
        return sorted(p for p in found if not procs.is_zombie(p))

    def _validate(self, req: EvalRequest) -> None:
        if not isinstance(req, EvalRequest):
            raise TypeError(f"expected an EvalRequest, got {type(req).__name__}")
        if not isinstance(req.code, str):
            raise ValueError(f"EvalRequest.code must be a str, got {type(req.code).__name__}")
        if not (isinstance(req.entry, str) and req.entry.isidentifier()):
            raise ValueError(f"EvalRequest.entry must be a function name, got {req.entry!r}")
        if not 0 < req.timeout <= MAX_TIMEOUT or not 0 < req.memory_mb < (1 << 40) or req.max_output_bytes < 0 or req.max_result_bytes <= 0:
            raise ValueError(f"EvalRequest limits must be positive (timeout={req.timeout}, memory_mb={req.memory_mb}, "
                             f"max_output_bytes={req.max_output_bytes}, max_result_bytes={req.max_result_bytes})")
        base = int(self.slots[0].hello.get("vm_mb", 0))
        if req.memory_mb < base + 64:
            _warn_once(f"sandbox: memory_mb={req.memory_mb} leaves almost nothing above the {base} MB the warm worker "
                       "already maps: programs will fail with MemoryError")

    def run_iter(self, requests: Sequence[EvalRequest]) -> Iterator[tuple[int, SandboxResult]]:
        """(index into requests, result) for each request, in the order they finish.

        Bad requests raise before anything runs. Stopping the iteration early waits for the
        requests already handed to a worker (their results are dropped); the rest never run.
        """
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        requests = list(requests)
        for req in requests:
            self._validate(req)
        return self._iterate(requests)

    def _iterate(self, requests: list[EvalRequest]) -> Iterator[tuple[int, SandboxResult]]:
        if self._owner == threading.get_ident():
            raise SandboxError("a run_iter of this pool is still being consumed in this thread: finish it first")
        with self._lock:
            self._owner = threading.get_ident()
            try:
                yield from Dispatcher(self.slots).run(requests)
            finally:
                self._owner = None

    def run_many(self, requests: Sequence[EvalRequest]) -> list[SandboxResult]:
        """Results in request order."""
        out: list[SandboxResult | None] = [None] * len(requests)
        for i, res in self.run_iter(requests):
            out[i] = res
        assert all(r is not None for r in out)
        return out  # type: ignore[return-value]

    def run(self, request: EvalRequest) -> SandboxResult:
        return self.run_many([request])[0]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        lock = getattr(self, "_lock", None)
        if lock is not None and lock.acquire(timeout=5.0):  # a batch still running elsewhere ends first
            lock.release()
        for s in self.slots:
            s.stop()
        for fd in self._lock_fds:
            os.close(fd)
        self._lock_fds = []

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def run_one(request: EvalRequest, **pool_options: Any) -> SandboxResult:
    """Run one request in a one-off pool (pays the pool's start-up; use SandboxPool for many)."""
    with SandboxPool(workers=1, **pool_options) as pool:
        return pool.run_many([request])[0]


__all__ = ["SandboxPool", "SandboxError", "run_one", "kill_uid", "DEFAULT_PRELOAD"]
