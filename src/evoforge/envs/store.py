"""The synthesis run's store: its own tables in the run directory's ``run.db`` (SQLite, WAL).

Every model output is written (``envs_calls``) before anything uses it, every admission, pool
change and solver score as soon as it is known, and a step's end in ``envs_steps`` (the resume
point). A killed run resumes from the last finished step and reuses what the unfinished one
stored, so no admitted environment is lost and no stored model call is made again.
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator

from evoforge.llm.base import Response

TABLES = """
CREATE TABLE IF NOT EXISTS envs_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS envs_calls (
    step INTEGER, role TEXT, grp INTEGER, idx INTEGER, prompt TEXT, text TEXT, error TEXT, tokens TEXT,
    PRIMARY KEY (step, role, grp, idx));
CREATE TABLE IF NOT EXISTS envs_candidates (
    step INTEGER, grp INTEGER, idx INTEGER, code TEXT, layer INTEGER, reason TEXT, name TEXT,
    reviews TEXT, pass_rate REAL, sim_prompt REAL, sim_code REAL, gamma REAL, reward REAL,
    admitted INTEGER, verdict TEXT, env_id INTEGER, view TEXT, PRIMARY KEY (step, grp, idx));
CREATE TABLE IF NOT EXISTS envs_pool (
    env_id INTEGER PRIMARY KEY, data TEXT NOT NULL, step_added INTEGER, retired_step INTEGER);
CREATE TABLE IF NOT EXISTS envs_solver (
    step INTEGER, grp INTEGER, idx INTEGER, env_id INTEGER, seed INTEGER, difficulty INTEGER,
    reference TEXT, score REAL, PRIMARY KEY (step, grp, idx));
CREATE TABLE IF NOT EXISTS envs_heldout (
    step INTEGER, env TEXT, seed INTEGER, difficulty INTEGER, score REAL, PRIMARY KEY (step, env, seed, difficulty));
CREATE TABLE IF NOT EXISTS envs_steps (step INTEGER PRIMARY KEY, metrics TEXT, finished_at REAL);
"""


class EnvStore:
    def __init__(self, path: str | Path, readonly: bool = False) -> None:
        self.path = Path(path)
        uri = f"file:{self.path}?mode=ro" if readonly else str(self.path)
        try:
            self.db = sqlite3.connect(uri, uri=readonly, isolation_level=None, check_same_thread=False)
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(TABLES)
            self.db.execute("SELECT count(*) FROM envs_steps").fetchone()
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{self.path} is not an evoforge envs run store ({exc})") from None

    def close(self) -> None:
        self.db.close()

    def tx(self) -> "_Tx":
        return _Tx(self.db)

    # -- meta / steps -----------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO envs_meta VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.db.execute("SELECT value FROM envs_meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def last_step(self) -> int:
        row = self.db.execute("SELECT max(step) FROM envs_steps").fetchone()
        return int(row[0] or 0)

    def finish_step(self, step: int, metrics: dict[str, Any]) -> None:
        self.db.execute("INSERT OR REPLACE INTO envs_steps VALUES (?, ?, ?)", (step, json.dumps(metrics), time.time()))

    def steps(self) -> list[dict[str, Any]]:
        return [dict(json.loads(m), step=s) for s, m in self.db.execute("SELECT step, metrics FROM envs_steps ORDER BY step")]

    # -- model calls ------------------------------------------------------------------
    def put_calls(self, step: int, role: str, prompts: list[str], responses: list[list[Response]]) -> None:
        with self.tx():
            for g, (prompt, row) in enumerate(zip(prompts, responses)):
                for j, r in enumerate(row):
                    tokens = None if r.token_ids is None else json.dumps(
                        {"token_ids": r.token_ids, "logprobs": r.logprobs, "prompt_token_ids": r.prompt_token_ids})
                    self.db.execute("INSERT OR REPLACE INTO envs_calls VALUES (?,?,?,?,?,?,?,?)",
                                    (step, role, g, j, prompt if j == 0 else None, r.text, r.error, tokens))

    def get_calls(self, step: int, role: str) -> list[list[Response]] | None:
        rows = self.db.execute("SELECT grp, idx, text, error, tokens FROM envs_calls WHERE step = ? AND role = ?"
                               " ORDER BY grp, idx", (step, role)).fetchall()
        if not rows:
            return None
        out: list[list[Response]] = []
        for g, _, text, error, tokens in rows:
            while len(out) <= g:
                out.append([])
            t = json.loads(tokens) if tokens else {}
            out[g].append(Response(text=text or "", error=error or "", token_ids=t.get("token_ids"),
                                   logprobs=t.get("logprobs"), prompt_token_ids=t.get("prompt_token_ids")))
        return out

    def count_calls(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM envs_calls").fetchone()[0])

    # -- candidates / pool / solver / held-out ----------------------------------------
    def put_candidate(self, row: dict[str, Any]) -> None:
        cols = ", ".join(row)
        self.db.execute(f"INSERT OR REPLACE INTO envs_candidates ({cols}) VALUES ({', '.join('?' * len(row))})",
                        [json.dumps(v) if isinstance(v, (list, dict)) else v for v in row.values()])

    def candidates(self, step: int | None = None) -> list[dict[str, Any]]:
        where, args = ("WHERE step = ?", (step,)) if step is not None else ("", ())
        cur = self.db.execute(f"SELECT * FROM envs_candidates {where} ORDER BY step, grp, idx", args)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def put_pool(self, env: dict[str, Any]) -> None:
        self.db.execute("INSERT OR REPLACE INTO envs_pool VALUES (?, ?, ?, ?)",
                        (env["env_id"], json.dumps(env), env["step_added"], env["retired_step"]))

    def pool(self) -> list[dict[str, Any]]:
        return [json.loads(d) for (d,) in self.db.execute("SELECT data FROM envs_pool ORDER BY env_id")]

    def put_solver(self, rows: list[tuple]) -> None:
        with self.tx():
            self.db.executemany("INSERT OR REPLACE INTO envs_solver VALUES (?,?,?,?,?,?,?,?)", rows)

    def solver(self, step: int | None = None) -> list[tuple]:
        where, args = ("WHERE step = ?", (step,)) if step is not None else ("", ())
        return self.db.execute(f"SELECT * FROM envs_solver {where} ORDER BY step, grp, idx", args).fetchall()

    def put_heldout(self, step: int, rows: list[tuple[str, int, int, float]]) -> None:
        with self.tx():
            self.db.executemany("INSERT OR REPLACE INTO envs_heldout VALUES (?,?,?,?,?)", [(step, *r) for r in rows])

    def heldout(self) -> dict[int, list[tuple[str, int, int, float]]]:
        out: dict[int, list[tuple[str, int, int, float]]] = {}
        for step, env, seed, d, score in self.db.execute("SELECT * FROM envs_heldout ORDER BY step, env, seed"):
            out.setdefault(step, []).append((env, seed, d, score))
        return out

    def iter_table(self, table: str) -> Iterator[tuple]:
        yield from self.db.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3")


class _Tx:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")
