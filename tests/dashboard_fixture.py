"""A real small run for the dashboard tests, plus one hostile child and the idea memory's tables.

The run is a genuine ``evoforge`` evolution (circle packing, builtin operator, 40 evaluations,
about 2 s); the hostile child is then written the way the engine writes any child (RunStore's
add_responses / classify / finish_step), with markup and script in every text a page shows."""
from __future__ import annotations

import atexit
import json
import shutil
import socket
import sqlite3
import tempfile
from pathlib import Path

from evoforge.database.store import RunStore
from evoforge.engine import Engine, build_config

XSS = ('<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
       '</pre></div><svg onload="window.__pwned=3"></svg>"><iframe src="javascript:window.__pwned=4"></iframe>')
MEMORY_TABLES = """
CREATE TABLE IF NOT EXISTS memory_ideas (id INTEGER PRIMARY KEY, text TEXT, status TEXT, step INTEGER,
                                         tested INTEGER, best REAL, merged INTEGER, findings TEXT,
                                         prune_reason TEXT, pruned_step INTEGER);
CREATE TABLE IF NOT EXISTS memory_hypotheses (child_id INTEGER PRIMARY KEY, idea_id INTEGER, step INTEGER,
                                              child_class TEXT, score REAL, finding TEXT);
"""
HOSTILE_CODE = f'# {XSS}\ndef solve():\n    s = """{XSS}"""\n    return s\n'


def make_run(directory: Path, pool, budget: int = 40) -> dict:
    cfg = build_config(task="circle-packing-26", budget=budget, seed=0, batch_size=4, n=2)
    summary = Engine(cfg, directory, executor=pool).run()
    store = RunStore(directory / "run.db")
    try:
        last = store.last_step()
        step = last["step"] + 1
        [hid] = store.add_responses(step, [dict(pick=0, resp=0, parent_id=last["best_id"], response=XSS)])
        store.classify(hid, code=HOSTILE_CODE, canon_hash="hostile", child_class="evaluated", status="ok",
                       score=0.5, fitness=0.5, reward=0.5, wall_time=0.01, feedback=XSS,
                       metrics={"note": XSS, "artifacts": {"html": XSS}})
        store.finish_step(step, last["rng_state"], best_id=last["best_id"], best_score=last["best_score"],
                          evaluated=last["evaluated"] + 1, children=1, seconds=0.01, train_metrics={})
    finally:
        store.close()
    # what a --train run's steps carry (the learner's own keys), on every step of this real run
    with sqlite3.connect(directory / "run.db") as db:
        for (k,) in db.execute("SELECT step FROM steps WHERE step > 0").fetchall():
            metrics = {"reward_mean": 0.1 * k, "beta_mean": 2.0 / k, "kl_ref_per_token": 0.01 * k, "loss": 1.0 / k}
            db.execute("UPDATE steps SET train_metrics = ? WHERE step = ?", (json.dumps(metrics), k))
    # the tables the idea-memory stage adds (its DDL, engine/stages/memory.py): listed by name, drawn as a tree
    with sqlite3.connect(directory / "run.db") as db:
        db.executescript(MEMORY_TABLES)
        db.executemany("INSERT INTO memory_ideas VALUES (?,?,?,?,?,?,?,?,?,?)",
                       [(1, "use a hexagonal grid", "active", 1, 2, last["best_score"], 0, "[]", None, None),
                        (2, XSS, "pruned", 2, 1, 0.5, 0, json.dumps([XSS]), XSS, 3)])
        db.executemany("INSERT INTO memory_hypotheses VALUES (?,?,?,?,?,?)",
                       [(last["best_id"], 1, 1, "evaluated", last["best_score"], "a ring of 8 helps"),
                        (hid, 2, step, "evaluated", 0.5, XSS)])
    return {"summary": summary, "hostile_id": hid, "best_id": last["best_id"], "steps": step}


_MADE: dict = {}


def copy_of_run(directory: Path, pool) -> dict:
    """make_run once per test session, then a fresh copy for each module (the modules add steps)."""
    if not _MADE:
        origin = Path(tempfile.mkdtemp(prefix="evoforge-dash-")) / "cp26-small"
        atexit.register(shutil.rmtree, origin.parent, True)
        _MADE.update(make_run(origin, pool), origin=origin)
    shutil.copytree(_MADE["origin"], directory)
    return {k: v for k, v in _MADE.items() if k != "origin"}


def add_step(directory: Path) -> int:
    """One more finished step with one evaluated child, as a running engine would write it."""
    store = RunStore(directory / "run.db")
    try:
        last = store.last_step()
        step = last["step"] + 1
        [cid] = store.add_responses(step, [dict(pick=0, resp=0, parent_id=last["best_id"], response="")])
        store.classify(cid, code="def solve():\n    return 1\n", child_class="invalid", status="invalid",
                       reward=-0.1, wall_time=0.02, feedback="not a packing")
        store.finish_step(step, last["rng_state"], best_id=last["best_id"], best_score=last["best_score"],
                          evaluated=last["evaluated"] + 1, children=1, seconds=0.02)
    finally:
        store.close()
    return step


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
