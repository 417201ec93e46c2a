"""The evolution loop (ThetaEvolve batch sampling): one step at a time, as a pipeline of stages.

One step: select B parents -> B prompts -> one backend call for n responses each | early checks
-> parallel sandbox evaluation -> insert every valid child in order and report outcomes |
(optional) one RL update -> commit (engine/stages/). Every response and evaluation is stored
as soon as it exists. The same loop replays finished steps on resume (``replay`` mode), so a
killed run resumes without losing or repeating work, and a new stage needs no resume code.

``pipeline: overlap``: step t+1's front (parents, prompts, generation in a thread) starts
before step t's children are evaluated, from the database as it stood; its responses are
collected and stored before step t's tail (learning, commit). ``lockstep``: one after the other.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from evoforge.database.base import Program, Selector
from evoforge.database.sanitize import store_limits
from evoforge.database.store import RunStore
from evoforge.edits import canonical_hash
from evoforge.edits.canonical import HASH_SCHEME
from evoforge.engine import outputs
from evoforge.engine.config import RunConfig, resolve_pipeline, resolve_search
from evoforge.engine.errors import EngineError
from evoforge.engine.stages import Pipeline, Stage, StepState, default_pipeline
from evoforge.engine.stages.evaluate import evaluate_seed
from evoforge.llm.base import Backend
from evoforge.sandbox.base import Executor
from evoforge.tasks.base import Task

log = logging.getLogger("evoforge")

__all__ = ["Engine", "EngineError", "StepStats"]

MAX_CHILDREN_PER_EVALUATION = 20  # stop a run whose backend produces only penalised responses
IDLE_STEPS = 10  # ... and, sooner, one whose last IDLE_STEPS steps made no evaluation at all


@dataclass
class StepStats:
    step: int
    children: int
    evaluated: int  # sandbox evaluations so far (the budget's unit)
    classes: dict[str, int]  # this step's children per class
    totals: dict[str, int]  # the run's children per class so far (a resumed run's earlier ones included)
    best_score: float | None
    improved: bool
    seconds: float
    children_per_second: float
    train_metrics: dict[str, float] = field(default_factory=dict)


class Engine:
    def __init__(
        self,
        cfg: RunConfig,
        run_dir: str | Path,
        *,
        task: Task | None = None,
        backend: Backend | None = None,
        learner: Any = None,
        executor: Executor | None = None,
        on_step: Callable[[StepStats], None] | None = None,
        stages: Callable[[Pipeline], None] | None = None,
    ):
        from evoforge.engine.factory import make_backend, make_executor, make_learner, make_selector, make_task

        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.task = task or make_task(cfg.task, cfg.task_options)  # issue 10: task_options
        self.backend = backend or make_backend(cfg, self.task)
        self.cfg = cfg = resolve_search(cfg, getattr(self.backend, "preferred_batch", None))  # issue 13
        self.batch_size, self.n = cfg.batch_size, cfg.n
        self.pipeline_mode = resolve_pipeline(cfg, self.backend.name)
        self.cfg = cfg = cfg.model_copy(update={"pipeline": self.pipeline_mode})  # stored: resume keeps the mode
        self.rng = np.random.default_rng(cfg.seed)
        self.selector: Selector = make_selector(cfg, self.task, self.rng)
        self.executor = executor or make_executor(cfg)
        self._own_executor = executor is None
        self.learner = learner if learner is not None else make_learner(cfg, self.backend, self.run_dir)
        self.on_step = on_step
        from evoforge.prompts import PromptBuilder

        self.prompts = PromptBuilder(self.task, mode=cfg.prompt.edit_mode, show_inspirations=cfg.prompt.show_inspirations,
                                     template_dir=cfg.prompt.template_dir, grammar=cfg.prompt.grammar)
        self.store = RunStore(self.run_dir / "run.db", limits=store_limits(cfg.store_limits))
        if self.store.get_meta("config") is None:  # at once: a run killed from here on can be resumed
            self.store.set_meta("config", cfg.model_dump())
        self.pipeline = default_pipeline(self)
        if stages is not None:
            stages(self.pipeline)
        for st in self.pipeline.all():
            self.store.ensure_tables(st.tables)
            st.bind(self)
        self.step_index = 0  # the next step to run
        self.snapshot_step = -1  # the step whose state is being (or was last) snapshotted
        self._replay_until = -1  # while resuming: the last finished step
        self._started = time.monotonic()  # run() sets it again

    # -- read-only views ---------------------------------------------------------------------
    @property
    def evaluated(self) -> int:
        return self.pipeline.get("evaluate").evaluated  # type: ignore[attr-defined]

    @property
    def best(self) -> Program | None:
        return self.pipeline.get("evaluate").best  # type: ignore[attr-defined]

    @property
    def children(self) -> int:
        return self.pipeline.get("commit").children  # type: ignore[attr-defined]

    def stage_states(self, step: int) -> dict[str, Any]:
        """Every stage's state after ``step`` (what the snapshot holds)."""
        self.snapshot_step = step
        return {st.name: sd for st in self.pipeline.all() if (sd := st.state_dict()) is not None}

    # -- lifecycle ---------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Start (or resume) and step until the budget, time limit or step limit is reached."""
        started = self._started = time.monotonic()
        try:
            nxt = self._start_or_resume()
            while True:
                s = nxt if nxt is not None else self._new_state(self.step_index, replay=False)
                # A step cut short by a kill (or generated ahead) is finished first, even past the
                # budget: its responses are stored, and stopping would leave them unclassified.
                if not self.store.step_children(s.k) and self._should_stop(started):
                    break
                nxt = self._run_step(s)
                self.step_index = s.k + 1
            for st in self.pipeline.all():
                st.finish()
            outputs.refresh(self.run_dir, self.task, self.store)
            return outputs.summary(self.store, self.task)
        finally:
            self.close()

    def close(self) -> None:
        self.pipeline.get("generate").finish()  # no generation thread outlives the run
        if self._own_executor:
            self.executor.close()
        self.backend.close()
        self.store.close()

    def _should_stop(self, started: float) -> bool:
        reason = self._stop_reason(started)
        if reason is not None and reason != "limit":
            log.warning("stopping: %s", reason)
        return reason is not None

    def _stop_reason(self, started: float) -> str | None:
        """Why the run should not start another step ("limit": budget, time or steps), or None."""
        cfg = self.cfg
        if self.evaluated >= cfg.budget:
            return "limit"
        if cfg.time_limit is not None and time.monotonic() - started >= cfg.time_limit:
            return "limit"
        if cfg.max_steps is not None and self.step_index > cfg.max_steps:
            return "limit"
        recent = self.store.recent_evaluations(IDLE_STEPS + 1)
        if len(recent) == IDLE_STEPS + 1 and recent[-1] == recent[0]:
            return (f"the last {IDLE_STEPS} steps made no evaluation (every response was penalised before the "
                    "sandbox: no edit, or an unchanged program); `evoforge show` lists them")
        if self.children >= MAX_CHILDREN_PER_EVALUATION * cfg.budget:
            return (f"{self.children} children but only {self.evaluated} evaluations (the backend's responses "
                    "are almost all penalised)")
        return None

    # -- start, resume -------------------------------------------------------------------------
    def _start_or_resume(self) -> StepState | None:
        last = self.store.last_step()
        if last is not None:
            return self._resume(last)
        self.store.discard_after(-1)  # a crash during the seed's evaluation
        for key, value in (("config", self.cfg.model_dump()), ("task", self.task.name),
                           ("direction", self.task.direction.value), ("target", self.task.target),
                           ("hash_scheme", HASH_SCHEME),
                           ("resolved", {"batch_size": self.batch_size, "n": self.n, "pipeline": self.pipeline_mode})):
            self.store.set_meta(key, value)
        seed = evaluate_seed(self.pipeline.get("evaluate"))  # type: ignore[arg-type]
        self.selector.add(seed)
        self.store.finish_step(0, self.rng.bit_generator.state, self.stage_states(0), best_id=seed.id,
                               best_score=seed.score, evaluated=self.evaluated, children=0)
        outputs.write_best(self.run_dir, self.task, seed, self.store.get_object(seed.id))
        self.step_index = 1
        return None

    def _resume(self, last: dict[str, Any]) -> StepState | None:
        """Every stage loads its snapshotted state, then the finished steps after the snapshot
        run again in replay mode, through the same loop. Knows no individual stage."""
        store = self.store
        if store.get_meta("hash_scheme") != HASH_SCHEME:  # written by another evoforge version
            store.rehash(canonical_hash)
            store.set_meta("hash_scheme", HASH_SCHEME)
        snap = store.snapshot()
        if snap is None:
            raise EngineError(f"{store.path} has finished steps but no snapshot: not a run store")
        self.snapshot_step, states = snap
        for st in self.pipeline.all():
            st.load_state_dict(states.get(st.name))
        self._replay_until = last["step"]
        nxt = None
        for k in range(self.snapshot_step + 1, last["step"] + 1):
            nxt = self._run_step(nxt if nxt is not None else self._new_state(k, replay=True))
        self._replay_until = -1
        if nxt is not None:
            nxt.replay = False  # the step after the last finished one runs live
        self.step_index = last["step"] + 1
        log.info("resumed at step %d: %d evaluations, best %s", self.step_index, self.evaluated,
                 self.best.score if self.best else None)
        return nxt

    # -- one step --------------------------------------------------------------------------------
    def _new_state(self, k: int, *, replay: bool) -> StepState:
        rows = self.store.step_children(k)
        prev = self.store.step_row(k - 1)
        lag = 1 if prev is not None and prev["info"].get("prefetched") else 0
        if rows:  # stored (replay, or a step cut short): its own shape
            return StepState(k, replay, len({r.pick for r in rows}), max(r.resp for r in rows) + 1, lag=lag)
        n_picks, n = self._shape(self.evaluated)
        return StepState(k, replay, n_picks, n, lag=lag)

    def _shape(self, evaluated: int) -> tuple[int, int]:
        """B x n of a step, the last one clipped to the budget (never more responses than the
        evaluations left, e.g. -B 100000 -n 100000 --budget 2)."""
        remaining = max(1, self.cfg.budget - evaluated)
        n = min(self.n, remaining)
        return max(1, min(self.batch_size, math.ceil(remaining / n))), n

    def _run_step(self, s: StepState) -> StepState | None:
        s.extra["started"] = time.monotonic()
        self._stages(self.pipeline.front, s)
        nxt = self._run_ahead(s)
        self._stages(self.pipeline.back, s)
        if nxt is not None and not s.replay:  # the join: what ran ahead is collected and stored
            self._stages([st for st in self.pipeline.front if st.background], nxt)
        self._stages(self.pipeline.tail, s)
        if not s.replay and self.on_step is not None:
            stats = s.extra.get("stats", {})
            seconds = stats.get("seconds", 0.0)
            self.on_step(StepStats(
                s.k, self.children, self.evaluated, stats.get("counts", {}),
                dict(self.pipeline.get("commit").class_totals),  # type: ignore[attr-defined]
                self.best.score if self.best else None, s.improved, seconds,
                len(s.rows) / max(seconds, 1e-9), s.metrics))
        return nxt

    def _stages(self, stages: list[Stage], s: StepState) -> None:
        for st in stages:
            if st.name not in s.done:
                (st.replay if s.replay else st.run)(s)
                s.done.add(st.name)

    def _run_ahead(self, s: StepState) -> StepState | None:
        """overlap: the front of step k+1, from the database as it stands before step k's
        children are added. Whether (and with which shape) the run did so is stored with the
        step, so replay takes the same decision whatever the config says now."""
        if s.replay:
            info = self.store.step_row(s.k)["info"]
            if not info.get("prefetched"):
                return None
            n_picks, n = info["next_shape"]
        else:
            cfg = self.cfg
            if self.pipeline_mode != "overlap" or (cfg.max_steps is not None and s.k + 1 > cfg.max_steps):
                return None
            prev = self.store.step_row(s.k - 1)
            bound = (prev["evaluated"] if prev else 0) + len(s.rows)  # step k+1 is needed whatever k makes
            if bound >= cfg.budget:
                return None
            # a run that would stop after step k (idle, time) must not generate step k+1 ahead: a step
            # generated ahead is always finished, so the loop's stop check would never see it
            if self._stop_reason(self._started) is not None:
                return None
            n_picks, n = self._shape(bound)
        s.extra["pipeline"] = {"prefetched": True, "next_shape": [n_picks, n]}
        nxt = StepState(s.k + 1, s.k + 1 <= self._replay_until, n_picks, n, lag=1)
        for st in self.pipeline.front:
            if st.background:
                if not nxt.replay and not s.replay:
                    st.start(nxt)
                continue  # collected at the join (live) or by the step's own front (replay)
            (st.replay if nxt.replay else st.run)(nxt)
            nxt.done.add(st.name)
        return nxt
