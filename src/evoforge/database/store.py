"""The run store: one SQLite file (WAL) holding every child, every step and the selector state.

Crash safety: responses are written as soon as the backend returns them, each evaluation as
soon as it finishes, and a step's end (its figures and the rng state) in one transaction. A run
killed at any instant resumes from the last finished step, reusing the stored responses and
evaluations of the unfinished one, so no evaluated program is lost or duplicated.

The selector's state is O(population) (3.8 MB of JSON for map-elites at 100 000 programs), so
it is not written at every step: one snapshot row is replaced now and then, and a resume
replays the finished steps after it from the stored children (see ``engine/resume.py``).
"""
from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from evoforge.database.base import Program

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
CREATE TABLE IF NOT EXISTS snapshot (  -- one row: the selector as it was after ``step``
    id INTEGER PRIMARY KEY CHECK (id = 0), step INTEGER NOT NULL, selector_state TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS objects (child_id INTEGER PRIMARY KEY, object TEXT NOT NULL);
"""

EVALUATED_CLASSES = ("evaluated", "invalid", "no_solution")  # ran in the sandbox


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
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # durable against process kills (not power loss)
            self.db.executescript(SCHEMA)
            self._upgrade()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise StoreError(f"{self.path} is not an evoforge run store ({exc})") from None

    def _upgrade(self) -> None:
        """Run stores of evoforge <= 0.1 kept a selector state in every steps row: keep the last."""
        cols = [r[1] for r in self.db.execute("PRAGMA table_info(steps)")]
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
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    # -- children ---------------------------------------------------------------------------
    def add_responses(self, step: int, rows: Iterable[dict[str, Any]]) -> list[int]:
        """Insert the pending children of a step in one transaction; returns their ids in order."""
        ids = []
        now = time.time()
        with self._tx():
            for r in rows:
                cur = self.db.execute(
                    "INSERT INTO children (step, pick, resp, parent_id, partner_id, response, response_error,"
                    " prompt_tokens, completion_tokens, rl_tokens, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        step, r["pick"], r["resp"], r.get("parent_id"), r.get("partner_id"), r.get("response"),
                        r.get("response_error") or None, r.get("prompt_tokens", 0), r.get("completion_tokens", 0),
                        json.dumps(r["rl_tokens"]) if r.get("rl_tokens") is not None else None, now,
                    ),
                )
                ids.append(int(cur.lastrowid))
        return ids

    def classify(self, child_id: int, **fields: Any) -> None:
        """Record a child's outcome (code, class, score, ...) as soon as it is known."""
        if "metrics" in fields:
            fields["metrics"] = json.dumps(fields["metrics"], default=_json_default)
        cols = ", ".join(f"{k} = ?" for k in fields)
        self.db.execute(f"UPDATE children SET {cols} WHERE id = ?", (*fields.values(), child_id))

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
            "INSERT OR REPLACE INTO objects VALUES (?, ?)", (child_id, json.dumps(obj, default=_json_default))
        )

    def get_object(self, child_id: int) -> Any:
        row = self.db.execute("SELECT object FROM objects WHERE child_id = ?", (child_id,)).fetchone()
        return json.loads(row[0]) if row else None

    # -- steps ------------------------------------------------------------------------------
    def finish_step(self, step: int, rng_state: dict, selector_state: dict | None = None, **fields: Any) -> None:
        """The step's commit point: after this, resume starts at ``step + 1``. With a
        ``selector_state`` the snapshot moves to this step, in the same transaction."""
        if "train_metrics" in fields:
            fields["train_metrics"] = json.dumps(fields["train_metrics"])
        cols = ["step", "rng_state", *fields, "finished_at"]
        vals = [step, json.dumps(rng_state), *fields.values(), time.time()]
        with self._tx():
            self.db.execute(
                f"INSERT OR REPLACE INTO steps ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", vals
            )
            if selector_state is not None:
                self.save_snapshot(step, selector_state)

    def save_snapshot(self, step: int, selector_state: dict) -> None:
        self.db.execute("INSERT OR REPLACE INTO snapshot VALUES (0, ?, ?)", (step, json.dumps(selector_state)))

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
        return out

    def snapshot(self) -> tuple[int, dict[str, Any]] | None:
        """(step, selector state) of the latest snapshot."""
        row = self.db.execute("SELECT step, selector_state FROM snapshot WHERE id = 0").fetchone()
        return (int(row[0]), json.loads(row[1])) if row else None

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
