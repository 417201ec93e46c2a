"""The stage contract: one engine step is a declared list of stages, run by one loop.

A stage is a small component with one job in a step (pick parents, write prompts, generate,
check, evaluate, feed the selector, learn, commit). The SAME loop runs a step live or in
replay (resume); the loop knows no individual stage. The rules every stage follows:

* **Store before use.** What a stage produces that cannot be recomputed (a model's responses,
  an evaluation, an idea it distilled) is written to ``run.db`` (its own table, created from
  ``Stage.tables`` through ``RunStore.ensure_tables``) before any other stage uses it. What
  is a deterministic function of stored data and of the stage's state (parents drawn by a
  seeded selector, prompts) need not be stored: replay recomputes it.
* **Live is idempotent.** ``run(s)`` first looks for what it already stored for step ``s.k``
  (a step cut short by a kill) and reuses it instead of producing it again.
* **Replay reads back.** ``replay(s)`` brings the stage's in-memory state to what it was after
  the finished step ``s.k``, from what it stored, without side effects outside the process
  (no generation, no evaluation, no training, no files). The default replay is ``run``: right
  for a stage that is a pure function of the blackboard (it must then write nothing).
* **Own your state.** ``state_dict()`` is JSON-able and small enough to snapshot every few
  seconds (None: nothing to snapshot); ``load_state_dict(state)`` restores exactly that
  (``state`` is None for a run that never snapshotted this stage, e.g. a stage added later:
  start empty and let replay catch up). No code outside a stage restores its state.

Resume (engine/loop.py, ``Engine._resume``) is therefore generic: load every stage's state from
the last snapshot, then run the loop in replay mode over the finished steps after it, then go
on live. A new stage gets resume for free by following the rules above.

Order inside a step: ``front`` stages (up to generation; they may run one step ahead in the
``overlap`` pipeline, from the database as it stood), then ``back`` stages (checks, evaluation,
selector feedback), then -- once any generation running ahead is finished and stored --
``tail`` stages (learning, commit), which may assume the backend is idle.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from evoforge.database.base import ChildOutcome, Pick
    from evoforge.database.store import ChildRow
    from evoforge.engine.loop import Engine
    from evoforge.llm.base import Prompt, Response


@dataclass
class StepState:
    """The blackboard one step carries through its stages (stage outputs, by convention)."""

    k: int  # step number (0 = the seed)
    replay: bool  # a finished step redone from the store: no side effects outside the process
    n_picks: int = 0  # B of this step (the loop fixes it before the front stages run)
    n: int = 0  # responses per prompt this step
    lag: int = 0  # steps the database lagged behind when the parents were drawn (overlap: 1)
    picks: list["Pick"] = field(default_factory=list)  # select
    prompts: list["Prompt"] = field(default_factory=list)  # prompt
    responses: list[list["Response"]] | None = None  # generate: fresh responses (None: read back)
    rows: list["ChildRow"] = field(default_factory=list)  # generate: the stored children
    by_pick: dict[int, list["ChildRow"]] = field(default_factory=dict)
    candidates: list[Any] = field(default_factory=list)  # check: survivors to evaluate
    outcomes: dict[int, list["ChildOutcome"]] = field(default_factory=dict)  # evaluate
    improved: bool = False  # evaluate: a new best this step
    metrics: dict[str, float] = field(default_factory=dict)  # learn: train metrics
    extra: dict[str, Any] = field(default_factory=dict)  # outputs of other stages, by stage name
    done: set[str] = field(default_factory=set)  # stages already run on this state (the loop's)


class Stage:
    """Base class of a stage; override what you need (see the module docstring)."""

    name: ClassVar[str] = "stage"
    # DDL of this stage's own tables in run.db ("CREATE TABLE IF NOT EXISTS ...; ..."), or ""
    tables: ClassVar[str] = ""
    # True for a front stage whose work may run in the background (``start`` then ``run``)
    background: ClassVar[bool] = False

    def bind(self, engine: "Engine") -> None:
        """Called once, before the first step: take the components you need (read-only)."""
        self.engine = engine

    def run(self, s: StepState) -> None:
        """Live: produce this step's output (reusing what was stored before a kill)."""

    def replay(self, s: StepState) -> None:
        """Finished step: rebuild the in-memory state from what was stored (default: ``run``)."""
        self.run(s)

    def start(self, s: StepState) -> None:
        """``background`` stages: begin the work of ``s`` ahead of time; ``run(s)`` collects it."""

    def state_dict(self) -> dict[str, Any] | None:
        """Called to snapshot the state after step ``self.engine.snapshot_step``."""
        return None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        pass

    def finish(self) -> None:
        """The run ended normally (budget, time or step limit): leave durable results (the final adapter)."""


@dataclass
class Pipeline:
    """The declared order of a step. ``insert`` places a new stage relative to a named one."""

    front: list[Stage]
    back: list[Stage]
    tail: list[Stage]

    def all(self) -> list[Stage]:
        return [*self.front, *self.back, *self.tail]

    def get(self, name: str) -> Stage:
        for st in self.all():
            if st.name == name:
                return st
        raise KeyError(f"no stage {name!r} (stages: {', '.join(st.name for st in self.all())})")

    def insert(self, stage: Stage, *, after: str | None = None, before: str | None = None) -> None:
        """Put ``stage`` right after (or before) the stage of that name, in that stage's part."""
        anchor = after or before
        if anchor is None or (after and before):
            raise ValueError("insert needs exactly one of after= / before=")
        if any(st.name == stage.name for st in self.all()):
            raise ValueError(f"stage {stage.name!r} is in the pipeline already")
        for part in (self.front, self.back, self.tail):
            for i, st in enumerate(part):
                if st.name == anchor:
                    part.insert(i + 1 if after else i, stage)
                    return
        raise KeyError(f"no stage {anchor!r} to insert {stage.name!r} next to")
