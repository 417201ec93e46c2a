"""Host-side dispatch: one thread drives every slot through a selector, with requests pipelined.

Each slot gets up to two requests at a time: while the zygote runs one, the next already sits in
its stdin pipe, so the zygote never waits for the host between evaluations (the host may be busy
storing the previous result). Answers are parsed from each zygote's stdout as bytes arrive and
handed out the moment they are complete, in completion order.

The second request of a slot is only sent when it is small (it must fit the pipe while the zygote
is busy, or host and zygote could block writing to each other) and while more work is waiting
than there are slots (near the end of a batch a queued request could wait behind a slow one
while another slot idles).
"""
from __future__ import annotations

import json
import os
import selectors
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from evoforge.sandbox.base import EvalRequest, SandboxResult, Status
from evoforge.sandbox.protocol import HEADER, write_all

if TYPE_CHECKING:
    from evoforge.sandbox.pool import Slot

PIPELINE_MAX_FRAME = 16 << 10  # a queued request must fit the 64 KiB pipe next to nothing else
DEPTH = 2  # requests in flight per slot
GRACE = 15.0  # seconds past a request's own limit before its zygote counts as hung


@dataclass
class Job:
    index: int
    req: EvalRequest
    frame: bytes = b""  # length-prefixed request, ready to write
    tries: int = 0
    child: int | None = None  # pid of the child running it, once the zygote said so
    head: dict[str, Any] | None = None  # the answer's header, once read (status ok: the value frame follows)
    result: SandboxResult | None = None  # set when finished without a zygote (e.g. unreadable evaluator)


@dataclass
class SlotState:
    slot: Slot
    inflight: deque[Job] = field(default_factory=deque)
    buf: bytearray = field(default_factory=bytearray)
    deadline: float = 0.0  # for inflight[0]
    t0: float = 0.0  # when inflight[0] reached the zygote's queue head


def encode(job: Job) -> Job:
    """Build the request frame; an evaluator's source is read here, as the host user."""
    req = job.req
    msg = {
        "code": req.code, "entry": req.entry, "evaluator_path": req.evaluator_path,
        "cascade_thresholds": list(req.cascade_thresholds), "timeout": req.timeout, "memory_mb": req.memory_mb,
        "language": req.language,  # issue 16: non-Python programs skip the Python compile in the harness
        "cascade": req.cascade, "program_suffix": req.program_suffix, "env": dict(req.env),  # issue 10
        "scratch": req.scratch,
        "max_output_bytes": req.max_output_bytes, "max_result_bytes": req.max_result_bytes,
    }
    if req.evaluator_path:
        try:
            msg["evaluator_source"] = Path(req.evaluator_path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            job.result = SandboxResult(Status.CRASH, error=f"cannot read evaluator: {exc}")
            return job
    payload = json.dumps(msg).encode()
    job.frame = HEADER.pack(len(payload)) + payload
    return job


def to_result(head: dict[str, Any], raw: bytes) -> SandboxResult:
    status = Status(head["status"]) if head.get("status") in {s.value for s in Status} else Status.CRASH
    value = None
    error = str(head.get("error", ""))
    if status is Status.OK:
        try:
            value = json.loads(raw)  # accepts NaN / Infinity
        except (ValueError, RecursionError) as exc:
            status, error = Status.CRASH, f"return value could not be decoded: {type(exc).__name__}"
    return SandboxResult(status, value, _text(error, 4000), _text(head.get("stdout", "")), _text(head.get("stderr", "")),
                         float(head.get("wall_time", 0.0)))


def _text(value: Any, cap: int | None = None) -> str:
    """The program chose this text: lone surrogates (not UTF-8, SQLite refuses them) become escapes."""
    s = value if isinstance(value, str) else str(value)
    if cap is not None and len(s) > cap:
        s = s[:cap] + " [...]"
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


class Dispatcher:
    """Runs jobs on slots; iterate `run(...)` for (index, result) as they finish."""

    def __init__(self, slots: Sequence[Slot]) -> None:
        self.states = [SlotState(s) for s in slots]
        self.sel = selectors.DefaultSelector()
        self.pending: deque[Job] = deque()
        self.done: deque[tuple[int, SandboxResult]] = deque()

    def run(self, requests: Sequence[EvalRequest]) -> Iterator[tuple[int, SandboxResult]]:
        for i, r in enumerate(requests):
            job = encode(Job(i, r))
            if job.result is not None:
                self.done.append((i, job.result))
            else:
                self.pending.append(job)
        try:
            while self.pending or self.done or any(st.inflight for st in self.states):
                self._fill()
                if self.done:
                    yield self.done.popleft()
                    continue
                self._poll()
        except GeneratorExit:
            self._finish()  # the caller stopped early: let what is running end normally
            raise
        except BaseException:
            self._abort()  # Ctrl-C or a bug: nothing of this batch may keep running
            raise
        finally:
            self.sel.close()

    # -- sending ---------------------------------------------------------------------------
    def _fill(self) -> None:
        """Give every idle slot a job, then (if enough work waits) a second one to pipeline."""
        for depth in range(DEPTH):
            for st in self.states:
                if not self.pending:
                    return
                if len(st.inflight) != depth:
                    continue
                job = self.pending[0]
                if depth > 0 and (len(job.frame) > PIPELINE_MAX_FRAME or len(self.pending) <= len(self.states)):
                    continue
                if job.req.evaluator_path and st.slot.needs_exposure(job.req.evaluator_path):
                    if st.inflight:
                        continue  # the zygote restarts for it: only once it is idle
                    st.slot.expose(job.req.evaluator_path)
                self.pending.popleft()
                self._send(st, job)

    def _send(self, st: SlotState, job: Job) -> None:
        slot = st.slot
        if not st.inflight and not slot.alive():
            self._unregister(st)
            slot.stop()
            try:
                slot.start()
                slot.wait_ready()
            except Exception as exc:  # SandboxError, or OSError starting the interpreter
                self.done.append((job.index, SandboxResult(Status.CRASH, error=str(exc))))
                return
        assert slot.proc is not None and slot.proc.stdin is not None
        job.tries += 1
        st.inflight.append(job)
        if len(st.inflight) == 1:
            self._arm(st)
        self._register(st)
        try:
            write_all(slot.proc.stdin.fileno(), job.frame)
        except OSError:
            self._lost(st, hung=False)

    def _arm(self, st: SlotState) -> None:
        req = st.inflight[0].req
        st.t0 = time.monotonic()
        # The zygote enforces the limit itself; this deadline only catches a zygote that stopped answering.
        st.deadline = st.t0 + req.timeout + GRACE + req.max_result_bytes / 20e6

    def _register(self, st: SlotState) -> None:
        proc = st.slot.proc
        assert proc is not None and proc.stdout is not None
        try:
            self.sel.register(proc.stdout.fileno(), selectors.EVENT_READ, st)
        except KeyError:
            pass  # already registered

    def _unregister(self, st: SlotState) -> None:
        for key in list(self.sel.get_map().values()):
            if key.data is st:
                self.sel.unregister(key.fd)
        st.buf.clear()

    # -- receiving -------------------------------------------------------------------------
    def _poll(self) -> None:
        busy = [st for st in self.states if st.inflight]
        if not busy:
            return
        wait = max(0.0, min(st.deadline for st in busy) - time.monotonic())
        for key, _ in self.sel.select(wait):
            st = key.data
            try:
                data = os.read(key.fd, 1 << 20)
            except OSError:
                data = b""
            if not data:
                self._lost(st, hung=False)
                continue
            st.buf += data
            self._parse(st)
        now = time.monotonic()
        for st in self.states:
            if st.inflight and now >= st.deadline:
                self._lost(st, hung=True)

    def _parse(self, st: SlotState) -> None:
        """Consume every whole frame in the slot's buffer."""
        buf = st.buf
        while len(buf) >= 4 and st.inflight:
            (n,) = HEADER.unpack_from(buf)
            if len(buf) < 4 + n:
                return
            payload = bytes(buf[4 : 4 + n])
            del buf[: 4 + n]
            job = st.inflight[0]
            if job.head is not None:  # the value frame of an ok answer
                self._complete(st, to_result(job.head, payload))
                continue
            try:
                msg = json.loads(payload)
                if "started" in msg:
                    job.child = int(msg["started"])
                    continue
                msg["status"]  # noqa: B018 - a header must have one
            except (ValueError, KeyError, TypeError):
                self._lost(st, hung=False)
                return
            if msg.get("status") == "ok":
                job.head = msg
            else:
                self._complete(st, to_result(msg, b""))

    def _complete(self, st: SlotState, result: SandboxResult) -> None:
        job = st.inflight.popleft()
        self.done.append((job.index, result))
        if st.inflight:
            self._arm(st)

    def _lost(self, st: SlotState, hung: bool) -> None:
        """The zygote died or hung: clean up, fail the running job, requeue those it never started."""
        jobs = list(st.inflight)
        st.inflight.clear()
        self._unregister(st)
        head = jobs[0] if jobs else None
        st.slot.lost(head.child if head else None)
        requeue: list[Job] = []
        if head is not None:
            if head.child is None and not hung and head.tries < 2:
                requeue.append(head)  # never reached a child: safe to run again
            else:
                why = "stopped answering" if hung else "died"
                self.done.append((head.index, SandboxResult(
                    Status.TIMEOUT if hung else Status.CRASH,
                    error=f"the sandbox worker {why} during the evaluation (did the program attack it?)",
                    wall_time=time.monotonic() - st.t0)))
        for job in jobs[1:]:
            job.tries -= 1  # it waited behind the lost one: not its fault
            requeue.append(job)
        for job in reversed(requeue):
            job.child, job.head = None, None
            self.pending.appendleft(job)

    def _finish(self) -> None:
        """Wait out what is in flight (answers dropped), so no stale answer stays in a pipe."""
        self.pending.clear()
        while any(st.inflight for st in self.states):
            self._poll()

    def _abort(self) -> None:
        self.pending.clear()
        for st in self.states:
            if st.inflight:
                head = st.inflight[0]
                st.inflight.clear()
                self._unregister(st)
                st.slot.lost(head.child)
