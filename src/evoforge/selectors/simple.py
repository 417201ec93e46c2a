"""The two reuse baselines of TTT-Discover's ablation: Best-of-N and epsilon-greedy."""
from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from evoforge.database.base import SELECTORS, Pick, Program, Selector
from evoforge.database.indexed import IndexedSet, LazyMinHeap
from evoforge.selectors.options import (
    SelectorOptions,
    check_program,
    check_state,
    check_target,
    lookup,
    parse_options,
)


class BestOfNOptions(SelectorOptions):
    pass


@SELECTORS.register("best-of-n")
class BestOfN(Selector):
    """Always prompts from the seed (the first program added): no reuse, the static baseline."""

    name = "best-of-n"
    VERSION = 1

    def __init__(self, rng: np.random.Generator, target: float | None = None, **options: Any):
        super().__init__(rng)
        self.options = parse_options(BestOfNOptions, self.name, options)
        self.target = check_target(target)
        self._seed: Program | None = None
        self._best: Program | None = None
        self._count = 0

    def add(self, program: Program) -> None:
        check_program(program)
        if self._seed is None:
            self._seed = program
        if self._best is None or program.fitness > self._best.fitness:
            self._best = program
        self._count += 1

    def sample(self, k: int) -> list[Pick]:
        if self._seed is None:
            raise RuntimeError("best-of-n: sample() before any program was added")
        return [Pick(parent=self._seed, context={"selector": self.name}) for _ in range(k)]

    def __len__(self) -> int:
        return self._count

    def state_dict(self) -> dict[str, Any]:
        return {
            "selector": self.name,
            "version": self.VERSION,
            "seed": None if self._seed is None else self._seed.id,
            "best": None if self._best is None else self._best.id,
            "count": self._count,
        }

    def load_state_dict(self, state: dict[str, Any], programs: dict[int, Program]) -> None:
        check_state(state, self.name, self.VERSION)
        self._seed = None if state["seed"] is None else lookup(programs, state["seed"], self.name)
        self._best = None if state["best"] is None else lookup(programs, state["best"], self.name)
        self._count = int(state["count"])


class GreedyOptions(SelectorOptions):
    epsilon: float = Field(0.1, ge=0.0, le=1.0)  # the seed gives no value; 0.1 is ours
    archive_size: int = Field(1000, ge=1)


@SELECTORS.register("greedy")
class EpsilonGreedy(Selector):
    """Epsilon-greedy state reuse: the best state, or with probability epsilon a uniformly
    random one of the archive (the top ``archive_size`` programs by fitness)."""

    name = "greedy"
    VERSION = 1

    def __init__(self, rng: np.random.Generator, target: float | None = None, **options: Any):
        super().__init__(rng)
        self.options = parse_options(GreedyOptions, self.name, options)
        self.target = check_target(target)
        self._programs: dict[int, Program] = {}
        self._members: IndexedSet[int] = IndexedSet()
        self._worst: LazyMinHeap[int] = LazyMinHeap()  # key (fitness, id): evicts the worst
        self._best: Program | None = None

    def add(self, program: Program) -> None:
        check_program(program)
        if program.id in self._programs:
            return
        if self._best is None or program.fitness > self._best.fitness:
            self._best = program
        self._programs[program.id] = program
        self._members.add(program.id)
        self._worst.push((program.fitness, program.id), program.id)
        while len(self._members) > self.options.archive_size:
            _, pid = self._worst.pop()
            self._members.discard(pid)
            del self._programs[pid]

    def sample(self, k: int) -> list[Pick]:
        if self._best is None:
            raise RuntimeError("greedy: sample() before any program was added")
        picks = []
        for _ in range(k):
            if self.rng.random() < self.options.epsilon:
                parent = self._programs[self._members.choice(self.rng)]
                how = "random"
            else:
                parent = self._best
                how = "best"
            picks.append(Pick(parent=parent, context={"selector": self.name, "how": how}))
        return picks

    def __len__(self) -> int:
        return len(self._members)

    def state_dict(self) -> dict[str, Any]:
        return {
            "selector": self.name,
            "version": self.VERSION,
            "members": self._members.to_list(),
            "best": None if self._best is None else self._best.id,
        }

    def load_state_dict(self, state: dict[str, Any], programs: dict[int, Program]) -> None:
        check_state(state, self.name, self.VERSION)
        self._programs, self._members, self._worst = {}, IndexedSet(), LazyMinHeap()
        for pid in state["members"]:
            p = lookup(programs, pid, self.name)
            self._programs[p.id] = p
            self._members.add(p.id)
            self._worst.push((p.fitness, p.id), p.id)
        self._best = None if state["best"] is None else lookup(programs, state["best"], self.name)
