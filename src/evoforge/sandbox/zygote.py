"""The zygote: a long-lived, pre-imported process that forks one confined child per evaluation.

Started once per pool slot by the host (a fresh interpreter with a scrubbed environment). At
start it leaves the network (a new network namespace), becomes a child subreaper, imports
numpy/scipy once, then serves requests read from its stdin: fork, confine, supervise
(deadline, output tails, result size, process count), clean up every process and file the
program left, answer on its stdout. Forking a warm template is what makes an evaluation cost
milliseconds instead of an interpreter start.
"""
from __future__ import annotations

import gc
import importlib
import json
import math
import os
import select
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from evoforge.sandbox import harness, limits, procs
from evoforge.sandbox.protocol import ChannelClosed, read_json, send_frame, send_json

CHILD_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
}
RESULT_FD = 3
WATCHDOG_PERIOD = 0.05


@dataclass
class Config:
    slot: int
    uid: int | None  # dedicated uid for children (root only), None: stay as we are
    gid: int | None
    isolate_network: bool
    preload: list[str]
    max_processes: int
    use_landlock: bool = True
    expose: list[str] = field(default_factory=list)  # extra folders the dropped uid must reach (evaluators)
    # preload modules imported at start when their top-level package is listed here (None: all of
    # them); the others only once a request's code mentions their package (see Zygote.warm_up)
    eager: list[str] | None = None


@dataclass
class Tail:
    """Keeps the last `cap` bytes of a stream, however much is written."""

    cap: int
    buf: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def add(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) > 2 * self.cap:
            cut = len(self.buf) - self.cap
            self.dropped += cut
            del self.buf[:cut]

    def text(self) -> str:
        keep = self.buf[-self.cap :] if self.cap else b""
        dropped = self.dropped + len(self.buf) - len(keep)
        head = f"[... {dropped} bytes dropped ...]\n" if dropped else ""
        return head + bytes(keep).decode("utf-8", "replace")


class Zygote:
    def __init__(self, cfg: Config, cmd_in: int, cmd_out: int) -> None:
        self.cfg = cfg
        self.cmd_in = cmd_in
        self.cmd_out = cmd_out
        self.count = 0
        self.features: dict[str, Any] = {}
        self.base = ""
        self.on_demand: list[str] = []  # preload modules not imported yet

    # -- start ---------------------------------------------------------------------------
    def prepare(self) -> None:
        root = os.geteuid() == 0
        net = "off"
        if self.cfg.isolate_network:
            try:
                limits.unshare_network(as_root=root)
                net = "namespace"
            except OSError as exc:
                net = f"none ({exc})"
        limits.set_subreaper()
        fallback = ""
        if self.cfg.uid is not None:
            # Once for the whole worker: Python may sit under a root-only folder (pyenv in /root).
            needed = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                      os.path.dirname(os.path.realpath(sys.executable)), *sys.path, *self.cfg.expose]
            try:
                limits.apply_exposure(limits.plan_exposure(needed))
            except OSError as exc:
                # e.g. a container without CAP_SYS_ADMIN: the uid could not import anything, so keep ours
                fallback = f"dedicated uid unusable, Python is not reachable for it: {exc}"
                self.cfg.uid = self.cfg.gid = None
        abi = limits.landlock_abi() if self.cfg.use_landlock else 0
        for name in self.cfg.preload:
            if self.cfg.eager is None or name.split(".")[0] in self.cfg.eager:
                _import(name)
            else:
                self.on_demand.append(name)
        # The children's fixed environment, set once here: a child then only adds HOME and TMPDIR.
        os.environ.clear()
        os.environ.update(CHILD_ENV)
        harness.prepare_stdio()
        gc.freeze()  # children's collections skip (and so do not copy-on-write) everything imported so far
        self.base = tempfile.mkdtemp(prefix=f"evoforge-sbx-{self.cfg.slot}-")
        os.chmod(self.base, 0o711)  # children (other uid) may traverse to their own dir, not list
        self.features = {
            "pid": os.getpid(),
            "network": net,
            "landlock_abi": abi,
            "uid": self.cfg.uid,
            "base": self.base,
            "vm_mb": _vm_size_mb(),
            "nproc_limit": self.cfg.uid is not None,
            "fallback": fallback,
        }

    # -- serve ---------------------------------------------------------------------------
    def serve(self) -> None:
        try:
            send_json(self.cmd_out, {"hello": self.features})
            while True:
                try:
                    req = read_json(self.cmd_in)
                except (ChannelClosed, OSError, ValueError):
                    break  # the host closed the pool or is gone
                head, value = self.evaluate(req)
                send_json(self.cmd_out, head)
                if value:
                    send_frame(self.cmd_out, value)
        except OSError:
            pass  # host went away mid-answer (EPIPE)
        finally:
            procs.kill_subtree(os.getpid())
            shutil.rmtree(self.base, ignore_errors=True)

    def warm_up(self, req: dict[str, Any]) -> None:
        """Import the on-demand preload modules this request's code mentions, once and for all.

        Every fork pays for the zygote's address space (page tables copied at fork, torn down at
        exit), so scipy is only made warm for runs whose programs use it. The code is only
        searched for the package name, never run here.
        """
        text = None
        for name in list(self.on_demand):
            if text is None:
                text = req["code"] + str(req.get("evaluator_source") or "")
            if name.split(".")[0] in text:
                _import(name)
                self.on_demand.remove(name)
                gc.freeze()

    def evaluate(self, req: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        self.warm_up(req)
        self.count += 1
        workdir = os.path.join(self.base, f"run{self.count}")
        os.mkdir(workdir, 0o700)
        prog = os.path.join(workdir, harness.PROGRAM_FILE)
        with open(prog, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(req["code"])
        if self.cfg.uid is not None:
            os.chown(workdir, self.cfg.uid, self.cfg.gid)
            os.chown(prog, self.cfg.uid, self.cfg.gid)
        try:
            return self._run(req, workdir)
        finally:
            _remove_workdir(workdir, prog)

    def _run(self, req: dict[str, Any], workdir: str) -> tuple[dict[str, Any], bytes]:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        res_r, res_w = os.pipe()
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            self._child(req, workdir, out_w, err_w, res_w)
        for fd in (out_w, err_w, res_w):
            os.close(fd)
        out, err = Tail(int(req["max_output_bytes"])), Tail(int(req["max_output_bytes"]))
        res = bytearray()
        res_cap = int(req["max_result_bytes"]) + (1 << 16)
        try:
            send_json(self.cmd_out, {"started": pid})
            outcome = self._supervise(pid, t0, float(req["timeout"]), {out_r: out, err_r: err}, res_r, res, res_cap)
        except BaseException:
            procs.kill_group(pid)  # the host is gone or we broke: nothing of this run may survive us
            procs.kill_subtree(os.getpid())
            raise
        _, wstatus = os.waitpid(pid, 0)
        wall = time.monotonic() - t0
        procs.kill_group(pid)
        procs.kill_subtree(os.getpid())
        self._drain({out_r: out, err_r: err}, res_r, res, res_cap)
        for fd in (out_r, err_r, res_r):
            os.close(fd)
        head, value = _decide(outcome, wstatus, bytes(res), req)
        head.update(stdout=out.text(), stderr=err.text(), wall_time=wall)
        return head, value

    def _supervise(self, pid: int, t0: float, timeout: float, tails: dict[int, Tail], res_r: int, res: bytearray, res_cap: int) -> str:
        """Wait for the child to exit while collecting its output; returns '', 'timeout', 'oversized' or 'procs'."""
        pidfd = os.pidfd_open(pid)
        poller = select.poll()  # no per-run epoll descriptor to create and close
        try:
            for fd in (pidfd, *tails, res_r):
                poller.register(fd, select.POLLIN)
            deadline = t0 + timeout
            watchdog = self.cfg.uid is None  # without a dedicated uid RLIMIT_NPROC cannot hold a fork bomb
            next_check = time.monotonic() + WATCHDOG_PERIOD
            while True:
                now = time.monotonic()
                if now >= deadline:
                    procs.kill_group(pid)
                    return "timeout"
                wait = deadline - now
                if watchdog:
                    wait = min(wait, max(0.0, next_check - now))
                for fd, _ in poller.poll(math.ceil(wait * 1000)):
                    if fd == pidfd:
                        return ""
                    data = os.read(fd, 1 << 16)
                    if not data:
                        poller.unregister(fd)
                    elif fd == res_r:
                        res += data
                        if len(res) > res_cap:
                            procs.kill_group(pid)
                            return "oversized"
                    else:
                        tails[fd].add(data)
                if watchdog and time.monotonic() >= next_check:
                    next_check = time.monotonic() + WATCHDOG_PERIOD
                    if len(procs.descendants(os.getpid())) > self.cfg.max_processes:
                        procs.kill_group(pid)
                        return "procs"
        finally:
            os.close(pidfd)

    @staticmethod
    def _drain(tails: dict[int, Tail], res_r: int, res: bytearray, res_cap: int) -> None:
        """Read what is left in the pipes; every writer is dead by now, so EOF comes quickly."""
        poller = select.poll()
        open_fds = {*tails, res_r}
        for fd in open_fds:
            poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + 1.0
        while open_fds and time.monotonic() < deadline:
            for fd, _ in poller.poll(100):
                data = os.read(fd, 1 << 16)
                if not data:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                elif fd == res_r:
                    if len(res) <= res_cap:
                        res += data
                else:
                    tails[fd].add(data)

    def _child(self, req: dict[str, Any], workdir: str, out_w: int, err_w: int, res_w: int) -> None:
        """In the forked child: confine, then run the harness. Never returns."""
        try:
            os.setsid()
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.dup2(devnull, 0)
            os.dup2(res_w, RESULT_FD)
            os.closerange(RESULT_FD + 1, 1 << 20)
            os.set_inheritable(RESULT_FD, False)  # a program's subprocesses do not get the channel
            timeout = float(req["timeout"])
            limits.Rlimits(
                memory_bytes=int(req["memory_mb"]) << 20,
                cpu_seconds=max(1, int(timeout + 0.999) + 1),
                processes=self.cfg.max_processes if self.cfg.uid is not None else None,
            ).apply()
            os.chdir(workdir)
            if self.cfg.uid is None:
                os.nice(5)  # the watchdog (our parent) must keep getting the CPU against a fork bomb
            else:
                limits.drop_to(self.cfg.uid, self.cfg.gid if self.cfg.gid is not None else self.cfg.uid)
            if self.features["landlock_abi"]:
                limits.landlock_confine([workdir, os.devnull], self.features["landlock_abi"])
            if self.cfg.uid is None:
                limits.drop_capabilities()  # root forced down this path, or caps inside a user namespace
            os.environ["HOME"] = os.environ["TMPDIR"] = workdir  # the rest is CHILD_ENV already (prepare)
            tempfile.tempdir = None
        except BaseException as exc:
            try:
                os.write(2, f"sandbox setup failed: {exc!r}\n".encode())
            finally:
                os._exit(121)
        harness.run_child(req, workdir, RESULT_FD)


def _decide(outcome: str, wstatus: int, res: bytes, req: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """Status from what the harness sent (if it got that far), else from how the child ended."""
    head, value = _parse_result(res)
    if head is not None:
        return head, value
    limit = float(req["timeout"])
    if outcome == "timeout":
        return {"status": "timeout", "error": f"time limit exceeded ({limit:g} s wall clock)"}, b""
    if outcome == "oversized":
        return {"status": "crash", "error": f"return value too large (over {int(req['max_result_bytes'])} bytes)"}, b""
    if outcome == "procs":
        return {"status": "killed", "error": "too many processes (fork bomb?); the program was killed"}, b""
    if os.WIFSIGNALED(wstatus):
        sig = os.WTERMSIG(wstatus)
        if sig == signal.SIGXCPU:
            return {"status": "timeout", "error": "CPU time limit exceeded"}, b""
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        why = {"SIGSEGV": " (segmentation fault)", "SIGXFSZ": " (file size limit exceeded)", "SIGABRT": " (aborted)"}.get(name, "")
        return {"status": "killed", "error": f"killed by {name}{why}"}, b""
    code = os.WEXITSTATUS(wstatus) if os.WIFEXITED(wstatus) else -1
    if code == 121:
        return {"status": "crash", "error": "sandbox setup failed (see stderr)"}, b""
    return {"status": "crash", "error": f"program exited with status {code} before returning a result"}, b""


def _parse_result(res: bytes) -> tuple[dict[str, Any] | None, bytes]:
    """The harness's header frame (+ value frame when ok); None if absent or malformed."""
    if len(res) < 4:
        return None, b""
    n = int.from_bytes(res[:4], "big")
    if len(res) < 4 + n:
        return None, b""
    try:
        head = json.loads(res[4 : 4 + n])
    except (ValueError, RecursionError):
        return {"status": "crash", "error": "malformed result from the program"}, b""
    if not isinstance(head, dict) or head.get("status") not in ("ok", "syntax", "crash", "memory"):
        return {"status": "crash", "error": "malformed result from the program"}, b""
    head = {"status": head["status"], "error": str(head.get("error", ""))[:2000]}
    if head["status"] != "ok":
        return head, b""
    rest = res[4 + n :]
    m = int.from_bytes(rest[:4], "big") if len(rest) >= 4 else -1
    if m < 0 or len(rest) < 4 + m:
        return {"status": "crash", "error": "result truncated (the program closed or flooded the result channel)"}, b""
    return head, rest[4 : 4 + m]


def _remove_workdir(workdir: str, prog: str) -> None:
    """Most programs create nothing: unlink + rmdir then; anything else goes through _rmtree."""
    try:
        os.unlink(prog)
        os.rmdir(workdir)
    except OSError:
        _rmtree(workdir)


def _rmtree(path: str) -> None:
    def fix(func: Any, p: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=fix)
    else:
        shutil.rmtree(path, onerror=fix)


def _import(name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception:
        pass  # a missing optional library only costs the program its own import


def _vm_size_mb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) // 1024
    return 0


def main() -> None:
    cfg = Config(**json.loads(sys.argv[1]))
    # The command channel moves off fds 0/1 so nothing printed by accident can corrupt it.
    cmd_in, cmd_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the host's terminal is the host's business
    zyg = Zygote(cfg, cmd_in, cmd_out)
    zyg.prepare()
    zyg.serve()


if __name__ == "__main__":
    main()
