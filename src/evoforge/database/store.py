"""The run store: one SQLite file (WAL) holding every child, every step and the stages' state.

Crash safety: responses are written as soon as the backend returns them, each evaluation as
soon as it finishes, and a step's end (its figures and the rng state) in one transaction. A run
killed at any instant resumes from the last finished step, reusing the stored responses and
evaluations of the unfinished one, so no evaluated program is lost or duplicated.

The stages' state (the selector's is O(population): 3.8 MB of JSON for map-elites at 100 000
programs) is not written at every step: one snapshot row is replaced now and then, and a resume
replays the finished steps after it from what the stages stored (``Engine._resume``). Stages add
their own tables (``ensure_tables``); ``SCHEMA_VERSION`` is recorded in ``meta``, and
``readonly=True`` opens a live run for reading.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from evoforge.database import sanitize
from evoforge.database.base import Program
from evoforge.database.sanitize import DEFAULT_LIMITS, StoreLimits

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS children (
    id INTEGER PRIMARY KEY,
    step INTEGER NOT NULL, pick INTEGER NOT NULL, resp INTEGER NOT NULL,
    parent_id INTEGER, partner_id INTEGER,
    response TEXT, response_error TEXT, code TEXT, canon_hash TEXT,
    child_class TEXT,            -- NULL until the child is classified
    status TEXT, score REAL, fitness REAL, reward REAL,
    metrics TEXT, feedback TEXT, wall_time REAL,
    prompt_tokens INTEGER, completion_tokens INTEGER,
    rl_tokens TEXT,              -- JSON token ids / log-probs, kept only while training needs them
    created_at REAL,
    UNIQUE (step, pick, resp)
);
CREATE INDEX IF NOT EXISTS children_class ON children (child_class);
CREATE TABLE IF NOT EXISTS steps (
    step INTEGER PRIMARY KEY,
    rng_state TEXT NOT NULL,     -- after the step: replays check they arrive at the same state
    best_id INTEGER, best_score REAL, evaluated INTEGER, children INTEGER,
    train_metrics TEXT, seconds REAL, finished_at REAL
);
CREATE TABLE IF NOT EXISTS snapshot (  -- one row: every stage's state after ``step`` (JSON)
    id INTEGER PRIMARY KEY CHECK (id = 0), step INTEGER NOT NULL, selector_state TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS objects (child_id INTEGER PRIMARY KEY, object TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (child_id INTEGER PRIMARY KEY, n INTEGER NOT NULL);  -- evaluations started
"""

EVALUATED_CLASSES = ("evaluated", "invalid", "no_solution")  # ran in the sandbox
# 1: evoforge <= 0.2 (snapshot = the selector's state); 2: snapshot = every stage's state, steps.info
SCHEMA_VERSION = 2


@dataclass
class ChildRow:
    """One stored child (a response to a pick), as the engine reads it back."""

    id: int
    step: int
    pick: int
    resp: int
    parent_id: int | None
    response: str | None
    code: str | None
    child_class: str | None
    score: float | None
    reward: float | None
    canon_hash: str | None


class StoreError(ValueError):
    """The file is not a run store evoforge can open (one readable line for the CLI)."""


class RunStore:
    """``readonly=True`` opens a live or finished run for reading only (a dashboard, ``show``):
    nothing is created or upgraded, and writes fail."""

    def __init__(self, path: str | Path, limits: StoreLimits = DEFAULT_LIMITS, *, readonly: bool = False):
        self.path = Path(path)
        self.limits = limits  # caps on what one child may put in (see database/sanitize.py)
        self.readonly = readonly
        if readonly and not self.path.is_file():
            raise StoreError(f"{self.path} is not an evoforge run store (no such file)")
        uri = f"{self.path.resolve().as_uri()}?mode=ro" if readonly else str(self.path)
        if readonly and not os.access(self.path.parent, os.W_OK):  # an archived run on a read-only mount:
            uri += "&immutable=1"  # WAL would need a -shm file it cannot create; nobody writes there anyway
        self.db = sqlite3.connect(uri, uri=readonly, isolation_level=None, check_same_thread=False)
        try:
            version = self._schema_version()
            if version > SCHEMA_VERSION:
                raise StoreError(f"{self.path} was written by a newer evoforge (run store schema {version}; "
                                 f"this one reads up to {SCHEMA_VERSION}): upgrade evoforge to open it")
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")  # durable against process kills (not power loss)
                self.db.executescript(SCHEMA)
                self._upgrade()
                if version < SCHEMA_VERSION:
                    self.set_meta("schema_version", SCHEMA_VERSION)
            self.schema_version = max(version, 1) if readonly else SCHEMA_VERSION
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise StoreError(f"{self.path} is not an evoforge run store ({exc})") from None
        except StoreError:
            self.db.close()
            raise

    def _schema_version(self) -> int:
        """0: a new (empty) file; 1: a store from before the version was recorded."""
        if not self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
            return 0
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(json.loads(row[0])) if row else 1

    def ensure_tables(self, ddl: str) -> None:
        """Create a stage's own tables (``CREATE TABLE IF NOT EXISTS ...``); a no-op when read-only."""
        if ddl.strip() and not self.readonly:
            self.db.executescript(ddl)

    def transaction(self) -> "_Transaction":
        """``with store.transaction():`` several writes land together or not at all."""
        return _Transaction(self.db)

    def _upgrade(self) -> None:
        """Run stores of evoforge <= 0.1 kept a selector state in every steps row: keep the last."""
        cols = [r[1] for r in self.db.execute("PRAGMA table_info(steps)")]
        if "info" not in cols:  # schema 2: the step's shape and pipeline facts (JSON)
            self.db.execute("ALTER TABLE steps ADD COLUMN info TEXT")
        if "selector_state" not in cols:
            return
        with self._tx():
            self.db.execute(
                "INSERT OR REPLACE INTO snapshot (id, step, selector_state) SELECT 0, step, selector_state"
                " FROM steps ORDER BY step DESC LIMIT 1"
            )
            self.db.execute("ALTER TABLE steps DROP COLUMN selector_state")

    def close(self) -> None:
        self.db.close()

    # -- meta -------------------------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, sanitize.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        if self.readonly and not self._has_meta_table():
            return default  # an empty file (a run killed before its first write), read without creating tables
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def _has_meta_table(self) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is not None

    # -- children ---------------------------------------------------------------------------
    def add_responses(self, step: int, rows: Iterable[dict[str, Any]]) -> list[int]:
        """Insert the pending children of a step in one transaction; returns their ids in order."""
        ids = []
        now = time.time()
        lim = self.limits
        with self._tx():
            for r in rows:
                cur = self.db.execute(
                    "INSERT INTO children (step, pick, resp, parent_id, partner_id, response, response_error,"
                    " prompt_tokens, completion_tokens, rl_tokens, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        step, r["pick"], r["resp"], r.get("parent_id"), r.get("partner_id"),
                        sanitize.text(r.get("response"), lim.response_chars),
                        sanitize.text(r.get("response_error") or None, lim.error_chars),
                        _int(r.get("prompt_tokens", 0)), _int(r.get("completion_tokens", 0)),
                        sanitize.dumps(r["rl_tokens"]) if r.get("rl_tokens") is not None else None, now,
                    ),
                )
                ids.append(int(cur.lastrowid))
        return ids

    def classify(self, child_id: int, **fields: Any) -> None:
        """Record a child's outcome (code, class, score, ...) as soon as it is known."""
        fields = self._bounded(fields)
        cols = ", ".join(f"{k} = ?" for k in fields)
        self.db.execute(f"UPDATE children SET {cols} WHERE id = ?", (*fields.values(), child_id))

    def _bounded(self, fields: dict[str, Any]) -> dict[str, Any]:
        """What a child's outcome may put in a row: storable text, plain numbers, capped sizes."""
        lim, out = self.limits, {}
        for key, value in fields.items():
            if key == "metrics":
                value = sanitize.dumps(value, lim.metrics_bytes, sanitize.METRIC_INT_BITS, exact=False)
            elif key in ("score", "fitness", "reward", "wall_time"):
                value = sanitize.number(value)
            elif key == "feedback":
                value = sanitize.text(value, lim.feedback_chars)
            elif key == "code":
                value = sanitize.text(value, lim.response_chars)
            elif isinstance(value, str) or (value is not None and not isinstance(value, (int, float))):
                value = sanitize.text(value, lim.error_chars)
            out[key] = value
        return out

    def started_evaluations(self, child_ids: list[int]) -> dict[int, int]:
        """How many evaluations of each child were started (see begin_evaluations)."""
        got: dict[int, int] = {}
        for i in range(0, len(child_ids), 500):  # SQLite's bound-parameter limit
            part = child_ids[i : i + 500]
            q = f"SELECT child_id, n FROM attempts WHERE child_id IN ({','.join('?' * len(part))})"
            got.update({int(c): int(n) for c, n in self.db.execute(q, part)})
        return {c: got.get(c, 0) for c in child_ids}

    def begin_evaluations(self, child_ids: list[int]) -> dict[int, int]:
        """Count one more started evaluation for each child; returns how many had started before.

        A child whose evaluation took the host down (or was cut by kills) N times is then
        classified by the engine instead of being retried on every resume.
        """
        if not child_ids:
            return {}
        before: dict[int, int] = {}
        with self._tx():
            for cid in child_ids:
                row = self.db.execute("SELECT n FROM attempts WHERE child_id = ?", (cid,)).fetchone()
                before[cid] = int(row[0]) if row else 0
                self.db.execute("INSERT OR REPLACE INTO attempts VALUES (?, ?)", (cid, before[cid] + 1))
        return before

    def classify_many(self, updates: list[tuple[int, dict[str, Any]]]) -> None:
        with self._tx():
            for child_id, fields in updates:
                self.classify(child_id, **fields)

    def step_children(self, step: int) -> list[ChildRow]:
        rows = self.db.execute(
            "SELECT id, step, pick, resp, parent_id, response, code, child_class, score, reward, canon_hash"
            " FROM children WHERE step = ? ORDER BY pick, resp",
            (step,),
        ).fetchall()
        return [ChildRow(*r) for r in rows]

    def rl_tokens(self, step: int) -> dict[int, Any]:
        rows = self.db.execute(
            "SELECT id, rl_tokens FROM children WHERE step = ? AND rl_tokens IS NOT NULL", (step,)
        ).fetchall()
        return {i: json.loads(t) for i, t in rows}

    def drop_rl_tokens(self, step: int) -> None:
        self.db.execute("UPDATE children SET rl_tokens = NULL WHERE step = ?", (step,))

    def discard_after(self, step: int) -> None:
        """Remove children of steps after ``step`` (a pending step whose responses are incomplete)."""
        self.db.execute("DELETE FROM children WHERE step > ?", (step,))

    _PROGRAM_COLS = "id, code, score, fitness, parent_id, step, metrics, canon_hash, feedback"

    def programs(self) -> Iterator[Program]:
        """Every valid (evaluated) program, in id order."""
        cur = self.db.execute(
            f"SELECT {self._PROGRAM_COLS} FROM children WHERE child_class = 'evaluated' ORDER BY id"
        )
        for row in cur:
            yield _program(row)

    def program(self, child_id: int) -> Program | None:
        row = self.db.execute(
            f"SELECT {self._PROGRAM_COLS} FROM children WHERE id = ? AND child_class = 'evaluated'", (child_id,)
        ).fetchone()
        return _program(row) if row else None

    def evaluated_hashes(self) -> Iterator[str]:
        q = "SELECT canon_hash FROM children WHERE canon_hash IS NOT NULL AND child_class IN (?,?,?)"
        for (h,) in self.db.execute(q, EVALUATED_CLASSES):
            yield h

    def rehash(self, hash_fn: Callable[[str], str]) -> None:
        """Recompute every stored canonical hash (the hashing scheme changed between versions)."""
        rows = self.db.execute("SELECT id, code FROM children WHERE code IS NOT NULL").fetchall()
        with self._tx():
            for child_id, code in rows:
                self.db.execute("UPDATE children SET canon_hash = ? WHERE id = ?", (hash_fn(code), child_id))

    def class_counts(self, children_up_to_step: int | None = None) -> dict[str, int]:
        """Rows per class: all of them, or only the children (not the seed) of steps 1..N."""
        q = "SELECT child_class, COUNT(*) FROM children WHERE child_class IS NOT NULL"
        if children_up_to_step is not None:
            q += f" AND step BETWEEN 1 AND {int(children_up_to_step)}"
        return {c: n for c, n in self.db.execute(q + " GROUP BY child_class")}

    def count_evaluations(self) -> int:
        q = "SELECT COUNT(*) FROM children WHERE child_class IN (?,?,?)"
        return int(self.db.execute(q, EVALUATED_CLASSES).fetchone()[0])

    def count_children(self, up_to_step: int | None = None) -> int:
        """Children of steps 1..up_to_step (the finished ones), or of all steps; the seed is not a child."""
        q = "SELECT COUNT(*) FROM children WHERE step > 0"
        if up_to_step is not None:
            q += f" AND step <= {int(up_to_step)}"
        return int(self.db.execute(q).fetchone()[0])

    def score_history(self) -> list[tuple[int, float | None, str]]:
        """(id, score, class) of every sandbox evaluation in order: the search's trace."""
        q = "SELECT id, score, child_class FROM children WHERE child_class IN (?,?,?) ORDER BY id"
        return [(i, s, c) for i, s, c in self.db.execute(q, EVALUATED_CLASSES)]

    def child_detail(self, child_id: int) -> dict[str, Any] | None:
        cur = self.db.execute("SELECT * FROM children WHERE id = ?", (child_id,))
        row = cur.fetchone()
        if row is None:
            return None
        out = dict(zip([d[0] for d in cur.description], row))
        out["metrics"] = json.loads(out["metrics"] or "{}")
        out.pop("rl_tokens", None)
        return out

    # -- objects of new bests ---------------------------------------------------------------
    def put_object(self, child_id: int, obj: Any) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO objects VALUES (?, ?)", (child_id, sanitize.dumps(obj, self.limits.object_bytes))
        )

    def get_object(self, child_id: int) -> Any:
        row = self.db.execute("SELECT object FROM objects WHERE child_id = ?", (child_id,)).fetchone()
        return json.loads(row[0]) if row else None

    # -- steps ------------------------------------------------------------------------------
    def finish_step(self, step: int, rng_state: dict, stage_states: dict | None = None, **fields: Any) -> None:
        """The step's commit point: after this, resume starts at ``step + 1``. With
        ``stage_states`` ({stage name: state_dict}) the snapshot moves to this step, in the same
        transaction."""
        for key in ("train_metrics", "info"):
            if key in fields:
                fields[key] = sanitize.dumps(fields[key])
        cols = ["step", "rng_state", *fields, "finished_at"]
        vals = [step, json.dumps(rng_state), *fields.values(), time.time()]
        with self._tx():
            self.db.execute(
                f"INSERT OR REPLACE INTO steps ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", vals
            )
            if stage_states is not None:
                self.save_snapshot(step, stage_states)

    def save_snapshot(self, step: int, stage_states: dict) -> None:
        payload = sanitize.dumps({"stages": stage_states})
        self.db.execute("INSERT OR REPLACE INTO snapshot VALUES (0, ?, ?)", (step, payload))

    def last_step(self) -> dict[str, Any] | None:
        return self._step_row("ORDER BY step DESC LIMIT 1")

    def step_row(self, step: int) -> dict[str, Any] | None:
        return self._step_row("WHERE step = ?", step)

    def _step_row(self, where: str, *args: Any) -> dict[str, Any] | None:
        cur = self.db.execute(f"SELECT * FROM steps {where}", args)
        row = cur.fetchone()
        if row is None:
            return None
        out = dict(zip([d[0] for d in cur.description], row))
        out["rng_state"] = json.loads(out["rng_state"])
        out["info"] = json.loads(out.get("info") or "{}")
        return out

    def snapshot(self) -> tuple[int, dict[str, Any]] | None:
        """(step, {stage name: state}) of the latest snapshot. A schema-1 snapshot (the selector's
        state alone) reads as the select stage's state."""
        row = self.db.execute("SELECT step, selector_state FROM snapshot WHERE id = 0").fetchone()
        if row is None:
            return None
        step, state = int(row[0]), json.loads(row[1])
        if "stages" in state:
            return step, state["stages"]
        legacy = self.step_row(step)  # schema 1: the rng state lived in the steps row only
        return step, {"select": {"selector": state, "rng": legacy["rng_state"] if legacy else None}}

    def recent_evaluations(self, last: int) -> list[int]:
        """The run's evaluation count after each of the last ``last`` finished steps, oldest first."""
        rows = self.db.execute("SELECT evaluated FROM steps ORDER BY step DESC LIMIT ?", (int(last),)).fetchall()
        return [int(r[0] or 0) for r in reversed(rows)]

    def steps(self) -> list[dict[str, Any]]:
        cur = self.db.execute(
            "SELECT step, best_score, evaluated, children, seconds, train_metrics FROM steps ORDER BY step"
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur]

    def _tx(self) -> "_Transaction":
        return _Transaction(self.db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def _program(row: tuple) -> Program:
    i, code, score, fit, parent, step, metrics, h, fb = row
    return Program(i, code, score, fit, parent, step, json.loads(metrics or "{}"), h or "", fb or "")


def _int(value: Any) -> int:
    try:
        return max(0, min(int(value or 0), 1 << 62))
    except (TypeError, ValueError, OverflowError):
        return 0


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, np.generic):
            return o.item()
    except ImportError:  # pragma: no cover
        pass
    return str(o)
