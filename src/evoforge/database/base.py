"""Records of the search and the Selector contract.

A ``Program`` is an evaluated, valid program: the only kind a selector may choose from.
Every child, penalised or not, is a ``ChildRecord`` in the run store (RL needs them all).
Selectors see ``fitness`` (higher is better whatever the task's direction).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evoforge.registry import Registry


@dataclass
class Program:
    id: int
    code: str
    score: float  # the verifier's raw score
    fitness: float  # score oriented so that higher is better
    parent_id: int | None = None
    step: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)
    canon_hash: str = ""
    feedback: str = ""  # stdout tail / verifier notes shown to the model with this program


@dataclass
class Pick:
    """One parent chosen for a prompt, with what else the selector wants shown."""

    parent: Program
    inspirations: list[Program] = field(default_factory=list)
    partner: Program | None = None  # crossover partner: the prompt shows both parents
    context: dict[str, Any] = field(default_factory=dict)  # selector-private (island, ...)


@dataclass
class ChildOutcome:
    """What became of one response to a pick (given back to the selector)."""

    child_class: str  # rewards.ChildClass value
    reward: float  # penalty or score (raw, not shaped)
    fitness: float | None  # for evaluated children, higher is better
    program: Program | None  # set iff the child entered the population


class Selector(ABC):
    """Chooses parents; owns the selectable population in memory.

    Contract with the engine (and with resume):
    * ``add`` is called for the seed and, in order, for every valid child after a batch;
    * ``sample`` is called once per step with the batch size; the children of that batch
      see the population as it was at sampling time;
    * ``observe`` is called once per pick after the batch, with all its outcomes;
    * ``state_dict`` is small and JSON-able (ids and statistics, never code);
      ``load_state_dict(state, programs)`` restores it given every stored Program by id.
    """

    name: str = "selector"
    _best: Program | None = None  # kept current by add()

    def __init__(self, rng: np.random.Generator, **options: Any):
        self.rng = rng

    @abstractmethod
    def add(self, program: Program) -> None: ...

    @abstractmethod
    def sample(self, k: int) -> list[Pick]: ...

    def observe(self, pick: Pick, outcomes: list[ChildOutcome]) -> None:  # noqa: B027
        pass

    def best(self) -> Program:
        if self._best is None:
            raise RuntimeError(f"{self.name}: no program yet")
        return self._best

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def state_dict(self) -> dict[str, Any]: ...

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any], programs: dict[int, Program]) -> None: ...


SELECTORS: Registry[Selector] = Registry("selector")
