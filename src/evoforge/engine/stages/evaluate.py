"""The back of a step: early checks, sandbox evaluation, selector feedback.

Every outcome is stored the moment it is known (``RunStore.classify``), so replay and a step
cut short by a kill read it back instead of checking or evaluating again.
"""
from __future__ import annotations

import logging
from typing import Any, Iterator, Sequence

from evoforge.database.base import ChildOutcome, Program
from evoforge.database.store import ChildRow
from evoforge.engine.checks import Candidate, class_of, early_check
from evoforge.engine.errors import EngineError
from evoforge.engine.stages import remeasure
from evoforge.engine.stages.base import Stage, StepState
from evoforge.rewards import PENALTY, ChildClass
from evoforge.sandbox.base import EvalRequest, SandboxResult, Status
from evoforge.tasks.evaluate import Evaluation, failed_seed, request_for, score_result

log = logging.getLogger("evoforge")

MAX_ATTEMPTS = 3  # evaluations of one child started without an outcome (host killed or broken) before it is classified


class CheckStage(Stage):
    """ThetaEvolve's early checks (no diff -0.4, unchanged -0.3); owns the index of every
    canonical hash already run, rebuilt from the store on first use."""

    name = "check"

    def bind(self, engine: Any) -> None:
        super().bind(engine)
        self.known: set[str] | None = None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        self.known = None  # rebuilt from the store when next needed

    def run(self, s: StepState) -> None:
        e = self.engine
        if self.known is None:
            self.known = set(e.store.evaluated_hashes())
        s.candidates = []
        for i, pick in enumerate(s.picks):
            parent = pick.parent
            for j, row in enumerate(s.by_pick.get(i, [])):
                if row.child_class is not None:
                    continue  # classified before a kill: the evaluate stage reads it back
                cand = early_check(
                    row.response or "", "" if row.response else "empty response", parent.code,
                    parent.canon_hash, self.known, mode=e.cfg.prompt.edit_mode, evolve_blocks=e.task.evolve_blocks,
                )
                if cand.child_class is not None:
                    e.store.classify(row.id, code=cand.code, canon_hash=cand.canon_hash,
                                     child_class=cand.child_class.value, reward=PENALTY[cand.child_class],
                                     feedback=cand.feedback)
                    row.child_class, row.reward = cand.child_class.value, PENALTY[cand.child_class]
                else:  # a later sibling equal to this child is lazy, like one equal to an old program
                    self.known.add(cand.canon_hash or "")
                    s.candidates.append((i, j, row, cand))

    def replay(self, s: StepState) -> None:
        s.candidates = []  # a finished step's children are all classified


class EvaluateStage(Stage):
    """Survivors run in parallel in the sandbox and are verified in the host; owns the
    evaluation count and the best program (both rebuilt from the store on resume). A task with
    noisy rewards has its candidates for a new best re-measured (remeasure.py)."""

    name = "evaluate"
    tables = remeasure.TABLES

    def bind(self, engine: Any) -> None:
        super().bind(engine)
        self.evaluated = 0
        self.best: Program | None = None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        store = self.engine.store
        self.evaluated = remeasure.budget_spent(store)
        last = store.last_step()
        self.best = store.program(last["best_id"]) if last and last.get("best_id") is not None else None

    def run(self, s: StepState) -> None:
        e = self.engine
        outcomes: dict[int, list[ChildOutcome | None]] = {i: [None] * len(rs) for i, rs in s.by_pick.items()}
        s.improved, before = False, self.best
        for i, rows in s.by_pick.items():
            for j, row in enumerate(rows):
                if row.child_class is not None:
                    outcomes[i][j] = self._outcome_of_stored(row, s)
        for idx, res in self._evaluate_counted(s.candidates):
            i, j, row, cand = s.candidates[idx]
            ev = score_result(e.task, res)
            cls = class_of(ev.status)
            self.record(row.id, cand.code or "", cand.canon_hash or "", ev, cls, cand.feedback)
            program = None
            if cls is ChildClass.EVALUATED:
                program = self.program(row.id, cand.code or "", cand.canon_hash or "", ev,
                                       parent_id=row.parent_id, step=s.k, edit_feedback=cand.feedback)
                if before is None or program.fitness > before.fitness:  # a candidate for the best: keep its object
                    e.store.put_object(row.id, ev.object)
                if self.best is None or program.fitness > self.best.fitness:
                    self.best, s.improved = program, True
            reward = ev.score if program is not None else PENALTY[cls]
            outcomes[i][j] = ChildOutcome(cls.value, reward, program.fitness if program else None, program)
        s.outcomes = {i: [o for o in ocs if o is not None] for i, ocs in outcomes.items()}
        if e.task.remeasure and not s.replay:  # replay: the stored scores are the settled ones
            remeasure.settle_step(self, s, before)

    def replay(self, s: StepState) -> None:
        if s.candidates:
            raise EngineError(f"resume: finished step {s.k} has children that were never evaluated")
        self.run(s)

    def _outcome_of_stored(self, row: ChildRow, s: StepState) -> ChildOutcome:
        cls = row.child_class or ChildClass.NO_DIFF.value
        if cls == ChildClass.EVALUATED.value:
            program = self.engine.store.program(row.id)
            if program is not None and (self.best is None or program.fitness > self.best.fitness):
                self.best, s.improved = program, True
            return ChildOutcome(cls, row.score if row.score is not None else 0.0,
                                program.fitness if program else None, program)
        return ChildOutcome(cls, row.reward if row.reward is not None else PENALTY[ChildClass(cls)], None, None)

    # -- the sandbox -----------------------------------------------------------------------
    def _evaluate_counted(self, to_eval: list[tuple[int, int, ChildRow, Candidate]]) -> Iterator[tuple[int, SandboxResult]]:
        """Evaluate, each start counted in the store: a child whose evaluation never came back
        MAX_ATTEMPTS times (it took the host down, or kills hit it) is classified, not retried forever.

        A child whose start ended without an outcome twice runs alone, so one that takes the host
        down takes only itself, not the siblings of its batch, to the limit (after one such end,
        e.g. a plain kill of the run, the batch runs in parallel again).
        """
        if not to_eval:
            return
        store = self.engine.store
        before = store.started_evaluations([row.id for _, _, row, _ in to_eval])
        fresh = [x for x, (_, _, row, _) in enumerate(to_eval) if before[row.id] <= 1]
        for x, (_, _, row, cand) in enumerate(to_eval):
            n = before[row.id]
            if n <= 1:
                continue
            if n >= MAX_ATTEMPTS:
                log.warning("child %d: %d evaluations started without an outcome; classified, not retried", row.id, n)
                yield x, SandboxResult(Status.CRASH, error=f"evaluating this program stopped the host {n} "
                                       "times without an outcome; it is not run again")
                continue
            store.begin_evaluations([row.id])
            for _, res in self.evaluate([self.request(cand.code or "")]):
                yield x, res
        store.begin_evaluations([to_eval[x][2].id for x in fresh])
        for k, res in self.evaluate([self.request(to_eval[x][3].code or "") for x in fresh]):
            yield fresh[k], res

    def evaluate(self, requests: Sequence[EvalRequest]) -> Iterator[tuple[int, SandboxResult]]:
        """(index, result) as each finishes: each is stored at once (Executor.run_iter)."""
        if requests:
            yield from self.engine.executor.run_iter(requests)

    def request(self, code: str) -> EvalRequest:
        return request_for(self.engine.task, code, self.engine.cfg.eval_timeout)

    def record(self, child_id: int, code: str, h: str, ev: Evaluation, cls: ChildClass, edit_feedback: str) -> None:
        e = self.engine
        self.evaluated += 1
        reward = ev.score if cls is ChildClass.EVALUATED else PENALTY[cls]
        e.store.classify(
            child_id, code=code, canon_hash=h, child_class=cls.value, status=ev.status.value,
            score=ev.score, fitness=e.task.fitness(ev.score) if ev.score is not None else None,
            reward=reward, metrics=ev.metrics, wall_time=ev.wall_time,
            feedback="\n".join(filter(None, [edit_feedback, ev.feedback()])),
        )

    def program(self, child_id: int, code: str, h: str, ev: Evaluation, *, parent_id: int | None,
                step: int, edit_feedback: str) -> Program:
        assert ev.score is not None
        return Program(child_id, code, ev.score, self.engine.task.fitness(ev.score), parent_id, step,
                       dict(ev.metrics), h, "\n".join(filter(None, [edit_feedback, ev.feedback()])))


class FeedStage(Stage):
    """Every valid child enters the selector in order, then each pick's outcomes are reported
    (PUCT / momentum statistics). Deterministic: replay is the same call on the stored outcomes."""

    name = "feed"

    def run(self, s: StepState) -> None:
        selector = self.engine.selector
        for i in range(len(s.picks)):
            for oc in s.outcomes.get(i, []):
                if oc.program is not None:
                    selector.add(oc.program)
        for i, pick in enumerate(s.picks):
            selector.observe(pick, s.outcomes.get(i, []))


def evaluate_seed(stage: EvaluateStage) -> Program:
    """Step 0: the task's initial program, evaluated and recorded like any child."""
    from evoforge.edits import canonical_hash

    e = stage.engine
    code = e.task.initial_program
    stage.load_state_dict(None)  # a seed cut short by a kill may have left re-measurements (reused, counted)
    [child_id] = e.store.add_responses(0, [dict(pick=0, resp=0, response=None)])
    e.store.set_meta("seed_id", child_id)
    ev = score_result(e.task, e.executor.run_many([stage.request(code)])[0])
    h = canonical_hash(code)
    cls = class_of(ev.status)
    scored_zero = (cls is not ChildClass.EVALUATED and not e.cfg.strict_seed and e.task.evaluator_path is not None
                   and e.task.direction.value == "max")
    if scored_zero:
        ev = failed_seed(ev)  # issue 10: OpenEvolve scores a failing seed 0 and evolves from it
        cls = ChildClass.EVALUATED
        logging.getLogger("evoforge").warning("%s; scored 0.0 as OpenEvolve does (--strict-seed stops instead)",
                                              ev.reason[:400])
    stage.record(child_id, code, h, ev, cls, edit_feedback="")
    if cls is not ChildClass.EVALUATED:
        raise EngineError(f"the initial program of {e.task.name} is not a valid solution "
                          f"({ev.status.value}): {ev.reason or ev.stderr[-300:]}")
    seed = stage.program(child_id, code, h, ev, parent_id=None, step=0, edit_feedback="")
    if e.task.remeasure and not scored_zero:
        seed = remeasure.settle(stage, seed)
    stage.best = seed
    e.store.put_object(child_id, ev.object)
    return seed
