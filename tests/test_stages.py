"""The step as a pipeline of stages: a new stage gets resume for free, the overlap pipeline
resumes exactly, the loop's stop conditions, the store's schema version and read-only open."""
from __future__ import annotations

import ast
import inspect
import json
import sqlite3
import textwrap

import pytest

from evoforge.database.store import SCHEMA_VERSION, RunStore, StoreError
from evoforge.engine import Engine, build_config
from evoforge.engine.stages import Stage, StepState
from test_resume import _children, _DiesInLastEvaluation, _Killed


class ClassTally(Stage):
    """A stage written only against the contract: it stores one row per step in its own table
    and keeps a running state (children per class, and a digest of the order they came in)."""

    name = "tally"
    tables = "CREATE TABLE IF NOT EXISTS tally (step INTEGER PRIMARY KEY, counts TEXT NOT NULL);"

    def bind(self, engine):
        super().bind(engine)
        self.counts: dict[str, int] = {}
        self.digest = 0
        self.live_steps: list[int] = []

    def _fold(self, s: StepState) -> dict[str, int]:
        step_counts: dict[str, int] = {}
        for i in sorted(s.outcomes):
            for oc in s.outcomes[i]:
                step_counts[oc.child_class] = step_counts.get(oc.child_class, 0) + 1
                self.digest = (self.digest * 31 + len(oc.child_class) + i) % 1_000_000_007
        for c, n in step_counts.items():
            self.counts[c] = self.counts.get(c, 0) + n
        return step_counts

    def run(self, s: StepState) -> None:
        db = self.engine.store.db
        if db.execute("SELECT 1 FROM tally WHERE step = ?", (s.k,)).fetchone():  # stored before a kill
            self.replay(s)
            return
        db.execute("INSERT INTO tally VALUES (?, ?)", (s.k, json.dumps(self._fold(s))))
        self.live_steps.append(s.k)

    def replay(self, s: StepState) -> None:
        stored = json.loads(self.engine.store.db.execute("SELECT counts FROM tally WHERE step = ?",
                                                         (s.k,)).fetchone()[0])
        assert self._fold(s) == stored  # replay rebuilds the state from what was stored

    def state_dict(self):
        return {"counts": self.counts, "digest": self.digest}

    def load_state_dict(self, state):
        state = state or {"counts": {}, "digest": 0}
        self.counts, self.digest = dict(state["counts"]), state["digest"]


def _with_tally(holder: list):
    def add(pipeline):
        holder.append(ClassTally())
        pipeline.insert(holder[-1], after="feed")
    return add


@pytest.mark.parametrize("pipeline", ["lockstep", "overlap"])
def test_a_new_stage_gets_resume_for_free(tmp_path, pool, pipeline):
    cfg = build_config(task="circle-packing-26", budget=120, seed=5, batch_size=4, n=4, pipeline=pipeline,
                       snapshot_interval=1e9, picture_interval=1e9)
    ref: list = []
    counting = _DiesInLastEvaluation(pool)
    Engine(cfg, tmp_path / "ref", executor=counting, stages=_with_tally(ref)).run()
    for die_on in (counting.calls // 3, 2 * counting.calls // 3):
        with pytest.raises(_Killed):
            Engine(cfg, tmp_path / "killed", executor=_DiesInLastEvaluation(pool, die_on=die_on),
                   stages=_with_tally([])).run()
    resumed: list = []
    Engine(cfg, tmp_path / "killed", executor=pool, stages=_with_tally(resumed)).run()
    assert _children(tmp_path / "killed") == _children(tmp_path / "ref")
    assert resumed[-1].state_dict() == ref[-1].state_dict()  # same state, rebuilt by replay
    assert resumed[-1].live_steps and resumed[-1].live_steps[0] > 1  # the resumed engine replayed first
    db = sqlite3.connect(tmp_path / "killed" / "run.db")
    steps = [r[0] for r in db.execute("SELECT step FROM tally ORDER BY step")]
    assert steps == list(range(1, steps[-1] + 1))  # one row per step, none lost or doubled


def test_resume_code_names_no_stage():
    from evoforge.engine import loop
    from evoforge.engine.stages import default_pipeline  # noqa: F401

    source = textwrap.dedent(inspect.getsource(loop.Engine._resume))
    names = {n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    stage_names = {"select", "prompt", "generate", "check", "evaluate", "feed", "learn", "commit"}
    assert not names & stage_names
    assert "selector" not in source and "learner" not in source


@pytest.mark.parametrize("selector", ["map-elites", "puct", "pacevolve"])
def test_overlap_replays_exactly_from_any_snapshot(tmp_path, pool, selector):
    """overlap draws step t+1's parents before step t's children are added; a kill after a
    snapshot taken in that state (parents drawn, not yet used) resumes to the same run."""
    cfg = build_config(task="circle-packing-26", budget=100, seed=2, batch_size=3, n=4, selector=selector,
                       pipeline="overlap", snapshot_interval=0, picture_interval=1e9)
    counting = _DiesInLastEvaluation(pool)
    Engine(cfg, tmp_path / "ref", executor=counting).run()
    with pytest.raises(_Killed):
        Engine(cfg, tmp_path / "killed", executor=_DiesInLastEvaluation(pool, die_on=counting.calls // 2)).run()
    Engine(cfg, tmp_path / "killed", executor=pool).run()
    assert _children(tmp_path / "killed") == _children(tmp_path / "ref")
    info = [json.loads(r[0]) for r in sqlite3.connect(tmp_path / "ref" / "run.db").execute(
        "SELECT info FROM steps WHERE step > 0 ORDER BY step")]
    assert info[0]["lag"] == 0 and all(i["lag"] == 1 for i in info[1:-1])  # the lag is recorded


def test_overlap_and_lockstep_draw_parents_from_different_databases(tmp_path, pool):
    runs = {}
    for mode in ("lockstep", "overlap"):
        cfg = build_config(task="circle-packing-26", budget=60, seed=1, batch_size=3, n=4, pipeline=mode,
                           picture_interval=1e9)
        Engine(cfg, tmp_path / mode, executor=pool).run()
        runs[mode] = _children(tmp_path / mode)
    assert runs["lockstep"][:13] == runs["overlap"][:13]  # seed + step 1: drawn from the seed alone
    assert runs["lockstep"] != runs["overlap"]


def test_the_last_step_is_clipped_to_the_budget(tmp_path, pool):
    cfg = build_config(task="circle-packing-26", budget=2, batch_size=100000, n=100000, picture_interval=1e9)
    summary = Engine(cfg, tmp_path, executor=pool).run()
    assert summary["children"] <= 2 and summary["evaluated"] <= 3


@pytest.mark.parametrize("pipeline", ["lockstep", "overlap"])
def test_a_run_without_evaluations_stops_with_one_line(tmp_path, pool, caplog, pipeline):
    from evoforge.llm.base import BACKENDS

    backend = BACKENDS.get("scripted")(responses=["no edit here"])
    cfg = build_config(task="circle-packing-26", budget=1000, batch_size=2, n=2, picture_interval=1e9,
                       pipeline=pipeline)
    with caplog.at_level("WARNING", logger="evoforge"):
        summary = Engine(cfg, tmp_path, backend=backend, executor=pool).run()
    # 10 idle steps (overlap: the step generated ahead is finished too), not 20 x budget children
    assert summary["steps"] == (10 if pipeline == "lockstep" else 11) and summary["evaluated"] == 1
    lines = [r.getMessage() for r in caplog.records if "no evaluation" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0]


def test_resolved_shape_is_stored_and_the_schema_versioned(tmp_path, pool):
    cfg = build_config(task="circle-packing-26", budget=20, batch_size=3, n=2, picture_interval=1e9)
    Engine(cfg, tmp_path, executor=pool).run()
    store = RunStore(tmp_path / "run.db", readonly=True)
    try:
        assert store.get_meta("schema_version") == SCHEMA_VERSION
        resolved = store.get_meta("resolved")
        assert (resolved["batch_size"], resolved["n"], resolved["pipeline"]) == (3, 2, "lockstep")
        assert store.step_row(1)["info"]["shape"] == [3, 2]
        with pytest.raises(sqlite3.OperationalError):  # read-only: no write gets through
            store.set_meta("x", 1)
    finally:
        store.close()
    db = sqlite3.connect(tmp_path / "run.db")
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (json.dumps(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    for readonly in (False, True):
        with pytest.raises(StoreError, match="newer evoforge") as err:
            RunStore(tmp_path / "run.db", readonly=readonly)
        assert "\n" not in str(err.value)


def test_cli_names_the_selector_that_runs_and_show_reads_the_stored_shape(tmp_path):
    from test_resume import _run

    run_dir = tmp_path / "static"
    res = _run(["run", "circle-packing-26", "--env", "static", "--budget", "12", "-B", "3", "-n", "2",
                "--quiet", "--run-dir", str(run_dir)])
    assert res.returncode == 0, res.stderr
    assert "selector best-of-n" in res.stderr and "map-elites" not in res.stderr  # --env static runs best-of-n
    assert "B=3 x n=2 (lockstep)" in res.stderr
    info = json.loads(_run(["show", str(run_dir), "--json"]).stdout)
    assert info["batch"] == "3 x 2, lockstep"


def test_a_schema_1_run_store_resumes(tmp_path, pool):
    """A run stored before stages (snapshot = the selector's state alone, no version, no steps.info)."""
    cfg = build_config(task="circle-packing-26", budget=40, seed=4, batch_size=3, n=2, picture_interval=1e9)
    Engine(cfg, tmp_path / "ref", executor=pool).run()
    with pytest.raises(_Killed):
        Engine(cfg, tmp_path / "old", executor=_DiesInLastEvaluation(pool, die_on=3)).run()
    db = sqlite3.connect(tmp_path / "old" / "run.db")
    step, payload = db.execute("SELECT step, selector_state FROM snapshot").fetchone()
    db.execute("UPDATE snapshot SET selector_state = ?", (json.dumps(json.loads(payload)["stages"]["select"]["selector"]),))
    db.execute("DELETE FROM meta WHERE key = 'schema_version'")
    db.execute("ALTER TABLE steps DROP COLUMN info")
    db.commit()
    db.close()
    Engine(cfg, tmp_path / "old", executor=pool).run()
    assert _children(tmp_path / "old") == _children(tmp_path / "ref")
