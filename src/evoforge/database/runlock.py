"""One process runs a run directory at a time (issue 9: two `resume`s duplicated work and one died).

The lock is an flock on ``run.lock`` inside the directory, so it is released by the kernel when
its holder exits, however it exits (kill -9 included): no stale lock to clean up. The holder's
pid is written into the file, for the one line the second process prints. Readers (`show`, a
dashboard) do not take it.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = "run.lock"


class RunLocked(RuntimeError):
    """Another process runs this directory (one readable line)."""


class RunLock:
    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self.fd: int | None = None

    def acquire(self) -> "RunLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise RunLocked(f"{self.path.parent} is being run by another evoforge process (pid {holder}); "
                            "wait for it to end or stop it, then resume") from None
        except OSError:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)  # the file stays: removing it would race with a process about to lock it

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
