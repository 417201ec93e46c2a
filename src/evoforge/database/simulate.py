"""A model-free stand-in for the engine's loop, to exercise selectors (tests, benchmark).

It follows the engine's contract: ``sample(B)``, then every valid child is ``add``-ed in
order, then ``observe`` once per pick. Children get the parent's fitness plus noise (and a
varied code body so the MAP-Elites features spread); a share of them is penalised.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from evoforge.database.base import ChildOutcome, Pick, Program, Selector

SEED_CODE = "def solve():\n    x = 1\n    return x\n"


def seed_program(pid: int = 0, fitness: float = 0.0, code: str = SEED_CODE) -> Program:
    return Program(id=pid, code=code, score=fitness, fitness=fitness)


@dataclass
class World:
    """The fake environment: its own random stream, so the selector's stays untouched."""

    rng: np.random.Generator
    next_id: int = 1
    valid_share: float = 0.8
    noise: float = 0.1
    step: int = 0
    seconds_in_selector: float = 0.0
    children: int = 0
    log: list[list[int]] = field(default_factory=list)  # parent ids picked, per step
    created: dict[int, Program] = field(default_factory=dict)  # every valid child, by id

    def child(self, parent: Program) -> Program:
        pid = self.next_id
        self.next_id += 1
        fitness = parent.fitness + float(self.rng.normal(0.0, self.noise))
        # A body of 20-120 lines drawn from 300 variants: realistic sizes, varied features.
        body = self.rng.integers(0, 300, int(self.rng.integers(20, 121)))
        code = "def solve():\n    x = 1\n" + "".join(f"    y{v} = x + {v}\n" for v in body.tolist()) + "    return x\n"
        program = Program(id=pid, code=code, score=fitness, fitness=fitness, parent_id=parent.id, step=self.step)
        self.created[pid] = program
        return program

    def outcomes_for(self, pick: Pick, n: int) -> list[ChildOutcome]:
        out = []
        for _ in range(n):
            if self.rng.random() < self.valid_share:
                program = self.child(pick.parent)
                out.append(ChildOutcome("evaluated", program.fitness, program.fitness, program))
            else:
                out.append(ChildOutcome("invalid", -0.1, None, None))
        return out


def run_steps(
    selector: Selector,
    world: World,
    steps: int,
    batch: int,
    children: int,
    clock: Callable[[], float] = time.perf_counter,
) -> None:
    """Drive ``steps`` engine steps; time spent inside the selector goes to the world."""
    for _ in range(steps):
        t0 = clock()
        picks = selector.sample(batch)
        spent = clock() - t0
        world.log.append([p.parent.id for p in picks])
        results = [world.outcomes_for(pick, children) for pick in picks]
        t0 = clock()
        for outcomes in results:
            for o in outcomes:
                if o.program is not None:
                    selector.add(o.program)
        for pick, outcomes in zip(picks, results):
            selector.observe(pick, outcomes)
        world.seconds_in_selector += spent + clock() - t0
        world.children += batch * children
        world.step += 1
