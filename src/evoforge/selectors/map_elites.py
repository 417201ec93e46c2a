"""OpenEvolve / ThetaEvolve program database: islands of MAP-Elites grids, an elite archive,
a population limit, ring migration and exploration / exploitation / random parent sampling.

Members are *entries* (program id, island): a migrant is a copy of a program in another
island, an entry marked ``migrant`` that is never migrated again (OpenEvolve creates a new
program for it; here it shares the program, so the run store holds no duplicates). The
population limit counts entries, as OpenEvolve counts copies.

Cost per operation, N = entries: insert O(log N) (heap pushes, O(1) grid and archive
updates, O(len(code)) features), eviction of the worst O(log N) amortised (lazy min-heap),
each parent draw O(1) (index sets with swap-remove). Migration, every ``migration_interval``
generations, copies the top k of each island (a heap per island: O(k log N)), with
k = min(rate * island size, ``migration_cap``).
"""
from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from evoforge.database.base import SELECTORS, Pick, Program, Selector
from evoforge.database.indexed import IndexedSet, LazyMinHeap
from evoforge.selectors.features import BUILTIN, FeatureSpace
from evoforge.selectors.options import (
    SelectorOptions,
    SelectorStateError,
    check_program,
    check_state,
    check_target,
    lookup,
    parse_options,
)

# population / archive / islands (ThetaEvolve's sizes)
SIZES: dict[str, tuple[int, int, int]] = {
    "small": (70, 25, 5),
    "medium": (1000, 100, 10),
    "large": (10000, 1000, 10),
}


class MapElitesOptions(SelectorOptions):
    size: Literal["small", "medium", "large"] = "large"
    population_size: int | None = Field(None, ge=1)  # explicit numbers override ``size``
    archive_size: int | None = Field(None, ge=1)
    num_islands: int | None = Field(None, ge=1)
    feature_dimensions: tuple[str, ...] = ("complexity", "diversity")
    feature_bins: int = Field(10, ge=1)
    migration_interval: int = Field(50, ge=1)  # generations (picks) of the most advanced island
    migration_rate: float = Field(0.1, ge=0.0, le=1.0)
    # OpenEvolve sends rate * island size. The cap (per island and migration) changes nothing
    # at the paper's sizes (large: 0.1 * 1000 = 100) and keeps bigger populations flat in cost.
    migration_cap: int | None = Field(100, ge=1)
    exploration_ratio: float = Field(0.2, ge=0.0, le=1.0)
    exploitation_ratio: float = Field(0.7, ge=0.0, le=1.0)
    num_inspirations: int = Field(0, ge=0)  # ThetaEvolve is parent-only

    @model_validator(mode="after")
    def _check(self) -> "MapElitesOptions":
        if self.exploration_ratio + self.exploitation_ratio > 1.0 + 1e-12:
            raise ValueError("exploration_ratio + exploitation_ratio must not exceed 1")
        if not self.feature_dimensions:
            raise ValueError(f"feature_dimensions must name at least one of {BUILTIN} or a metric")
        return self


class _Entry:
    __slots__ = ("pid", "island", "migrant", "cell", "fitness")

    def __init__(self, pid: int, island: int, migrant: bool, cell: tuple[int, ...], fitness: float):
        self.pid, self.island, self.migrant, self.cell, self.fitness = pid, island, migrant, cell, fitness


@SELECTORS.register("map-elites")
class MapElites(Selector):
    name = "map-elites"
    VERSION = 1

    def __init__(self, rng: np.random.Generator, target: float | None = None, **options: Any):
        super().__init__(rng)
        self.options = o = parse_options(MapElitesOptions, self.name, options)
        self.target = check_target(target)
        pop, arch, isl = SIZES[o.size]
        self.population_size = o.population_size or pop
        self.archive_size = o.archive_size or arch
        self.num_islands = o.num_islands or isl
        self._reset()

    def _reset(self) -> None:
        n = self.num_islands
        self.features = FeatureSpace(list(self.options.feature_dimensions), self.options.feature_bins)
        self._programs: dict[int, Program] = {}
        self._refs: dict[int, int] = {}  # program id -> number of its entries
        self._entries: dict[int, _Entry] = {}
        self._all: IndexedSet[int] = IndexedSet()
        self._members: list[IndexedSet[int]] = [IndexedSet() for _ in range(n)]
        self._island_pid: list[dict[int, int]] = [{} for _ in range(n)]
        self._grids: list[dict[tuple[int, ...], int]] = [{} for _ in range(n)]
        self._cells: list[IndexedSet[tuple[int, ...]]] = [IndexedSet() for _ in range(n)]
        self._archive: IndexedSet[int] = IndexedSet()
        self._archive_of: list[IndexedSet[int]] = [IndexedSet() for _ in range(n)]
        self._archive_heap: LazyMinHeap[int] = LazyMinHeap()
        self._population_heap: LazyMinHeap[int] = LazyMinHeap()
        # per island, fittest first (key (-fitness, eid)): migration's top-k in O(k log N)
        self._island_top: list[LazyMinHeap[int]] = [LazyMinHeap() for _ in range(n)]
        self._best: Program | None = None
        self._reference_pid: int | None = None
        self._next_eid = 0
        self._current = 0  # island of the next pick
        self._generations = [0] * n
        self._last_migration = 0
        self._pending: dict[int, int] = {}  # parent id -> island of its first pick this batch
        self.migrations = 0

    # ---- insertion -----------------------------------------------------------------
    def add(self, program: Program) -> None:
        check_program(program)
        if program.id in self._refs:
            return
        if self._reference_pid is None:  # the seed: reference of the diversity feature
            self._reference_pid = program.id
            self.features.set_reference(program.code)
            for island in range(self.num_islands):  # every island starts from the seed
                self._insert(program, island, migrant=False)
            return
        self._insert(program, self._island_for(program.parent_id), migrant=False)

    def _island_for(self, parent_id: int | None) -> int:
        """Children join the island their parent was picked for (the first such pick of
        the batch); else an island that holds the parent; else the current island."""
        if parent_id is not None:
            if parent_id in self._pending:
                return self._pending[parent_id]
            for island, pids in enumerate(self._island_pid):
                if parent_id in pids:
                    return island
        return self._current

    def _insert(
        self, program: Program, island: int, migrant: bool, cell: tuple[int, ...] | None = None
    ) -> None:
        if program.id in self._island_pid[island]:
            return  # already there: copies never duplicate a member
        eid = self._next_eid
        self._next_eid += 1
        if cell is None:  # a copy keeps its original's cell (no second feature pass)
            cell = self.features.cell(program)
        entry = _Entry(program.id, island, migrant, cell, program.fitness)
        self._register(eid, entry, program)
        grid = self._grids[island]
        holder = grid.get(entry.cell)
        if holder is None or entry.fitness > self._entries[holder].fitness:
            grid[entry.cell] = eid  # the better program keeps the cell
            self._cells[island].add(entry.cell)
        self._update_archive(eid, entry)
        if self._best is None or program.fitness > self._best.fitness:
            self._best = program
        self._enforce_population_limit()

    def _register(self, eid: int, entry: _Entry, program: Program) -> None:
        self._population_heap.push((entry.fitness, eid), eid)
        self._island_top[entry.island].push((-entry.fitness, eid), eid)
        self._entries[eid] = entry
        self._all.add(eid)
        self._members[entry.island].add(eid)
        self._island_pid[entry.island][entry.pid] = eid
        self._programs[entry.pid] = program
        self._refs[entry.pid] = self._refs.get(entry.pid, 0) + 1

    def _update_archive(self, eid: int, entry: _Entry) -> None:
        if len(self._archive) >= self.archive_size:
            (worst_fitness, worst), _ = self._archive_heap.peek()
            if not entry.fitness > worst_fitness:
                return
            self._archive_heap.pop()
            self._archive.discard(worst)
            self._archive_of[self._entries[worst].island].discard(worst)
        self._archive.add(eid)
        self._archive_of[entry.island].add(eid)
        self._archive_heap.push((entry.fitness, eid), eid)

    def _enforce_population_limit(self) -> None:
        best = self._best.id if self._best is not None else None
        while len(self._entries) > self.population_size:
            found = self._population_heap.pop_first(lambda e: self._entries[e].pid == best)
            if found is None:
                break
            self._remove(found[1])

    def _remove(self, eid: int) -> None:
        entry = self._entries.pop(eid)
        self._all.discard(eid)
        self._members[entry.island].discard(eid)
        del self._island_pid[entry.island][entry.pid]
        if self._grids[entry.island].get(entry.cell) == eid:
            del self._grids[entry.island][entry.cell]
            self._cells[entry.island].discard(entry.cell)
        if eid in self._archive:
            self._archive.discard(eid)
            self._archive_of[entry.island].discard(eid)
            self._archive_heap.discard(eid)
        self._population_heap.discard(eid)
        self._island_top[entry.island].discard(eid)
        self._refs[entry.pid] -= 1
        if not self._refs[entry.pid]:
            del self._refs[entry.pid]
            del self._programs[entry.pid]

    # ---- migration -----------------------------------------------------------------
    def _due_for_migration(self) -> bool:
        gap = max(self._generations) - self._last_migration
        return self.num_islands > 1 and self.options.migration_rate > 0 and gap >= self.options.migration_interval

    def migrate(self) -> None:
        """Ring migration: each island sends copies of its best non-migrant members to both
        neighbours. Chosen for every island first, so the order of islands does not matter."""
        n = self.num_islands
        moves: list[tuple[int, int]] = []
        for island in range(n):
            members = self._members[island]
            if not members:
                continue
            # OpenEvolve: the top rate * size of the island, of which migrants stay home
            count = max(1, int(len(members) * self.options.migration_rate))
            if self.options.migration_cap is not None:
                count = min(count, self.options.migration_cap)
            top = [e for _, e in self._island_top[island].smallest(count)]
            natives = [e for e in top if not self._entries[e].migrant]
            for target in sorted({(island + 1) % n, (island - 1) % n} - {island}):
                moves.extend((target, e) for e in natives)
        for target, eid in moves:
            entry = self._entries.get(eid)  # may have been evicted by an earlier copy
            if entry is not None:
                self._insert(self._programs[entry.pid], target, migrant=True, cell=entry.cell)
        self._last_migration = max(self._generations)
        self.migrations += 1

    # ---- selection -----------------------------------------------------------------
    def sample(self, k: int) -> list[Pick]:
        if not self._entries:
            raise RuntimeError("map-elites: sample() before any program was added")
        self._pending = {}
        if self._due_for_migration():
            self.migrate()
        picks = []
        for _ in range(k):
            island = self._current
            self._current = (island + 1) % self.num_islands
            eid, how = self._choose(island)
            entry = self._entries[eid]
            self._generations[island] += 1
            self._pending.setdefault(entry.pid, island)
            inspirations = self._inspirations(entry.pid, island) if self.options.num_inspirations else []
            context = {"selector": self.name, "island": island, "how": how}
            picks.append(Pick(self._programs[entry.pid], inspirations, context=context))
        return picks

    def _choose(self, island: int) -> tuple[int, str]:
        r = self.rng.random()
        o = self.options
        if r < o.exploration_ratio:
            pool, how = self._members[island], "exploration"
        elif r < o.exploration_ratio + o.exploitation_ratio:
            pool, how = (self._archive_of[island] or self._archive), "exploitation"
        else:
            pool, how = self._all, "random"
        if not pool:
            pool = self._all
        return pool.choice(self.rng), how

    def _inspirations(self, parent: int, island: int) -> list[Program]:
        """The best program, then alternately an elite of the island's archive (top) and the
        elite of a random occupied cell of the island's grid (diverse)."""
        n = self.options.num_inspirations
        seen, out = {parent}, []

        def take(pid: int) -> None:
            if pid not in seen and len(out) < n:
                seen.add(pid)
                out.append(self._programs[pid])

        if self._best is not None:
            take(self._best.id)
        for attempt in range(3 * n):
            if len(out) >= n:
                break
            if attempt % 2 == 0:
                elites = self._archive_of[island] or self._archive
                if elites:
                    take(self._entries[elites.choice(self.rng)].pid)
            elif self._cells[island]:
                cell = self._cells[island].choice(self.rng)
                take(self._entries[self._grids[island][cell]].pid)
        return out

    def __len__(self) -> int:
        return len(self._entries)

    # ---- views for tests and pictures ----------------------------------------------
    def island_of(self, program_id: int) -> list[int]:
        return [i for i, pids in enumerate(self._island_pid) if program_id in pids]

    def island_sizes(self) -> list[int]:
        return [len(m) for m in self._members]

    def grid(self, island: int) -> dict[tuple[int, ...], int]:
        """cell -> program id of its elite."""
        return {c: self._entries[e].pid for c, e in self._grids[island].items()}

    def archive_ids(self) -> list[int]:
        return [self._entries[e].pid for e in self._archive]

    def is_migrant(self, program_id: int, island: int) -> bool:
        return self._entries[self._island_pid[island][program_id]].migrant

    # ---- persistence ---------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "selector": self.name,
            "version": self.VERSION,
            "sizes": [self.population_size, self.archive_size, self.num_islands],
            "entries": [
                [e, x.pid, x.island, int(x.migrant), list(x.cell)]
                for e in self._all
                for x in (self._entries[e],)
            ],
            "members": [m.to_list() for m in self._members],
            "grids": [[[list(c), self._grids[i][c]] for c in self._cells[i]] for i in range(self.num_islands)],
            "archive": self._archive.to_list(),
            "archive_of": [a.to_list() for a in self._archive_of],
            "ranges": self.features.ranges,
            "reference": self._reference_pid,
            "best": None if self._best is None else self._best.id,
            "next_eid": self._next_eid,
            "current": self._current,
            "generations": list(self._generations),
            "last_migration": self._last_migration,
            "pending": [[p, i] for p, i in self._pending.items()],
            "migrations": self.migrations,
        }

    def load_state_dict(self, state: dict[str, Any], programs: dict[int, Program]) -> None:
        check_state(state, self.name, self.VERSION)
        sizes = [self.population_size, self.archive_size, self.num_islands]
        if list(state["sizes"]) != sizes:
            raise SelectorStateError(
                f"map-elites: saved population/archive/islands {state['sizes']} differ from the options {sizes}"
            )
        self._reset()
        for eid, pid, island, migrant, cell in state["entries"]:
            program = lookup(programs, pid, self.name)
            entry = _Entry(program.id, int(island), bool(migrant), tuple(cell), program.fitness)
            self._register(int(eid), entry, program)
        # The index sets' orders decide the random draws: restore them exactly.
        self._members = [IndexedSet(int(e) for e in m) for m in state["members"]]
        for island, cells in enumerate(state["grids"]):
            for cell, eid in cells:
                self._grids[island][tuple(cell)] = int(eid)
                self._cells[island].add(tuple(cell))
        self._archive = IndexedSet(int(e) for e in state["archive"])
        self._archive_of = [IndexedSet(int(e) for e in a) for a in state["archive_of"]]
        for eid in self._archive:
            self._archive_heap.push((self._entries[eid].fitness, eid), eid)
        self.features.ranges = {k: [float(v[0]), float(v[1])] for k, v in state["ranges"].items()}
        self._reference_pid = state["reference"]
        if self._reference_pid is not None:
            self.features.set_reference(lookup(programs, self._reference_pid, self.name).code)
        self._best = None if state["best"] is None else lookup(programs, state["best"], self.name)
        self._next_eid = int(state["next_eid"])
        self._current = int(state["current"])
        self._generations = [int(g) for g in state["generations"]]
        self._last_migration = int(state["last_migration"])
        self._pending = {int(p): int(i) for p, i in state["pending"]}
        self.migrations = int(state["migrations"])
