"""How many CPU threads a local model should use: the cores that are free now.

On an idle machine all cores are faster; on a loaded one (other runs, the sandbox workers) extra
threads only wait for each other, and one thread per free core is faster (measured: docs/RL.md).
"""
from __future__ import annotations

import os


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def threads_by_load(requested: int | None = None) -> int:
    """``requested`` when given (> 0), else the cores not busy over the last minute (at least 1)."""
    if requested and int(requested) > 0:
        return int(requested)
    cores = usable_cores()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cores
    return max(1, min(cores, round(cores - load)))
