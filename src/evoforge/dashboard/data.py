"""Read-only access to one run store, with the figures aggregated on the server.

The run store is opened with SQLite's ``mode=ro`` URI: no statement of the dashboard can
change it, and a running engine (the WAL writer) goes on undisturbed. The small columns of
every child (id, step, parent, class, score, evaluation time) are read once into numpy
arrays (0.4-0.8 s for 100 000 children, see benchmarks/RESULTS.md) and then refreshed
incrementally, by primary-key range, so every chart is computed in memory and only
a few thousand points ever leave the server, whatever the size of the run.
"""
from __future__ import annotations

import difflib
import json
import math
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from evoforge.database.store import RunStore, StoreError

RUN_DB = "run.db"
CORE_TABLES = ("meta", "children", "steps", "snapshot", "objects", "attempts")
CLASSES = ("evaluated", "invalid", "no_solution", "unchanged", "no_diff")
EVALUATED = (0, 1, 2)  # class codes of the children that ran in the sandbox
MAX_POINTS = 2000  # per series sent to a browser
REFRESH_S = 1.0  # a request re-reads the store at most this often
PAGE = 50


class DashboardError(ValueError):
    """A run directory the dashboard cannot open (one line for the CLI)."""


class RunReader:
    """One run directory, read-only; thread-safe (requests run in a thread pool)."""

    def __init__(self, run_dir: Path):
        self.dir = Path(run_dir)
        db = self.dir / RUN_DB
        if not db.is_file():
            raise DashboardError(f"{run_dir} is not a run directory (no {RUN_DB})")
        try:
            # the store's own read-only open: mode=ro (immutable on a read-only mount), schema version checked
            self.db = RunStore(db, readonly=True).db
            self.db.execute("SELECT 1 FROM children LIMIT 1").fetchall()
            # memory-mapped reads: the first full scan of a 100k-child store is ~35 % faster
            self.db.execute("PRAGMA mmap_size = 1073741824")
        except StoreError as exc:
            raise DashboardError(str(exc)) from None
        except sqlite3.DatabaseError as exc:
            raise DashboardError(f"{db} is not an evoforge run store ({exc})") from None
        self.lock = threading.RLock()
        self._checked = 0.0
        self.version = 0  # bumps whenever the store changed; the pages poll it
        self._fingerprint: tuple = ()
        self._load_all()
        self._finished = self.db.execute("SELECT COALESCE(MAX(step), -1) FROM steps").fetchone()[0]

    # -- the in-memory skeleton ---------------------------------------------------------------
    # every column numeric (the class as its code), so that one np.array call decodes a batch
    _SKEL = ("SELECT id, step, COALESCE(parent_id, -1), CASE child_class "
             + " ".join(f"WHEN '{c}' THEN {i}" for i, c in enumerate(CLASSES))
             + " ELSE -1 END, score, wall_time, created_at FROM children")
    _COLS = ("ids", "step", "parent", "cls", "score", "wall", "created")
    _TYPES = (np.int64, np.int64, np.int64, np.int8, np.float64, np.float64, np.float64)

    def _load_all(self) -> None:
        self._set(self.db.execute(self._SKEL + " ORDER BY id").fetchall())
        self.meta = {k: _loads(v) for k, v in self.db.execute("SELECT key, value FROM meta")}

    def _set(self, rows: list[tuple], keep: int = 0) -> None:
        """The arrays become their first ``keep`` entries followed by ``rows``."""
        table = np.array(rows, dtype=np.float64).reshape(len(rows), len(self._COLS))  # None -> NaN
        for j, (name, kind) in enumerate(zip(self._COLS, self._TYPES)):
            col = table[:, j] if kind is np.float64 else table[:, j].astype(kind)
            setattr(self, name, np.concatenate([getattr(self, name)[:keep], col]) if keep else col)

    def refresh(self, force: bool = False) -> None:
        """Re-read what changed since the last look: new children, newly classified ones, steps."""
        with self.lock:
            if not force and time.monotonic() - self._checked < REFRESH_S:
                return
            self._checked = time.monotonic()
            n, top = self.db.execute("SELECT COUNT(*), MAX(id) FROM children").fetchone()
            last = self.db.execute("SELECT MAX(step), COUNT(*) FROM steps").fetchone()
            fingerprint = (n, top, *last)
            if fingerprint == self._fingerprint and not (self.cls < 0).any():
                return
            if n < len(self.ids) or (len(self.ids) and (top or 0) < self.ids[-1]):
                self._load_all()  # children were discarded (a resume): start over
            else:
                # re-read from the first child not known to be final: unclassified, or of a step that
                # had not finished at the last look (a resume may rewrite those)
                open_rows = np.nonzero((self.cls < 0) | (self.step > self._finished))[0]
                start = int(self.ids[open_rows[0]]) if len(open_rows) else int(self.ids[-1]) + 1 if len(self.ids) else 0
                fresh = self.db.execute(self._SKEL + " WHERE id >= ? ORDER BY id", (start,)).fetchall()
                keep = int(np.searchsorted(self.ids, start))
                if fresh or keep < len(self.ids):
                    self._set(fresh, keep=keep)
            self.meta = {k: _loads(v) for k, v in self.db.execute("SELECT key, value FROM meta")}
            self._fingerprint = fingerprint
            self._finished = last[0] if last[0] is not None else -1
            self.version += 1

    # -- summary --------------------------------------------------------------------------------
    @property
    def direction(self) -> str:
        return self.meta.get("direction") or "max"

    def _better_sign(self) -> float:
        return -1.0 if self.direction == "min" else 1.0

    def summary(self) -> dict[str, Any]:
        self.refresh()
        with self.lock:
            last = self.db.execute("SELECT step, best_id, best_score, evaluated, finished_at FROM steps"
                                   " ORDER BY step DESC LIMIT 1").fetchone()
            counts = {c: int(np.sum(self.cls == i)) for i, c in enumerate(CLASSES)}
            seed = self.meta.get("seed_id")
            seed_pos = self._pos(seed) if seed is not None else None
            started = float(np.nanmin(self.created)) if len(self.created) and np.isfinite(self.created).any() else None
            return {
                "name": self.dir.name, "task": self.meta.get("task"), "direction": self.direction,
                "target": self.meta.get("target"),
                "best_score": last[2] if last else None, "best_id": last[1] if last else None,
                "initial_score": None if seed_pos is None or math.isnan(self.score[seed_pos]) else
                float(self.score[seed_pos]),
                "steps": last[0] if last else 0, "children": int(np.sum(self.step > 0)),
                "evaluated": int(np.isin(self.cls, EVALUATED).sum()), "classes": counts,
                "started_at": started, "last_step_at": last[4] if last else None,
                "selector": (self.meta.get("config") or {}).get("selector"),
                "backend": ((self.meta.get("config") or {}).get("backend") or {}).get("name"),
                "version": self.version,
            }

    def live(self) -> dict[str, Any]:
        s = self.summary()
        return {k: s[k] for k in ("version", "steps", "children", "evaluated", "best_score", "last_step_at")}

    def _pos(self, child_id: int) -> int | None:
        k = int(np.searchsorted(self.ids, child_id))
        return k if k < len(self.ids) and self.ids[k] == child_id else None

    # -- charts ---------------------------------------------------------------------------------
    def curve(self) -> dict[str, Any]:
        """Best score over evaluations (exact: the improvement points), the scores themselves
        (min and max per bucket), and the best over wall time (per finished step)."""
        self.refresh()
        with self.lock:
            ran = np.isin(self.cls, EVALUATED)
            scores = np.where(self.cls[ran] == 0, self.score[ran], np.nan)
            n = len(scores)
            sign = self._better_sign()
            signed = np.where(np.isnan(scores), -np.inf, sign * scores)
            best = np.maximum.accumulate(signed) if n else signed
            change = np.nonzero(np.diff(best, prepend=-np.inf) != 0)[0]
            change = change[np.isfinite(best[change])]
            if n and len(change) and change[-1] != n - 1:
                change = np.append(change, n - 1)
            bx = (change + 1).tolist()
            by = (sign * best[change]).tolist()
            sx, slo, shi = _minmax_buckets(scores)
            steps = self.db.execute("SELECT finished_at, best_score FROM steps WHERE best_score IS NOT NULL"
                                    " ORDER BY step").fetchall()
        t0 = float(np.nanmin(self.created)) if np.isfinite(self.created).any() else (steps[0][0] if steps else 0)
        tx, ty = [], []
        for t, b in steps:
            if not ty or b != ty[-1] or t == steps[-1][0]:
                tx.append(round((t or t0) - t0, 3))
                ty.append(b)
        return {"best": {"x": bx, "y": by}, "scores": {"x": sx, "lo": slo, "hi": shi},
                "time": {"x": tx, "y": ty}, "target": self.meta.get("target"), "evaluations": n}

    def steps(self) -> dict[str, Any]:
        """Children per class per step, children/s, and every numeric training metric per step,
        averaged over buckets of steps when there are more than MAX_POINTS / 5 steps."""
        self.refresh()
        with self.lock:
            rows = self.db.execute("SELECT step, children, seconds, train_metrics FROM steps WHERE step > 0"
                                   " ORDER BY step").fetchall()
            mask = (self.step > 0) & (self.cls >= 0)
            st, cl = self.step[mask], self.cls[mask].astype(np.int64)
        last = int(max(st.max() if len(st) else 0, rows[-1][0] if rows else 0))
        width = max(1, math.ceil(last / (MAX_POINTS // 5)))
        nb = max(1, math.ceil(last / width))  # bucket b holds steps 1 + b*width .. (b+1)*width
        counts = np.bincount(((st - 1) // width) * len(CLASSES) + cl, minlength=nb * len(CLASSES)).reshape(nb, -1)
        per = np.bincount(np.arange(last) // width, minlength=nb).clip(min=1)
        x = (1 + np.arange(nb) * width).tolist()
        classes = {c: (counts[:, i] / per).round(3).tolist() for i, c in enumerate(CLASSES)}
        rate_x, rate_y, metrics = [], [], {}
        for k, (step, children, seconds, tm) in enumerate(rows):
            if seconds:
                rate_x.append(step)
                rate_y.append(round((children or 0) / seconds, 3))
            for key, v in (_loads(tm) or {}).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                    metrics.setdefault(key, ([], []))
                    metrics[key][0].append(step)
                    metrics[key][1].append(float(v))
        return {"width": width, "x": x, "classes": classes, "rate": _bucket_mean(rate_x, rate_y),
                "train": {k: _bucket_mean(*metrics[k]) for k in sorted(metrics, key=_metric_order)}}

    def eval_times(self, bins: int = 40) -> dict[str, Any]:
        self.refresh()
        with self.lock:
            w = self.wall[np.isin(self.cls, EVALUATED) & np.isfinite(self.wall)]
        if not len(w):
            return {"edges": [], "counts": [], "n": 0}
        top = float(np.quantile(w, 0.99)) or float(w.max()) or 1.0
        counts, edges = np.histogram(np.clip(w, 0, top), bins=bins, range=(0, top))
        return {"edges": edges.round(6).tolist(), "counts": counts.tolist(), "n": int(len(w)),
                "median": float(np.median(w)), "p99": top, "max": float(w.max())}

    # -- programs -------------------------------------------------------------------------------
    def programs(self, page: int, sort: str = "id", cls: str | None = None) -> dict[str, Any]:
        self.refresh()
        with self.lock:
            sel = np.arange(len(self.ids))
            if cls in CLASSES:
                sel = sel[self.cls[sel] == CLASSES.index(cls)]
            if sort == "score":
                key = np.where(np.isnan(self.score[sel]), np.inf, -self._better_sign() * self.score[sel])
                sel = sel[np.argsort(key, kind="stable")]
            total = len(sel)
            page = max(0, min(page, max(0, (total - 1) // PAGE)))
            rows = [self._row(int(k)) for k in sel[page * PAGE:(page + 1) * PAGE]]
        return {"rows": rows, "page": page, "pages": max(1, math.ceil(total / PAGE)), "total": total}

    def _row(self, k: int) -> dict[str, Any]:
        c = int(self.cls[k])
        return {"id": int(self.ids[k]), "step": int(self.step[k]),
                "parent": None if self.parent[k] < 0 else int(self.parent[k]),
                "class": CLASSES[c] if c >= 0 else "pending",
                "score": None if math.isnan(self.score[k]) else float(self.score[k]),
                "wall_time": None if math.isnan(self.wall[k]) else float(self.wall[k])}

    def tree(self, node: int | None, limit: int = 200) -> dict[str, Any] | None:
        """A node's ancestry up to the seed and its children (best first), for the lineage page."""
        self.refresh()
        with self.lock:
            if node is None:
                node = self.summary()["best_id"] or (int(self.ids[0]) if len(self.ids) else None)
            k = self._pos(node) if node is not None else None
            if k is None:
                return None
            chain, seen = [], set()
            while k is not None and k not in seen and len(chain) < 10_000:
                seen.add(k)
                chain.append(self._row(k))
                k = self._pos(int(self.parent[k])) if self.parent[k] >= 0 else None
            kids = np.nonzero(self.parent == node)[0]
            key = np.where(np.isnan(self.score[kids]), np.inf, -self._better_sign() * self.score[kids])
            kids = kids[np.argsort(key, kind="stable")]
            counts = np.bincount(self.parent[self.parent >= 0].clip(0, None))  # children of each id
            children = []
            for j in kids[:limit]:
                row = self._row(int(j))
                row["children"] = int(counts[row["id"]]) if row["id"] < len(counts) else 0
                children.append(row)
            for row in chain:
                row["children"] = int(counts[row["id"]]) if row["id"] < len(counts) else 0
        return {"node": node, "ancestors": chain[::-1], "children": children, "more": max(0, len(kids) - limit)}

    def forest(self, top: int = 60) -> dict[str, Any]:
        """The tree drawn on the lineage page: the ``top`` best programs and all their ancestors."""
        self.refresh()
        with self.lock:
            valid = np.nonzero(self.cls == 0)[0]
            order = np.argsort(-self._better_sign() * self.score[valid], kind="stable")
            keep: set[int] = set()
            for k in valid[order[:top]].tolist():
                while k is not None and k not in keep:
                    keep.add(k)
                    k = self._pos(int(self.parent[k])) if self.parent[k] >= 0 else None
            nodes = [self._row(k) for k in sorted(keep)]
        return {"nodes": nodes, "top": top, "direction": self.direction}

    def program(self, child_id: int) -> dict[str, Any] | None:
        with self.lock:
            cur = self.db.execute("SELECT * FROM children WHERE id = ?", (child_id,))
            row = cur.fetchone()
            if row is None:
                return None
            out = dict(zip([d[0] for d in cur.description], row))
            out.pop("rl_tokens", None)
            out["metrics"] = _loads(out.get("metrics")) or {}
            parent_code = None
            if out.get("parent_id") is not None:
                r = self.db.execute("SELECT code FROM children WHERE id = ?", (out["parent_id"],)).fetchone()
                parent_code = r[0] if r else None
            out["has_object"] = self.db.execute("SELECT 1 FROM objects WHERE child_id = ?",
                                                (child_id,)).fetchone() is not None
            out["n_children"] = int(np.sum(self.parent == child_id))
        out["diff"] = _diff(parent_code, out.get("code"), out.get("parent_id"), child_id)
        return out

    def object(self, child_id: int) -> Any:
        with self.lock:
            row = self.db.execute("SELECT object FROM objects WHERE child_id = ?", (child_id,)).fetchone()
        return _loads(row[0]) if row else None

    # -- tables other stages add (idea memory, EvoEnv pool, ...) --------------------------------
    def extra_tables(self) -> dict[str, int]:
        with self.lock:
            names = [r[0] for r in self.db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
            return {n: self.db.execute(f"SELECT COUNT(*) FROM {_quote(n)}").fetchone()[0]
                    for n in names if n not in CORE_TABLES}

    def table(self, name: str, page: int) -> dict[str, Any] | None:
        if name not in self.extra_tables():  # only names the store itself lists reach SQL
            return None
        with self.lock:
            total = self.db.execute(f"SELECT COUNT(*) FROM {_quote(name)}").fetchone()[0]
            page = max(0, min(page, max(0, (total - 1) // PAGE)))
            cur = self.db.execute(f"SELECT * FROM {_quote(name)} LIMIT ? OFFSET ?", (PAGE, page * PAGE))
            rows = cur.fetchall()
            cols = [d[0] for d in cur.description]
        return {"name": name, "columns": cols, "rows": rows, "page": page,
                "pages": max(1, math.ceil(total / PAGE)), "total": total}

    def ideas(self) -> list[dict[str, Any]] | None:
        """The idea memory (PACEvolve): each idea with the programs that tested it, when the run has one."""
        tables = self.extra_tables()
        if "memory_ideas" not in tables:
            return None
        with self.lock:
            cur = self.db.execute("SELECT * FROM memory_ideas ORDER BY id")
            cols = [d[0] for d in cur.description]
            ideas = {row[0]: dict(zip(cols, row), tests=[]) for row in cur.fetchall()}
            if "memory_hypotheses" in tables:
                for child, idea, step, cls, score, finding in self.db.execute(
                        "SELECT child_id, idea_id, step, child_class, score, finding FROM memory_hypotheses"
                        " ORDER BY child_id"):
                    if idea in ideas and len(ideas[idea]["tests"]) < 100:
                        ideas[idea]["tests"].append({"id": child, "step": step, "class": cls, "score": score,
                                                     "finding": finding})
        return list(ideas.values())

    def close(self) -> None:
        self.db.close()


FIRST_METRICS = ("reward_mean", "reward_max", "kl_ref_per_token", "beta_mean", "loss")


def _metric_order(key: str) -> tuple[int, str]:
    """The figures RL is read by first (reward, KL, beta, loss), then the rest by name."""
    return (FIRST_METRICS.index(key) if key in FIRST_METRICS else len(FIRST_METRICS), key)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _diff(before: str | None, after: str | None, parent: int | None, child: int) -> str:
    if before is None or after is None:
        return ""
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                        f"program {parent}", f"program {child}"))


def _minmax_buckets(values: np.ndarray) -> tuple[list, list, list]:
    """(x, low, high): every finite value when few, else the min and max of MAX_POINTS buckets."""
    x = np.nonzero(np.isfinite(values))[0]
    v = values[x]
    if len(v) <= MAX_POINTS:
        return (x + 1).tolist(), v.tolist(), v.tolist()
    edges = np.linspace(0, len(v), MAX_POINTS + 1).astype(np.int64)[:-1]
    lo, hi = np.minimum.reduceat(v, edges), np.maximum.reduceat(v, edges)
    return (x[edges] + 1).tolist(), lo.tolist(), hi.tolist()


def _bucket_mean(xs: list, ys: list, points: int = MAX_POINTS // 2) -> dict[str, list]:
    if len(xs) <= points:
        return {"x": xs, "y": ys}
    edges = np.linspace(0, len(xs), points + 1).astype(np.int64)[:-1]
    sums = np.add.reduceat(np.asarray(ys, dtype=np.float64), edges)
    sizes = np.diff(np.append(edges, len(xs)))
    return {"x": np.asarray(xs)[edges].tolist(), "y": (sums / sizes).round(6).tolist()}
