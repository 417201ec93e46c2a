"""The islands of the selector, read from the run's latest snapshot (map-elites, pacevolve).

Island membership exists only in the selector's snapshot (a JSON blob of several MB at 100 000
programs, replaced every few seconds), so it is parsed on demand and cached per snapshot step.
The figures of each member come from the reader's in-memory skeleton."""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from evoforge.dashboard.data import RunReader

TOP = 10


def selector_state(snapshot: Any, depth: int = 4) -> dict[str, Any] | None:
    """The selector's state in a snapshot, wherever the store's version nests it (the whole blob in
    v1; ``{"stages": {"select": {"selector": state, ...}}}`` in v2): the first dict, breadth first,
    that names its selector and holds islands."""
    level = [snapshot]
    for _ in range(depth):
        for c in level:
            if isinstance(c, dict) and isinstance(c.get("selector"), str) and ("members" in c or "islands" in c):
                return c
        level = [v for c in level if isinstance(c, dict) for v in c.values() if isinstance(v, dict)]
    return None


def islands(r: RunReader, cache: dict[int, Any]) -> dict[str, Any] | None:
    with r.lock:
        row = r.db.execute("SELECT step FROM snapshot WHERE id = 0").fetchone()
        if row is None:
            return None
        if id(r) in cache and cache[id(r)][0] == row[0]:
            return cache[id(r)][1]
        blob = r.db.execute("SELECT selector_state FROM snapshot WHERE id = 0").fetchone()[0]
    state = selector_state(json.loads(blob))
    out = None if state is None else _islands(r, state, row[0])
    cache[id(r)] = (row[0], out)
    return out


def _islands(r: RunReader, state: dict[str, Any], step: int) -> dict[str, Any] | None:
    cells: list[list[tuple[int, int, int]]] = []
    migrants: list[set[int]] = []
    if "members" in state and "entries" in state:  # map-elites: entries [eid, pid, island, migrant, cell]
        pid_of = {e[0]: e[1] for e in state["entries"]}
        members = [[pid_of[e] for e in m if e in pid_of] for m in state["members"]]
        migrants = [{e[1] for e in state["entries"] if e[2] == i and e[3]} for i in range(len(members))]
        cells = [[(int(c[0][0]), int(c[0][1]), pid_of.get(c[1], -1)) for c in g] for g in state.get("grids", [])]
    elif isinstance(state.get("islands"), list):  # pacevolve: each island's pool of program ids
        members = [list(isl.get("pool", [])) for isl in state["islands"]]
    else:
        return None
    r.refresh()
    sign = -1.0 if r.direction == "min" else 1.0
    out = []
    with r.lock:
        for i, pids in enumerate(members):
            pos = [p for p in (r._pos(int(x)) for x in pids) if p is not None]
            scores = r.score[pos] if pos else np.array([])
            finite = np.isfinite(scores)
            order = np.argsort(np.where(finite, -sign * scores, np.inf), kind="stable")[:TOP]
            out.append({
                "index": i, "members": len(pids),
                "best": None if not finite.any() else float(sign * np.max(sign * scores[finite])),
                "mean": None if not finite.any() else float(np.mean(scores[finite])),
                "migrants": len(migrants[i]) if migrants else None,
                "top": [r._row(pos[k]) for k in order],
                "cells": [(x, y, pid, _score(r, pid)) for x, y, pid in cells[i]] if cells else [],
            })
    return {"step": step, "selector": state.get("selector"), "islands": out,
            "archive": len(state.get("archive", [])) or None}


def _score(r: RunReader, pid: int) -> float | None:
    k = r._pos(pid)
    return None if k is None or math.isnan(r.score[k]) else float(r.score[k])
