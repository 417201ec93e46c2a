"""Finding and ending processes: descendants through /proc, processes of a uid.

The zygote is a child subreaper, so every process a program starts (even a setsid +
double-fork daemon) stays in the zygote's subtree until reaped: walking
/proc/<pid>/task/<tid>/children from the zygote finds them all.
"""
from __future__ import annotations

import os
import signal
import time


def children_of(pid: int) -> list[int]:
    """Direct children of `pid` (over all its threads); [] if it is gone."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except OSError:
            continue
    return out


def descendants(pid: int) -> list[int]:
    """All processes below `pid` (not including it), parents before children."""
    found: list[int] = []
    todo = children_of(pid)
    seen: set[int] = set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        found.append(p)
        todo.extend(children_of(p))
    return found


def processes_of_uid(uid: int) -> list[int]:
    """Pids whose real uid is `uid` (scans /proc; for tests and for the host's last-resort cleanup)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            out.append(int(name))
                        break
        except OSError:
            continue
    return out


def is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def reap_zombies() -> None:
    """Collect every exited child of the calling process without blocking."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_subtree(root: int, patience: float = 5.0, spare: int = 0) -> int:
    """SIGKILL every descendant of `root` (the calling process) but `spare`, and reap them; returns how many were hit.

    Loops because dying processes hand their own children over to us (we are a subreaper) and
    a fork bomb may create a few more before its SIGKILL lands.
    """
    hit = 0
    deadline = time.monotonic() + patience
    while True:
        reap_zombies()
        alive = [p for p in descendants(root) if p != spare and not is_zombie(p)]
        if not alive and not [c for c in children_of(root) if c != spare]:
            return hit
        for p in alive:
            try:
                os.kill(p, signal.SIGKILL)
                hit += 1
            except OSError:
                pass
        if time.monotonic() > deadline:
            return hit
        time.sleep(0.001)
