"""Noisy rewards: a program about to become the best is measured again before it counts.

A runtime reward (the performance kernels) varies between evaluations of one fixed program:
by 12-19 % on a loaded machine, by a few per cent with what else a quiet machine runs, and the
programs measured at the same moment vary together (benchmarks/RESULTS.md, issue 16). A search
that keeps its best measurement keeps the luckiest moment, not the fastest program. A task with
``remeasure = r`` (``Task.remeasure``; any task through ``task_options: {remeasure: r}``) has
the candidate for a new best evaluated r more times, each side by side with the reference
program (the seed; with 2+ workers the two run at the same moment); its score is the reference's
score times the median of the r ratios candidate / reference (differences for scores that are
not all positive): a speed-up over the reference measured at one moment, as kernel benchmarks
report it, so the machine's load cancels and every settled score stays in the seed's frame.
A failed re-measurement (a wrong result on fresh inputs) makes its pair the worst value. When
the settled score no longer beats the incumbent, the step's next candidate is measured, until
the step's best is a settled program or nothing beats the old best. The seed itself is settled
by the plain median of its r + 1 measurements.

The evaluate stage calls this (it owns the best program and the evaluation count); the rules of
stages/base.py hold: every re-measurement is stored the moment it is known (table
``remeasures``) and reused after a kill, the settled score is written to the child's row before
any stage sees it, replay reads the settled rows and runs nothing here, and re-measurements
count in the budget (equal-budget comparisons stay fair).
"""
from __future__ import annotations

import dataclasses
import math
import sqlite3
from typing import TYPE_CHECKING

from evoforge.engine.checks import class_of
from evoforge.rewards import ChildClass
from evoforge.tasks.evaluate import score_result

if TYPE_CHECKING:
    from evoforge.database.base import Program
    from evoforge.database.store import RunStore
    from evoforge.engine.stages.base import StepState
    from evoforge.engine.stages.evaluate import EvaluateStage

TABLES = """
CREATE TABLE IF NOT EXISTS remeasures (  -- measurements taken to settle child_id: its own and the reference's
    child_id INTEGER NOT NULL, i INTEGER NOT NULL, measured_id INTEGER NOT NULL, canon_hash TEXT NOT NULL,
    status TEXT NOT NULL, score REAL, reason TEXT, wall_time REAL,
    PRIMARY KEY (child_id, i)
);
"""
MARK = "remeasured"  # the metrics key of a settled program: its r + 1 own measurements


def count(store: "RunStore") -> int:
    """Re-measurements so far."""
    try:
        return int(store.db.execute("SELECT COUNT(*) FROM remeasures").fetchone()[0])
    except sqlite3.OperationalError:  # a read-only store of a run from before this table
        return 0


def budget_spent(store: "RunStore") -> int:
    """What the budget counts: the children's sandbox evaluations and the re-measurements."""
    return store.count_evaluations() + count(store)


def _measure(stage: "EvaluateStage", prog: "Program", plan: list["Program"]) -> list[float | None]:
    """Score of each program in ``plan`` (measurement i settles ``prog``), stored as it comes;
    what was stored before a kill is reused. None: the measurement failed."""
    store, task = stage.engine.store, stage.engine.task
    q = "SELECT i, canon_hash, score FROM remeasures WHERE child_id = ?"
    got = {i: score for i, h, score in store.db.execute(q, (prog.id,)) if i < len(plan) and h == plan[i].canon_hash}
    todo = [i for i in range(len(plan)) if i not in got]
    for x, res in stage.evaluate([stage.request(plan[i].code) for i in todo]):
        i = todo[x]
        ev = score_result(task, res)
        ok = class_of(ev.status) is ChildClass.EVALUATED and ev.score is not None
        store.db.execute("INSERT OR REPLACE INTO remeasures VALUES (?,?,?,?,?,?,?,?)",
                         (prog.id, i, plan[i].id, plan[i].canon_hash, ev.status.value, ev.score if ok else None,
                          (ev.reason or "")[:300], ev.wall_time))
        stage.evaluated += 1
        got[i] = ev.score if ok else None
    return [got[i] for i in range(len(plan))]


def _median(values: list[float | None], fitness) -> float | None:
    """Median with a failed measurement (None) as the worst value; None when that is the median."""
    ranked = sorted(values, key=lambda v: -math.inf if v is None else fitness(v))
    lo, hi = ranked[(len(ranked) - 1) // 2], ranked[len(ranked) // 2]
    return None if lo is None or hi is None else (lo + hi) / 2


def settle(stage: "EvaluateStage", prog: "Program", reference: "Program | None" = None) -> "Program":
    """``prog`` re-measured ``remeasure`` times, each beside ``reference``, scored, stored; returned updated."""
    if MARK in prog.metrics:
        return prog
    task, r = stage.engine.task, stage.engine.task.remeasure
    paired = reference is not None and reference.id != prog.id
    plan = [q for _ in range(r) for q in ((prog, reference) if paired else (prog,))]
    got = _measure(stage, prog, plan)
    mine, theirs = got[::2] if paired else got, got[1::2] if paired else []
    metrics = {**prog.metrics, MARK: [prog.score, *mine], "first_score": prog.score,
               "remeasure_failed": sum(v is None for v in mine)}
    score = None
    if paired:  # each measurement over the reference's beside it: what the machine did at that moment cancels
        assert reference is not None
        ratio = all(v is None or v > 0 for v in mine + theirs) and reference.score > 0
        rel = [None if a is None or b is None else (a / b if ratio else a - b) for a, b in zip(mine, theirs)]
        mid = _median(rel, task.fitness)  # a ratio or difference ranks as a score does
        if mid is not None:
            score = reference.score * mid if ratio else reference.score + mid
        metrics.update(reference_id=reference.id, reference_score=reference.score, reference_now=theirs,
                       paired=rel, paired_by="ratio" if ratio else "difference")
        note = (f"re-measured {r} times beside the reference (the initial program): "
                f"{'x' if ratio else '+'}{mid if mid is not None else float('nan'):.4g} its score")
    else:
        score = _median([prog.score, *mine], task.fitness)
        note = f"measured {r + 1} times: median {score if score is not None else float('nan'):.6g}"
    if score is None:  # most re-measurements failed: the worst valid measurement stands
        score = min((v for v in [prog.score, *mine] if v is not None), key=task.fitness)
    note += f"; score {score:.6g} (first measurement {prog.score:.6g})"
    feedback = "\n".join(filter(None, [prog.feedback, note]))
    fitness = task.fitness(score)
    stage.engine.store.classify(prog.id, score=score, fitness=fitness, reward=score, metrics=metrics,
                                feedback=feedback)
    return dataclasses.replace(prog, score=score, fitness=fitness, metrics=metrics, feedback=feedback)


def settle_step(stage: "EvaluateStage", s: "StepState", before: "Program | None") -> None:
    """Live: re-measure the step's candidates for a new best, best first, until the best is settled."""
    reference = None
    while True:
        found = [(i, j, oc) for i, ocs in s.outcomes.items() for j, oc in enumerate(ocs) if oc.program is not None]
        if not found:
            break
        i, j, oc = max(found, key=lambda t: t[2].program.fitness)  # type: ignore[union-attr]
        top = oc.program
        assert top is not None
        if (before is not None and not top.fitness > before.fitness) or MARK in top.metrics:
            break
        if reference is None:
            seed_id = stage.engine.store.get_meta("seed_id")
            reference = stage.engine.store.program(int(seed_id)) if seed_id is not None else None
        new = settle(stage, top, reference)
        s.outcomes[i][j] = dataclasses.replace(oc, reward=new.score, fitness=new.fitness, program=new)
    best = before
    for ocs in s.outcomes.values():
        for oc in ocs:
            if oc.program is not None and (best is None or oc.program.fitness > best.fitness):
                best = oc.program
    stage.best, s.improved = best, best is not before
