"""TTT-Discover's PUCT reuse over a bounded archive of states (SPEC §2).

    score(s) = Q(s) + c * scale * P(s) * sqrt(1 + T) / (1 + n(s))
    Q(s) = m(s) if n(s) > 0 else R(s)      (m: best child reward seen from s)
    P(s) = (|H| - rank(s)) / sum_s' (|H| - rank(s')),  rank 0 = best R
    scale = R_max - R_min over H

R is ``Program.fitness`` (higher is better), so one code path serves both directions.
The archive is bounded (top-``archive_size`` by R, plus seeds), so ``sample`` does O(|H| log |H|)
work (one sort for the ranks) plus O(depth) ancestor walks for the few states it inspects.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import Field

from evoforge.database.base import SELECTORS, ChildOutcome, Pick, Program, Selector
from evoforge.database.indexed import LazyMinHeap
from evoforge.selectors.options import (
    SelectorOptions,
    check_program,
    check_state,
    check_target,
    lookup,
    parse_options,
)


class PUCTOptions(SelectorOptions):
    c: float = Field(1.0, ge=0.0)  # exploration coefficient
    archive_size: int = Field(1000, ge=1)  # global top-K by R (seeds kept on top of it)
    children_per_parent: int = Field(2, ge=1)  # top-2 children per parent
    block_lineage: bool = True  # within one sample(k), block ancestors and descendants


def puct_scores(
    rewards: np.ndarray, m: np.ndarray, n: np.ndarray, total: int, c: float
) -> np.ndarray:
    """PUCT scores for states with rewards R, best-child rewards m (NaN: none yet), visit
    counts n and T = ``total`` expansions. Ranks break ties by position (earlier = better)."""
    size = len(rewards)
    if size == 0:
        return np.zeros(0)
    order = np.lexsort((np.arange(size), -rewards))  # best R first, then position
    rank = np.empty(size, dtype=np.float64)
    rank[order] = np.arange(size)
    prior = (size - rank) / (size * (size + 1) / 2.0)
    scale = float(rewards.max() - rewards.min())
    q = np.where((n > 0) & ~np.isnan(m), m, rewards)
    return q + c * scale * prior * math.sqrt(1.0 + total) / (1.0 + n)


@SELECTORS.register("puct")
class PUCT(Selector):
    name = "puct"
    VERSION = 1

    def __init__(self, rng: np.random.Generator, target: float | None = None, **options: Any):
        super().__init__(rng)
        self.options = parse_options(PUCTOptions, self.name, options)
        self.target = check_target(target)
        self._programs: dict[int, Program] = {}  # the archive H
        self._parent_of: dict[int, int | None] = {}  # every program ever added (lineage)
        self._seeds: set[int] = set()
        self._m: dict[int, float] = {}  # best child fitness, absent while none
        self._n: dict[int, int] = {}
        self._total = 0  # T
        self._children: dict[int, list[int]] = {}  # parent id -> its children in H
        self._trim: LazyMinHeap[int] = LazyMinHeap()  # non-seed members by (R, id)
        self._best: Program | None = None

    # ---- archive -------------------------------------------------------------------
    def add(self, program: Program) -> None:
        check_program(program)
        pid = program.id
        if pid in self._programs:
            return
        # Not "pid in _parent_of": a resumed archive knows the lineage of every stored program,
        # including those its replay is about to add again.
        is_seed = program.parent_id is None or not self._seeds
        self._parent_of[pid] = program.parent_id
        if self._best is None or program.fitness > self._best.fitness:
            self._best = program
        self._programs[pid] = program
        self._n[pid] = 0
        if is_seed:
            self._seeds.add(pid)  # seeds are kept whatever their score
            return
        self._trim.push((program.fitness, pid), pid)
        siblings = self._children.setdefault(program.parent_id, [])
        siblings.append(pid)
        if len(siblings) > self.options.children_per_parent:
            worst = min(siblings, key=lambda i: (self._programs[i].fitness, -i))
            self._remove(worst)
        while len(self._programs) - len(self._seeds) > self.options.archive_size:
            _, victim = self._trim.pop()
            self._remove(victim)

    def _remove(self, pid: int) -> None:
        program = self._programs.pop(pid)
        self._trim.discard(pid)
        self._m.pop(pid, None)
        self._n.pop(pid, None)
        siblings = self._children.get(program.parent_id)  # type: ignore[arg-type]
        if siblings is not None:
            siblings.remove(pid)
            if not siblings:
                del self._children[program.parent_id]  # type: ignore[arg-type]

    def _ancestors(self, pid: int) -> list[int]:
        out = []
        parent = self._parent_of.get(pid)
        while parent is not None:
            out.append(parent)
            if len(out) > len(self._parent_of):  # only a corrupt lineage can loop
                raise ValueError(f"puct: program {pid} has a cyclic lineage")
            parent = self._parent_of.get(parent)
        return out

    # ---- selection -----------------------------------------------------------------
    def scores(self) -> dict[int, float]:
        """The current PUCT score of every state in H (for tests and display)."""
        ids, scores = self._scored()
        return dict(zip(ids, scores.tolist()))

    def _scored(self) -> tuple[list[int], np.ndarray]:
        ids = list(self._programs)
        rewards = np.fromiter((self._programs[i].fitness for i in ids), float, len(ids))
        m = np.fromiter((self._m.get(i, math.nan) for i in ids), float, len(ids))
        n = np.fromiter((self._n[i] for i in ids), float, len(ids))
        return ids, puct_scores(rewards, m, n, self._total, self.options.c)

    def sample(self, k: int) -> list[Pick]:
        if not self._programs:
            raise RuntimeError("puct: sample() before any program was added")
        ids, scores = self._scored()
        rewards = [self._programs[i].fitness for i in ids]
        # Highest score first; ties to the better R, then to the older state (deterministic).
        order = sorted(range(len(ids)), key=lambda j: (-scores[j], -rewards[j], ids[j]))
        ranked = [ids[j] for j in order]
        score_of = {ids[j]: float(scores[j]) for j in order}
        chosen: list[int] = []
        this_round: list[int] = []  # picks since the blocking last restarted
        blocked: set[int] = set()
        lineage: dict[int, set[int]] = {}  # per call cache of ancestor sets
        for _ in range(k):
            pid = self._next_unblocked(ranked, this_round, blocked, lineage)
            if pid is None:  # every state is blocked: allow repeats, restart the blocking
                blocked.clear()
                this_round = []
                pid = self._next_unblocked(ranked, this_round, blocked, lineage)
                assert pid is not None
            chosen.append(pid)
            this_round.append(pid)
            if self.options.block_lineage:
                blocked.add(pid)
                blocked.update(self._ancestor_set(pid, lineage))
        return [
            Pick(
                parent=self._programs[pid],
                context={"selector": self.name, "puct": score_of[pid], "n": self._n[pid]},
            )
            for pid in chosen
        ]

    def _ancestor_set(self, pid: int, cache: dict[int, set[int]]) -> set[int]:
        found = cache.get(pid)
        if found is None:
            found = cache[pid] = set(self._ancestors(pid))
        return found

    def _next_unblocked(
        self, ranked: list[int], chosen: list[int], blocked: set[int], cache: dict[int, set[int]]
    ) -> int | None:
        if not self.options.block_lineage:
            return ranked[0]
        chosen_set = set(chosen)
        for pid in ranked:
            if pid in blocked:
                continue
            # A descendant of a chosen state has it among its ancestors.
            if chosen_set and not chosen_set.isdisjoint(self._ancestor_set(pid, cache)):
                blocked.add(pid)
                continue
            return pid
        return None

    def observe(self, pick: Pick, outcomes: list[ChildOutcome]) -> None:
        pid = pick.parent.id
        rewards = [o.fitness for o in outcomes if o.fitness is not None]
        if rewards and pid in self._programs:
            y = max(rewards)
            self._m[pid] = max(self._m.get(pid, -math.inf), y)
        for a in [pid, *self._ancestors(pid)]:
            if a in self._n:
                self._n[a] += 1
        self._total += 1

    def __len__(self) -> int:
        return len(self._programs)

    # ---- persistence ---------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "selector": self.name,
            "version": self.VERSION,
            "archive": list(self._programs),  # insertion order matters for ties
            "seeds": sorted(self._seeds),
            "m": [[i, v] for i, v in self._m.items()],
            "n": [self._n[i] for i in self._programs],
            "T": self._total,
            "best": None if self._best is None else self._best.id,
            "children": [[p, list(c)] for p, c in self._children.items()],
        }

    def load_state_dict(self, state: dict[str, Any], programs: dict[int, Program]) -> None:
        check_state(state, self.name, self.VERSION)
        self.__init__(self.rng, self.target, **self.options.model_dump())  # type: ignore[misc]
        for p in programs.values():  # the lineage of every stored program
            self._parent_of[p.id] = p.parent_id
        self._seeds = {int(i) for i in state["seeds"]}
        for pid, visits in zip(state["archive"], state["n"]):
            p = lookup(programs, pid, self.name)
            self._programs[p.id] = p
            self._n[p.id] = int(visits)
            if p.id not in self._seeds:
                self._trim.push((p.fitness, p.id), p.id)
        self._m = {int(i): float(v) for i, v in state["m"]}
        self._children = {int(p): [int(c) for c in cs] for p, cs in state["children"]}
        self._total = int(state["T"])
        self._best = None if state["best"] is None else lookup(programs, state["best"], self.name)
