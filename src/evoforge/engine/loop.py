"""The evolution loop (ThetaEvolve batch sampling), one step at a time.

One step: sample B parents -> B prompts -> one backend call for n responses each -> early checks
-> parallel sandbox evaluation of the survivors -> insert every valid child in order -> selector
feedback -> (optional) one RL update on the B groups -> commit. Every response and evaluation is
stored as soon as it exists, so a killed run resumes without losing or repeating work.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from evoforge.database.base import ChildOutcome, Pick, Program, Selector
from evoforge.database.store import ChildRow, RunStore
from evoforge.edits import canonical_hash
from evoforge.edits.canonical import HASH_SCHEME
from evoforge.engine.checks import Candidate, class_of, early_check
from evoforge.engine.config import RunConfig
from evoforge.engine import outputs
from evoforge.llm.base import Backend, GenerationConfig, Prompt, Response
from evoforge.rewards import PENALTY, ChildClass
from evoforge.sandbox.base import EvalRequest, Executor, SandboxResult
from evoforge.tasks.base import Task
from evoforge.tasks.evaluate import Evaluation, request_for, score_result

log = logging.getLogger("evoforge")

PAPER_BATCH = (32, 16)  # ThetaEvolve: B parents x n responses
MAX_CHILDREN_PER_EVALUATION = 20  # stop a run whose backend produces only penalised responses


class EngineError(RuntimeError):
    """A run cannot start or go on (e.g. the initial program is invalid); one readable line."""


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
    ):
        from evoforge.engine.factory import make_backend, make_executor, make_learner, make_selector, make_task

        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.task = task or make_task(cfg.task)
        self.backend = backend or make_backend(cfg, self.task)
        b_pref, n_pref = getattr(self.backend, "preferred_batch", PAPER_BATCH)
        self.batch_size = cfg.batch_size or b_pref
        self.n = cfg.n or n_pref
        self.rng = np.random.default_rng(cfg.seed)
        self.selector: Selector = make_selector(cfg, self.task, self.rng)
        self.executor = executor or make_executor(cfg)
        self._own_executor = executor is None
        self.learner = learner if learner is not None else make_learner(cfg, self.backend, self.run_dir)
        self.on_step = on_step
        from evoforge.prompts import PromptBuilder

        self.prompts = PromptBuilder(
            self.task,
            mode=cfg.prompt.edit_mode,
            show_inspirations=cfg.prompt.show_inspirations,
            template_dir=cfg.prompt.template_dir,
        )
        self.store = RunStore(self.run_dir / "run.db")
        self.known_hashes: set[str] = set()
        self.best: Program | None = None
        self.evaluated = 0
        self.children = 0
        self.class_totals: dict[str, int] = {}  # children per class, for the display
        self.step_index = 0
        self._pictures_at = time.monotonic()  # the first pictures after one interval
        self._pictures_cost = 0.0
        self._snapshot_step, self._snapshot_at = -1, time.monotonic()  # the selector's last snapshot
        self._snapshot_cost = 0.0  # seconds it took

    # -- lifecycle ---------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Start (or resume) and step until the budget, time limit or step limit is reached."""
        started = time.monotonic()
        try:
            self._start_or_resume()
            # A step cut short by a kill is finished first, even past the budget: its responses and
            # some evaluations are stored, and stopping would leave them unclassified for good.
            pending = bool(self.store.step_children(self.step_index))
            while pending or not self._should_stop(started):
                pending = False
                self._step(self.step_index)
                self.step_index += 1
            if self._snapshot_step != self.step_index - 1:  # a resume of the finished run replays nothing
                self.store.save_snapshot(self.step_index - 1, self.selector.state_dict())
            outputs.refresh(self.run_dir, self.task, self.store)
            return outputs.summary(self.store, self.task)
        finally:
            self.close()

    def close(self) -> None:
        if self._own_executor:
            self.executor.close()
        self.backend.close()
        self.store.close()

    def _should_stop(self, started: float) -> bool:
        cfg = self.cfg
        if self.evaluated >= cfg.budget:
            return True
        if cfg.time_limit is not None and time.monotonic() - started >= cfg.time_limit:
            return True
        if cfg.max_steps is not None and self.step_index > cfg.max_steps:
            return True
        if self.children >= MAX_CHILDREN_PER_EVALUATION * cfg.budget:
            log.warning("stopping: %d children but only %d evaluations (the backend's responses are "
                        "almost all penalised)", self.children, self.evaluated)
            return True
        return False

    def _start_or_resume(self) -> None:
        last = self.store.last_step()
        if last is None:
            self.store.discard_after(-1)  # a crash during the seed's evaluation
            self.store.set_meta("config", self.cfg.model_dump())
            self.store.set_meta("task", self.task.name)
            self.store.set_meta("direction", self.task.direction.value)
            self.store.set_meta("target", self.task.target)
            self.store.set_meta("hash_scheme", HASH_SCHEME)
            self._evaluate_seed()
            self.step_index = 1
            return
        from evoforge.engine.resume import resume

        resume(self, last)

    def _evaluate_seed(self) -> None:
        code = self.task.initial_program
        [child_id] = self.store.add_responses(0, [dict(pick=0, resp=0, response=None)])
        self.store.set_meta("seed_id", child_id)
        ev = score_result(self.task, self.executor.run_many([self._request(code)])[0])
        h = canonical_hash(code)
        cls = class_of(ev.status)
        self._record_evaluation(child_id, code, h, ev, cls, edit_feedback="")
        if cls is not ChildClass.EVALUATED:
            raise EngineError(f"the initial program of {self.task.name} is not a valid solution "
                              f"({ev.status.value}): {ev.reason or ev.stderr[-300:]}")
        seed = self._program(child_id, code, h, ev, parent_id=None, step=0, edit_feedback="")
        self.selector.add(seed)
        self.best = seed
        self.store.put_object(child_id, ev.object)
        self.store.finish_step(0, self.rng.bit_generator.state, self.selector.state_dict(),
                               best_id=seed.id, best_score=seed.score, evaluated=self.evaluated, children=0)
        self._snapshot_step, self._snapshot_at = 0, time.monotonic()
        outputs.write_best(self.run_dir, self.task, seed, ev.object)

    # -- one step ----------------------------------------------------------------------------
    def _step(self, k: int) -> None:
        t0 = time.monotonic()
        rows = self.store.step_children(k)  # non-empty iff resuming inside step k
        n_picks = len({r.pick for r in rows}) if rows else self._picks_this_step()
        picks = self.selector.sample(n_picks)
        prompts = [self.prompts.build(p) for p in picks]
        fresh: list[list[Response]] | None = None
        if not rows:
            fresh = self._generate(prompts, k)
            rows = self._store_responses(k, picks, fresh)
        by_pick: dict[int, list[ChildRow]] = {}
        for r in rows:
            by_pick.setdefault(r.pick, []).append(r)

        outcomes, improved = self._check_and_evaluate(picks, by_pick, k)
        self._feed_selector(picks, outcomes)

        train_metrics = self._train(k, prompts, by_pick, outcomes, fresh) if self.learner is not None else {}
        counts: dict[str, int] = {}
        for ocs in outcomes.values():
            for oc in ocs:
                counts[oc.child_class] = counts.get(oc.child_class, 0) + 1
        seconds = time.monotonic() - t0
        # At least snapshot_interval apart, and 50x the last snapshot's cost apart (<= 2 % of the
        # run: map-elites at 100 000 programs takes 0.75 s to serialise).
        snapshot = time.monotonic() - self._snapshot_at >= max(self.cfg.snapshot_interval, 50 * self._snapshot_cost)
        t_snap = time.monotonic()
        self.store.finish_step(
            k, self.rng.bit_generator.state, self.selector.state_dict() if snapshot else None,
            best_id=self.best.id if self.best else None, best_score=self.best.score if self.best else None,
            evaluated=self.evaluated, children=len(rows), seconds=seconds, train_metrics=train_metrics,
        )
        if snapshot:
            self._snapshot_step, self._snapshot_at = k, time.monotonic()
            self._snapshot_cost = self._snapshot_at - t_snap
        self.store.drop_rl_tokens(k)
        self.children += len(rows)
        if improved and self.best is not None:
            outputs.write_best(self.run_dir, self.task, self.best, self.store.get_object(self.best.id))
        if time.monotonic() - self._pictures_at >= max(self.cfg.picture_interval, 20 * self._pictures_cost):
            t_pic = time.monotonic()
            outputs.refresh(self.run_dir, self.task, self.store)
            self._pictures_at = time.monotonic()
            self._pictures_cost = self._pictures_at - t_pic  # pictures take <= 5 % of the loop
        for cls, c in counts.items():
            self.class_totals[cls] = self.class_totals.get(cls, 0) + c
        if self.on_step:
            self.on_step(StepStats(k, self.children, self.evaluated, counts, dict(self.class_totals),
                                   self.best.score if self.best else None, improved, seconds,
                                   len(rows) / max(seconds, 1e-9), train_metrics))

    def _feed_selector(self, picks: list[Pick], outcomes: dict[int, list[ChildOutcome]]) -> None:
        """Insert the step's valid children in order, then report every pick's outcomes."""
        for i in range(len(picks)):
            for oc in outcomes[i]:
                if oc.program is not None:
                    self.selector.add(oc.program)
        for i, pick in enumerate(picks):
            self.selector.observe(pick, outcomes[i])

    def _picks_this_step(self) -> int:
        remaining = self.cfg.budget - self.evaluated
        return max(1, min(self.batch_size, math.ceil(remaining / self.n)))

    def _generate(self, prompts: list[Prompt], k: int) -> list[list[Response]]:
        gen = GenerationConfig(n=self.n, temperature=self.cfg.temperature, max_tokens=self.cfg.max_tokens,
                               seed=self.cfg.seed * 1_000_003 + k)
        out = self.backend.generate(prompts, gen)
        if len(out) != len(prompts) or any(len(g) != self.n for g in out):
            raise EngineError(f"backend {self.backend.name} returned the wrong number of responses")
        return out

    def _store_responses(self, k: int, picks: list[Pick], responses: list[list[Response]]) -> list[ChildRow]:
        keep_tokens = self.learner is not None
        rows = []
        for i, (pick, group) in enumerate(zip(picks, responses)):
            for j, r in enumerate(group):
                rows.append(dict(
                    pick=i, resp=j, parent_id=pick.parent.id,
                    partner_id=pick.partner.id if pick.partner else None,
                    response=r.text, response_error=r.error, prompt_tokens=r.prompt_tokens,
                    completion_tokens=r.completion_tokens,
                    rl_tokens=_rl_tokens(r) if keep_tokens else None,
                ))
        self.store.add_responses(k, rows)
        return self.store.step_children(k)

    def _check_and_evaluate(
        self, picks: list[Pick], by_pick: dict[int, list[ChildRow]], k: int
    ) -> tuple[dict[int, list[ChildOutcome]], bool]:
        """Early checks, then the sandbox; every outcome is stored the moment it is known."""
        outcomes: dict[int, list[ChildOutcome | None]] = {i: [None] * len(by_pick[i]) for i in by_pick}
        to_eval: list[tuple[int, int, ChildRow, Candidate]] = []
        improved = False
        for i, pick in enumerate(picks):
            parent = pick.parent
            for j, row in enumerate(by_pick[i]):
                if row.child_class is not None:  # done before a crash: reuse
                    outcomes[i][j] = self._outcome_of_stored(row)
                    continue
                cand = early_check(
                    row.response or "", "" if row.response else "empty response", parent.code,
                    parent.canon_hash, self.known_hashes,
                    mode=self.cfg.prompt.edit_mode, evolve_blocks=self.task.evolve_blocks,
                )
                if cand.child_class is not None:
                    reward = PENALTY[cand.child_class]
                    self.store.classify(row.id, code=cand.code, canon_hash=cand.canon_hash,
                                        child_class=cand.child_class.value, reward=reward, feedback=cand.feedback)
                    outcomes[i][j] = ChildOutcome(cand.child_class.value, reward, None, None)
                else:  # a later sibling equal to this child is lazy, like one equal to an old program
                    self.known_hashes.add(cand.canon_hash or "")
                    to_eval.append((i, j, row, cand))

        requests = [self._request(c.code or "") for _, _, _, c in to_eval]
        for idx, res in self._evaluate(requests):
            i, j, row, cand = to_eval[idx]
            ev = score_result(self.task, res)
            cls = class_of(ev.status)
            self._record_evaluation(row.id, cand.code or "", cand.canon_hash or "", ev, cls, cand.feedback)
            program = None
            if cls is ChildClass.EVALUATED:
                program = self._program(row.id, cand.code or "", cand.canon_hash or "", ev,
                                        parent_id=row.parent_id, step=k, edit_feedback=cand.feedback)
                if self.best is None or program.fitness > self.best.fitness:
                    self.best = program
                    improved = True
                    self.store.put_object(row.id, ev.object)
            reward = ev.score if program is not None else PENALTY[cls]
            outcomes[i][j] = ChildOutcome(cls.value, reward, program.fitness if program else None, program)
        return {i: [o for o in ocs if o is not None] for i, ocs in outcomes.items()}, improved

    def _outcome_of_stored(self, row: ChildRow) -> ChildOutcome:
        cls = row.child_class or ChildClass.NO_DIFF.value
        if cls == ChildClass.EVALUATED.value:
            self.known_hashes.add(row.canon_hash or "")
            program = self.store.program(row.id)
            if program is not None and (self.best is None or program.fitness > self.best.fitness):
                self.best = program
            return ChildOutcome(cls, row.score if row.score is not None else 0.0,
                                program.fitness if program else None, program)
        return ChildOutcome(cls, row.reward if row.reward is not None else PENALTY[ChildClass(cls)], None, None)

    def _evaluate(self, requests: Sequence[EvalRequest]) -> Iterator[tuple[int, SandboxResult]]:
        if not requests:
            return
        run_iter = getattr(self.executor, "run_iter", None)
        if run_iter is not None:  # results as they finish: each is stored at once
            yield from run_iter(requests)
        else:
            yield from enumerate(self.executor.run_many(requests))

    def _request(self, code: str) -> EvalRequest:
        return request_for(self.task, code, self.cfg.eval_timeout)

    def _record_evaluation(self, child_id: int, code: str, h: str, ev: Evaluation, cls: ChildClass,
                           edit_feedback: str) -> None:
        self.evaluated += 1
        if h:
            self.known_hashes.add(h)
        reward = ev.score if cls is ChildClass.EVALUATED else PENALTY[cls]
        self.store.classify(
            child_id, code=code, canon_hash=h, child_class=cls.value, status=ev.status.value,
            score=ev.score, fitness=self.task.fitness(ev.score) if ev.score is not None else None,
            reward=reward, metrics=ev.metrics, wall_time=ev.wall_time,
            feedback="\n".join(filter(None, [edit_feedback, ev.feedback()])),
        )

    def _program(self, child_id: int, code: str, h: str, ev: Evaluation, *, parent_id: int | None,
                 step: int, edit_feedback: str) -> Program:
        assert ev.score is not None
        return Program(child_id, code, ev.score, self.task.fitness(ev.score), parent_id, step,
                       dict(ev.metrics), h, "\n".join(filter(None, [edit_feedback, ev.feedback()])))

    # -- test-time learning ------------------------------------------------------------------
    def _train(self, k: int, prompts: list[Prompt], by_pick: dict[int, list[ChildRow]],
               outcomes: dict[int, list[ChildOutcome]], fresh: list[list[Response]] | None) -> dict[str, float]:
        from evoforge.engine.training import build_groups, checkpoint

        groups = build_groups(self, k, prompts, by_pick, outcomes, fresh)
        if not groups:
            return {}
        metrics = self.learner.update(groups)
        checkpoint(self, k)
        return {key: float(v) for key, v in metrics.items()}



def _rl_tokens(r: Response) -> dict[str, Any] | None:
    if r.token_ids is None:
        return None
    return {"token_ids": r.token_ids, "logprobs": r.logprobs, "prompt_token_ids": r.prompt_token_ids}
