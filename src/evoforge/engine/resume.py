"""Crash recovery: a run store with finished steps becomes a running engine again.

The selector is restored from its last snapshot and the finished steps after it are replayed
from the stored children: the selector draws the same parents again (it is deterministic given
its rng) and is fed the stored outcomes; nothing is generated or evaluated. Every replayed step
is checked against the store (its parents, the rng state after it), so a replay that would
diverge stops with an error instead. A step cut short by the kill is then finished by the loop.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from evoforge.database.store import ChildRow
from evoforge.edits import canonical_hash
from evoforge.edits.canonical import HASH_SCHEME
from evoforge.engine import outputs

if TYPE_CHECKING:
    from evoforge.engine.loop import Engine

log = logging.getLogger("evoforge")


def resume(engine: "Engine", last: dict[str, Any]) -> None:
    """Bring ``engine`` to the state it had after the last finished step ``last``."""
    from evoforge.engine.loop import EngineError

    store = engine.store
    if store.get_meta("hash_scheme") != HASH_SCHEME:  # written by another evoforge version
        store.rehash(canonical_hash)
        store.set_meta("hash_scheme", HASH_SCHEME)
    programs = {p.id: p for p in store.programs()}
    snapshot = store.snapshot()
    if snapshot is None:
        raise EngineError(f"{store.path} has finished steps but no selector snapshot: not a run store")
    engine._snapshot_step, state = snapshot
    engine.selector.load_state_dict(state, programs)
    engine.rng.bit_generator.state = store.step_row(engine._snapshot_step)["rng_state"]
    engine.known_hashes = set(store.evaluated_hashes())
    engine.best = max(programs.values(), key=lambda p: p.fitness) if programs else None
    for k in range(engine._snapshot_step + 1, last["step"] + 1):
        replay_step(engine, k)
    engine.evaluated = store.count_evaluations()
    engine.children = store.count_children(up_to_step=last["step"])
    engine.class_totals = store.class_counts(children_up_to_step=last["step"])
    engine.step_index = last["step"] + 1
    if engine.best is not None:  # the files may predate the kill
        outputs.write_best(engine.run_dir, engine.task, engine.best, store.get_object(engine.best.id))
    if engine.learner is not None:
        from evoforge.engine.training import resume_learner

        resume_learner(engine)
    log.info("resumed at step %d: %d evaluations, best %s", engine.step_index, engine.evaluated,
             engine.best.score if engine.best else None)


def replay_step(engine: "Engine", k: int) -> None:
    """Redo a finished step's selector work from its stored children."""
    from evoforge.engine.loop import EngineError

    by_pick: dict[int, list[ChildRow]] = {}
    for r in engine.store.step_children(k):
        by_pick.setdefault(r.pick, []).append(r)
    picks = engine.selector.sample(len(by_pick))
    if [p.parent.id for p in picks] != [by_pick[i][0].parent_id for i in range(len(picks))]:
        raise EngineError(f"resume: replaying step {k} drew other parents than the run did "
                          "(was the selector or its options changed?)")
    engine._feed_selector(picks, {i: [engine._outcome_of_stored(r) for r in by_pick[i]] for i in by_pick})
    if engine.rng.bit_generator.state != engine.store.step_row(k)["rng_state"]:
        raise EngineError(f"resume: replaying step {k} left the selector's random state elsewhere than the run")
