"""The zygote: a long-lived, pre-imported process that forks one confined child per evaluation.

Started once per pool slot by the host (a fresh interpreter with a scrubbed environment). At
start it leaves the network (a new network namespace), becomes a child subreaper, imports
numpy/scipy once, then serves requests read from its stdin: fork, confine, supervise
(deadline, output tails, result size, process count), clean up every process and file the
program left, answer on its stdout. Forking a warm template is what makes an evaluation cost
milliseconds instead of an interpreter start; children are forked from a clean template process
(template.py) that never sees a request, so nothing of one evaluation reaches the next.
"""
from __future__ import annotations

import gc
import json
import math
import os
import select
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from evoforge.sandbox import confine, fsclean, harness, limits, procs
from evoforge.sandbox.outcome import Tail, decide, vm_size_mb
from evoforge.sandbox.template import TemplateMixin, import_quietly as _import
from evoforge.sandbox.protocol import ChannelClosed, read_json, send_frame, send_json, write_all

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
    harden: bool = True  # IPC namespace, seccomp filter, memory cgroup per evaluation (off: for benchmarks)
    scratch_mb: int = 2048  # size of the tmpfs the run directories live in (root, harden)


class Zygote(TemplateMixin):
    def __init__(self, cfg: Config, cmd_in: int, cmd_out: int) -> None:
        self.cfg = cfg
        self.cmd_in = cmd_in
        self.cmd_out = cmd_out
        self.count = 0
        self.features: dict[str, Any] = {}
        self.base = ""
        self.on_demand: list[str] = []  # preload modules not imported yet
        self.cgroup: confine.MemoryCgroup | None = None
        self.tsock: socket.socket | None = None  # to the template process
        self.template_pid = 0
        self._exit: int | None = None  # the running child's wait status, once the template sent it

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
        scratch = "disk"
        if self.cfg.harden and root:
            try:  # run dirs in a private, size-capped tmpfs: counted by the cgroup, the disk never fills
                confine.private_tmpfs(self.base, self.cfg.scratch_mb << 20)
                scratch = f"tmpfs {self.cfg.scratch_mb} MB"
            except OSError as exc:
                scratch = f"disk ({exc})"
        os.environ["PATH"] = _python_on_path(self.base) + ":" + os.environ["PATH"]  # issue 10
        self.features = {
            "pid": os.getpid(),
            "network": net,
            "landlock_abi": abi,
            "uid": self.cfg.uid,
            "base": self.base,
            "vm_mb": vm_size_mb(),
            "nproc_limit": self.cfg.uid is not None,
            "fallback": fallback,
            "scratch": scratch,
        }
        self.features.update(self._harden())
        self._start_template()
        self.features["template"] = self.template_pid

    def _harden(self) -> dict[str, Any]:
        """The per-evaluation confinement this kernel allows (confine.py); the pool logs what is missing."""
        if not self.cfg.harden:
            return {"ipc": "off", "seccomp": "off", "memory_cgroup": "off"}
        got = {"ipc": confine.probe(confine.unshare_ipc, "namespace")}
        try:
            confine.install_seccomp()  # once, here: the template and every child inherit it
            got["seccomp"] = "on"
        except OSError as exc:
            got["seccomp"] = f"off ({exc})"
        try:
            self.cgroup = confine.MemoryCgroup.create(f"evoforge-sbx-{os.getpid()}")
            got["memory_cgroup"] = str(self.cgroup.path)
        except OSError as exc:
            got["memory_cgroup"] = f"none ({exc})"
        return got

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
        except (OSError, ChannelClosed):
            pass  # host went away (EPIPE, or its pipe hung up mid-run), or the template died
        finally:
            if self.tsock is not None:
                self.tsock.close()
            procs.kill_subtree(os.getpid())
            fsclean.remove_tree(self.base)
            if self.cgroup is not None:
                self.cgroup.remove()

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
                assert self.tsock is not None
                self.tsock.send(json.dumps({"import": [name]}).encode())  # the template imports, we never do
                self._from_template(600.0)
                self.on_demand.remove(name)

    def evaluate(self, req: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        self.warm_up(req)
        self.count += 1
        workdir = os.path.join(self.base, f"run{self.count}")
        os.mkdir(workdir, 0o700)
        prog = os.path.join(workdir, harness.program_file(req))  # program.py, or program.rs, ... (issue 10)
        with open(prog, "wb") as f:
            f.write(_source_bytes(req["code"]))
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
        req_fd = os.memfd_create("evoforge-request", os.MFD_CLOEXEC)  # the request reaches only the child
        write_all(req_fd, json.dumps({**req, "workdir": workdir}).encode())
        ooms = 0
        if self.cgroup is not None:
            try:  # the template's own pages are in the cgroup too: the limit is memory_mb on top of them
                self.cgroup.set_limit((int(req["memory_mb"]) << 20) + confine.round_up(self.cgroup.usage(), 64 << 20))
            except OSError:
                self.cgroup.set_limit(1 << 62)  # the kernel refused this value: RLIMIT_AS still holds
            ooms = self.cgroup.oom_kills()
        t0 = time.monotonic()
        self._exit = None
        try:
            assert self.tsock is not None
            socket.send_fds(self.tsock, [b'{"run": 1}'], [out_w, err_w, res_w, req_fd])
            pid = int(self._from_template()["pid"])
        finally:
            for fd in (out_w, err_w, res_w, req_fd):
                os.close(fd)
        out, err = Tail(int(req["max_output_bytes"])), Tail(int(req["max_output_bytes"]))
        res = bytearray()
        res_cap = int(req["max_result_bytes"]) + (1 << 16)
        try:
            send_json(self.cmd_out, {"started": pid})
            outcome = self._supervise(pid, t0, float(req["timeout"]), {out_r: out, err_r: err}, res_r, res, res_cap)
            while self._exit is None:  # killed at a limit: the template reports the exit at once
                msg = self._from_template(10.0)
                if "exit" in msg:
                    self._exit = int(msg["status"])
        except BaseException:
            procs.kill_group(pid)  # the host is gone or we broke: nothing of this run may survive us
            procs.kill_subtree(os.getpid())
            raise
        wstatus = self._exit
        wall = time.monotonic() - t0
        procs.kill_group(pid)
        procs.kill_subtree(os.getpid(), spare=self.template_pid)
        oom = self.cgroup is not None and self.cgroup.oom_kills() > ooms
        self._drain({out_r: out, err_r: err}, res_r, res, res_cap)
        for fd in (out_r, err_r, res_r):
            os.close(fd)
        head, value = decide(outcome, wstatus, bytes(res), req, oom)
        head.update(stdout=out.text(), stderr=err.text(), wall_time=wall)
        return head, value

    def _supervise(self, pid: int, t0: float, timeout: float, tails: dict[int, Tail], res_r: int, res: bytearray, res_cap: int) -> str:
        """Wait for the child to exit while collecting its output; returns '', 'timeout', 'oversized' or 'procs'.

        The child's end comes as the template's exit message; the host's end (its command pipe
        hung up: killed, even by SIGKILL) ends the run at once instead of at the program's limit.
        """
        assert self.tsock is not None
        tfd = self.tsock.fileno()
        poller = select.poll()  # no per-run epoll descriptor to create and close
        for fd in (tfd, *tails, res_r):
            poller.register(fd, select.POLLIN)
        poller.register(self.cmd_in, 0)  # POLLHUP only: a queued next request is not an event
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
                if fd == self.cmd_in:
                    procs.kill_group(pid)
                    raise ChannelClosed("the host is gone")
                if fd == tfd:
                    msg = self._from_template()
                    if "exit" in msg:
                        self._exit = int(msg["status"])
                        return ""
                    continue
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
                if len(procs.descendants(os.getpid())) > self.cfg.max_processes + 1:  # + the template
                    procs.kill_group(pid)
                    return "procs"

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
            if self.features["ipc"] == "namespace":
                confine.unshare_ipc()  # SysV/POSIX IPC objects die with the evaluation
            if self.cgroup is not None:
                with open("/proc/self/oom_score_adj", "w") as f:
                    f.write("1000")  # the cgroup's OOM killer takes the evaluation, never the template
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
            limits.die_with_parent(signal.SIGKILL)  # after the uid change, which clears it
            if os.getppid() != self.template_pid:
                os._exit(121)
            os.environ["HOME"] = os.environ["TMPDIR"] = workdir  # the rest is CHILD_ENV already (prepare)
            ours = os.environ["PATH"].split(":", 1)[0]  # the bin of python/python3 (_python_on_path) stays first
            os.environ.update({str(k): str(v) for k, v in (req.get("env") or {}).items()})  # the task's (issue 10)
            os.environ["PATH"] = ours + ":" + os.environ["PATH"] if not os.environ["PATH"].startswith(ours) else os.environ["PATH"]
            tempfile.tempdir = None
        except BaseException as exc:
            try:
                os.write(2, f"sandbox setup failed: {exc!r}\n".encode())
            finally:
                os._exit(121)
        harness.run_child(req, workdir, RESULT_FD)


def _source_bytes(code: str) -> bytes:
    """The program file's bytes: undecodable bytes round-trip (surrogateescape); other lone
    surrogates (a model's JSON can hold any) become escapes instead of killing this process."""
    try:
        return code.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return code.encode("utf-8", "backslashreplace")


def _remove_workdir(workdir: str, prog: str) -> None:
    """Most programs create nothing: unlink + rmdir then; anything else goes through _rmtree."""
    try:
        os.unlink(prog)
        os.rmdir(workdir)
    except OSError:
        _rmtree(workdir)


def _python_on_path(base: str) -> str:
    """A bin folder whose ``python`` and ``python3`` run this interpreter (evaluators call them by name)."""
    folder = os.path.join(base, "bin")
    os.mkdir(folder, 0o755)
    for name in ("python", "python3"):
        path = os.path.join(folder, name)
        with open(path, "w") as f:  # a script, not a symlink: a venv's python must be started by its own path
            f.write(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        os.chmod(path, 0o755)
    return folder


def _rmtree(path: str) -> None:
    fsclean.remove_tree(path)  # no recursion: a tree deeper than the recursion limit is removed too


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
