"""Kernel-level confinement applied to a sandboxed process: rlimits, uid drop, Landlock, namespaces.

Everything here is plain syscalls through `resource`, `os` and ctypes (Python 3.11 has no
os.unshare). Each function either applies its restriction or raises OSError; callers decide
what a missing feature means.
"""
from __future__ import annotations

import ctypes
import os
import resource
from dataclasses import dataclass

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

# Landlock syscall numbers are the same on every architecture (generic syscall table).
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1

# Filesystem rights that change something: we handle (= deny by default) these and leave
# reading and executing free everywhere.
_FS_WRITE_FILE = 1 << 1
_FS_REMOVE_DIR = 1 << 4
_FS_REMOVE_FILE = 1 << 5
_FS_MAKE_ALL = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_FS_REFER = 1 << 13  # ABI 2
_FS_TRUNCATE = 1 << 14  # ABI 3
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def landlock_abi() -> int:
    """Landlock ABI version of the running kernel, 0 when unavailable."""
    ret = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    return int(ret) if ret > 0 else 0


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass(frozen=True)
class LandlockReport:
    abi: int
    fs: bool  # writes confined to the allowed directories
    net: bool  # TCP bind/connect denied
    signals: bool  # cannot signal processes outside the sandbox


def landlock_confine(writable: list[str], abi: int) -> LandlockReport:
    """Deny writes outside `writable`, all TCP, and (ABI >= 6) signals/abstract sockets leaving the domain.

    Applies to the calling process and everything it later forks; cannot be undone.
    """
    if abi < 1:
        return LandlockReport(0, False, False, False)
    fs = _FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE_ALL
    if abi >= 2:
        fs |= _FS_REFER
    if abi >= 3:
        fs |= _FS_TRUNCATE
    attr = _RulesetAttr(fs, _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0, _SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    rfd = _check(_libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for path in writable:
            dir_rights = fs if os.path.isdir(path) else fs & (_FS_WRITE_FILE | _FS_TRUNCATE)
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(dir_rights, pfd)
                _check(_libc.syscall(_SYS_LANDLOCK_ADD_RULE, ctypes.c_int(rfd), ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)), f"landlock_add_rule({path})")
            finally:
                os.close(pfd)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        _check(_libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(rfd), ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(rfd)
    return LandlockReport(abi, True, abi >= 4, abi >= 6)


def unshare_network(as_root: bool) -> None:
    """Move the calling process into a fresh network namespace (only a downed loopback inside).

    Not root: a user namespace comes first (mapping our own uid/gid), if the kernel allows it.
    """
    if as_root:
        _check(_libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
        return
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNET), "unshare(CLONE_NEWUSER|CLONE_NEWNET)")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


def set_subreaper() -> None:
    """Orphaned descendants get reparented to us instead of init, so we can find and reap them."""
    _check(_libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(CHILD_SUBREAPER)")


def die_with_parent(sig: int) -> None:
    _check(_libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0), "prctl(PDEATHSIG)")


@dataclass(frozen=True)
class Rlimits:
    memory_bytes: int
    cpu_seconds: int
    file_bytes: int = 256 << 20
    open_files: int = 256
    processes: int | None = None  # per uid; only meaningful under a dedicated uid

    def apply(self) -> None:
        def lower(res: int, value: int, hard: int | None = None) -> None:
            _, cur_hard = resource.getrlimit(res)
            want_hard = value if hard is None else hard
            if cur_hard != resource.RLIM_INFINITY:
                want_hard = min(want_hard, cur_hard)
            resource.setrlimit(res, (min(value, want_hard), want_hard))

        lower(resource.RLIMIT_AS, self.memory_bytes)
        lower(resource.RLIMIT_CPU, self.cpu_seconds, self.cpu_seconds + 1)  # soft: SIGXCPU, hard: SIGKILL
        lower(resource.RLIMIT_FSIZE, self.file_bytes)
        lower(resource.RLIMIT_NOFILE, self.open_files)
        lower(resource.RLIMIT_CORE, 0)
        if self.processes is not None:
            lower(resource.RLIMIT_NPROC, self.processes)


def drop_to(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


# -- making root-only directories traversable for the dropped uid ----------------------------
# Python itself may live somewhere the sandbox uid cannot reach (pyenv under /root, mode 0700).
# In a private mount namespace we cover such a directory with an empty tmpfs and bind-mount back
# only the paths the child needs (the interpreter, sys.path, the evaluator's folder): the rest
# of that directory stays hidden.
CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)), f"mount({target})")


def plan_exposure(paths: list[str]) -> list[tuple[str, list[str]]]:
    """[(blocked_dir, [paths below it to bind back])] for paths whose ancestors others cannot traverse."""
    blocked: dict[str, list[str]] = {}
    for p in sorted({os.path.realpath(p) for p in paths if p and os.path.exists(p)}):
        parts = p.split("/")[1:]
        for i in range(1, len(parts)):
            anc = "/" + "/".join(parts[:i])
            try:
                if not os.stat(anc).st_mode & 0o001:
                    keep = blocked.setdefault(anc, [])
                    if not any(p == k or p.startswith(k + "/") for k in keep):
                        keep.append(p)
                    break
            except OSError:
                break
    # a blocked dir inside another blocked dir is covered by the outer tmpfs
    outer = sorted(blocked, key=len)
    plan: list[tuple[str, list[str]]] = []
    for anc in outer:
        if any(anc.startswith(o + "/") for o, _ in plan):
            for o, keep in plan:
                if anc.startswith(o + "/"):
                    keep.extend(k for k in blocked[anc] if not any(k == x or k.startswith(x + "/") for x in keep))
            continue
        plan.append((anc, list(blocked[anc])))
    return plan


def apply_exposure(plan: list[tuple[str, list[str]]]) -> None:
    """In a fresh mount namespace: tmpfs over each blocked dir, then bind the needed paths back (root only)."""
    if not plan:
        return
    _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    # opened inside the new namespace (a bind source must belong to it), before the tmpfs hides them
    fds = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for _, keep in plan for p in keep}
    covered: list[str] = []
    try:
        for anc, keep in plan:
            _mount("tmpfs", anc, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=64k")
            covered.append(anc)
            for p in sorted(keep, key=len):
                if os.path.isdir(f"/proc/self/fd/{fds[p]}"):
                    os.makedirs(p, 0o755, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(p), 0o755, exist_ok=True)
                    open(p, "a").close()
                _mount(f"/proc/self/fd/{fds[p]}", p, None, _MS_BIND | _MS_REC)
    except BaseException:
        for anc in reversed(covered):  # half done is worse than not done: show the real folders again
            _libc.umount2(anc.encode(), 2)  # MNT_DETACH
        raise
    finally:
        for fd in fds.values():
            os.close(fd)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Empty the bounding, effective, permitted and inheritable sets (a root child without a uid of its own)."""
    for cap in range(64):
        _libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP; EINVAL past the last cap is fine
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(_CapHeader(0x20080522, 0)), data), "capset")
