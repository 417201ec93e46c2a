"""Confinement added per evaluation on top of limits.py: IPC namespace, seccomp, memory cgroup.

* IPC namespace: SysV shared memory, semaphores and message queues (and POSIX message queues)
  a program creates live in a namespace of its own, destroyed with its last process. Nothing
  outlives the evaluation or is visible to the next one.
* seccomp filter (once per worker, in the zygote; the template and every child inherit it): no UNIX-domain sockets
  (pathname sockets are not covered by the network namespace: a program could reach a
  database, a model server or D-Bus), no io_uring (it would bypass the filter), no kernel
  keyrings (keys outlive a process and are shared by every process of a uid), native
  architecture only.
* memory cgroup (root): RLIMIT_AS does not count memfd or shared-memory pages; a cgroup counts
  every page an evaluation's processes allocate, so the evaluation's total memory is capped. The
  template joins it once (its children are born inside); its own pages are added to the limit.

Each piece raises OSError when the kernel or our privileges do not allow it; the zygote reports
what it got and the pool says once in the log what is missing.
"""
from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path
from typing import Any

from evoforge.sandbox.limits import PR_SET_NO_NEW_PRIVS, _check, _libc

CLONE_NEWIPC = 0x08000000


def unshare_ipc() -> None:
    _check(_libc.unshare(CLONE_NEWIPC), "unshare(CLONE_NEWIPC)")


# -- seccomp --------------------------------------------------------------------------------
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_ABS_W, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_EPERM, _EAFNOSUPPORT, _ENOSYS = 1, 97, 38
AF_UNIX = 1
# arch id, x32 bit (x86_64 only), socket, io_uring_setup/enter/register, add_key/request_key/keyctl
_ARCH = {
    "x86_64": (0xC000003E, 0x40000000, 41, (425, 426, 427), (248, 249, 250)),
    "aarch64": (0xC00000B7, None, 198, (425, 426, 427), (217, 218, 219)),
}


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program(machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The BPF program (code, jt, jf, k) for this machine; ValueError on an unknown architecture."""
    machine = machine or platform.machine()
    if machine not in _ARCH:
        raise ValueError(f"no seccomp filter for architecture {machine}")
    arch, x32, sock, uring, keys = _ARCH[machine]
    deny = [*uring, *keys]
    ret_errno = lambda e: (_RET, 0, 0, _RET_ERRNO | e)  # noqa: E731
    prog: list[tuple[int, int, int, int]] = [
        (_LD_ABS_W, 0, 0, 4),  # seccomp_data.arch
        (_JEQ, 1, 0, arch),
        ret_errno(_ENOSYS),  # another ABI (i386 on x86_64, ...): nothing
        (_LD_ABS_W, 0, 0, 0),  # seccomp_data.nr
    ]
    if x32 is not None:
        prog += [(_JGE, 0, 1, x32), ret_errno(_ENOSYS)]
    for i, nr in enumerate(deny):
        prog.append((_JEQ, len(deny) - i + 1, 0, nr))  # -> the EPERM return below
    prog += [
        (_JEQ, 2, 0, sock),  # -> the socket domain check
        (_RET, 0, 0, _RET_ALLOW),
        ret_errno(_EPERM),
        (_LD_ABS_W, 0, 0, 16),  # args[0], low 32 bits (little-endian): the domain
        (_JEQ, 0, 1, AF_UNIX),
        ret_errno(_EAFNOSUPPORT),
        (_RET, 0, 0, _RET_ALLOW),
    ]
    return prog


def install_seccomp() -> None:
    """Apply the filter to the calling thread and everything it forks later (cannot be undone)."""
    try:
        prog = seccomp_program()
    except ValueError as exc:
        raise OSError(str(exc)) from None
    arr = (_SockFilter * len(prog))(*(_SockFilter(*ins) for ins in prog))
    fprog = _SockFprog(len(prog), ctypes.cast(arr, ctypes.POINTER(_SockFilter)))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "prctl(SECCOMP)")


# -- scratch space --------------------------------------------------------------------------
def private_tmpfs(path: str, size_bytes: int) -> None:
    """Make `path` a size-capped tmpfs that only the calling process and its children see (root).

    The run directories live there: files a program writes count against its memory cgroup and
    all of them together against `size_bytes` (RLIMIT_FSIZE caps one file, not their number), the
    host's disk is never filled, and creating and removing a run directory costs microseconds.
    """
    from evoforge.sandbox.limits import CLONE_NEWNS, _MS_NODEV, _MS_NOSUID, _MS_PRIVATE, _MS_REC, _mount

    _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount("tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=0711,size={int(size_bytes)}")


# -- memory cgroup --------------------------------------------------------------------------
class MemoryCgroup:
    """One cgroup per worker slot: the template is in it, so is every child; the limit is set per run.

    cgroup v2 (memory.max, memory.events) or the v1 memory controller (memory.limit_in_bytes,
    memory.oom_control), under the cgroup this process already belongs to.
    """

    def __init__(self, path: Path, v2: bool) -> None:
        self.path, self.v2 = path, v2
        self._limit = -1

    @classmethod
    def create(cls, name: str) -> "MemoryCgroup":
        base, v2 = _own_memory_cgroup()
        _remove_stale(base, name.rsplit("-", 1)[0] + "-")
        path = base / name
        try:
            path.mkdir(exist_ok=True)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot create cgroup {path}: {exc.strerror}") from None
        cg = cls(path, v2)
        try:
            cg.set_limit(64 << 20)  # proves the controller is there and writable
            for name_, value in (("memory.swap.max", "0"),) if v2 else (("memory.swappiness", "0"),):
                try:
                    (path / name_).write_text(value)
                except OSError:
                    pass  # no swap accounting: fine, there may be no swap at all
        except OSError:
            cg.remove()
            raise
        return cg

    def set_limit(self, nbytes: int) -> None:
        if nbytes == self._limit:
            return
        if self.v2:
            (self.path / "memory.max").write_text(str(nbytes))
        else:  # memory+swap at the same cap; v1 wants memory <= memory+swap at every moment
            mem, memsw = self.path / "memory.limit_in_bytes", self.path / "memory.memsw.limit_in_bytes"
            order = (memsw, mem) if nbytes > self._limit else (mem, memsw)
            for f in order:
                try:
                    f.write_text(str(nbytes))
                except OSError:
                    if f is mem:
                        raise  # memsw may not exist (no swap accounting): fine
        self._limit = nbytes

    def enter(self) -> None:
        """Move the calling process in (its children are then born inside)."""
        with open(self.path / "cgroup.procs", "w") as f:
            f.write(str(os.getpid()))

    def usage(self) -> int:
        """Bytes charged now (the template's pages and reclaimable page cache of earlier runs)."""
        try:
            return int((self.path / ("memory.current" if self.v2 else "memory.usage_in_bytes")).read_text())
        except (OSError, ValueError):
            return 0

    def oom_kills(self) -> int:
        name = "memory.events" if self.v2 else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        try:  # v1 kernels without an oom_kill count: the limit was hit at all
            return int((self.path / "memory.failcnt").read_text()) if not self.v2 else 0
        except (OSError, ValueError):
            return 0

    def remove(self) -> None:
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def _remove_stale(base: Path, prefix: str) -> None:
    """Empty cgroups of workers that died without cleaning up (named prefix + pid; pid gone)."""
    try:
        for entry in base.iterdir():
            pid = entry.name[len(prefix):]
            if entry.name.startswith(prefix) and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                try:
                    os.rmdir(entry)
                except OSError:
                    pass  # not empty (something still runs there) or not ours to remove
    except OSError:
        pass


def _own_memory_cgroup() -> tuple[Path, bool]:
    """(directory of this process's memory cgroup, is it v2)."""
    v1 = v2 = None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hid, controllers, rel = line.split(":", 2)
        if hid == "0" and controllers == "":
            v2 = rel
        elif "memory" in controllers.split(","):
            v1 = rel
    if v1 is not None and Path("/sys/fs/cgroup/memory").is_dir():
        return Path("/sys/fs/cgroup/memory" + v1.rstrip("/")), False
    if v2 is not None:
        root = Path("/sys/fs/cgroup")
        base = root / v2.lstrip("/")
        if (base / "cgroup.controllers").is_file() and "memory" in (base / "cgroup.controllers").read_text().split():
            return base, True
    raise OSError(2, "no memory cgroup controller available (cgroup v2 'memory' or v1 /sys/fs/cgroup/memory)")


def round_up(n: int, step: int) -> int:
    return -(-n // step) * step


def probe(fn: Any, ok: str) -> str:
    """Whether `fn` works in a forked child (e.g. an unshare this kernel or our privileges refuse)."""
    pid = os.fork()
    if pid == 0:
        try:
            fn()
            os._exit(0)
        except OSError as exc:
            os._exit(exc.errno or 1)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return ok if code == 0 else f"none ({fn.__name__}: {os.strerror(code) if code > 0 else 'killed'})"
