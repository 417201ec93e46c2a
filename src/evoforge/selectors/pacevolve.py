"""PACEvolve's islands with momentum-based backtracking and collaborative evolution (SPEC §3).

Each island is one line of search that starts from the seed. One *iteration* of an island is
one observed pick from it: its children join the island's pool, the island's best fitness
f_t is updated, and so are the relative progress R_t and the momentum m_t. When m_t falls
below ``eps_rel`` (once ``warmup`` iterations have passed since the island's last restart),
the island *triggers* and draws an action from the collaborative-evolution distribution:

* Backtrack: revert the island to one of its earlier best-checkpoints (the iterations where
  its best improved, plus its start), drawn from a power law over how far back it lies
  (d = 1, the checkpoint of the current best, is the most likely): the pool entries added
  after that checkpoint (the failed recent history) are discarded.
* Crossover_j: the island's next pick carries ``partner`` = island j's best, so the prompt
  shows both parents and the child (which joins island i) crosses them.

Either way the momentum and the warm-up restart. Target: the task's best known value (fitness
orientation) while it is still above every fitness seen; otherwise (unknown or beaten) the
fallback ``best seen + target_margin * max(|best - start|, |best|)`` so gaps never vanish.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from pydantic import Field

from evoforge.database.base import SELECTORS, ChildOutcome, Pick, Program, Selector
from evoforge.selectors import pacevolve_math as pm
from evoforge.selectors.options import (
    SelectorOptions,
    SelectorStateError,
    check_program,
    check_state,
    check_target,
    lookup,
    parse_options,
)


class PACEvolveOptions(SelectorOptions):
    num_islands: int = Field(4, ge=1)
    beta: float = Field(0.8, ge=0.0, lt=1.0)  # momentum decay
    eps_rel: float = Field(0.05, ge=0.0)  # trigger threshold on the momentum
    warmup: int = Field(5, ge=0)  # iterations after a (re)start without any trigger
    initial_momentum: float = Field(1.0, ge=0.0)  # optimistic start: stagnation must persist
    backtrack_alpha: float = Field(1.5, ge=0.0)  # power-law exponent over checkpoints back
    exploit_best: float = Field(0.7, ge=0.0, le=1.0)  # P(parent = island best), else pool
    pool_size: int = Field(1000, ge=1)  # an island keeps (and draws from) its latest programs
    max_checkpoints: int = Field(64, ge=2)  # backtrack targets kept per island (start kept)
    target_margin: float = Field(0.05, gt=0.0)


@dataclass
class Island:
    pool: list[int]  # program ids in the island's recent history, oldest first
    best: int
    start: float  # f_0
    momentum: float
    since_reset: int = 0
    iteration: int = 0
    # [iteration, best id, absolute pool length] at the start and at each new best
    checkpoints: list[list[int]] = field(default_factory=list)
    dropped: int = 0  # oldest pool entries trimmed away (pool lengths above are absolute)
    partner: int | None = None  # island whose best crosses with ours at the next pick
    triggers: int = 0
    backtracks: int = 0
    crossovers: int = 0


@SELECTORS.register("pacevolve")
class PACEvolve(Selector):
    name = "pacevolve"
    VERSION = 1

    def __init__(self, rng: np.random.Generator, target: float | None = None, **options: Any):
        super().__init__(rng)
        self.options = parse_options(PACEvolveOptions, self.name, options)
        self.target = check_target(target)
        self.islands: list[Island] = []
        self._programs: dict[int, Program] = {}  # programs in some island pool
        self._fresh: dict[int, Program] = {}  # added, not yet placed by observe()
        self._seeds: list[int] = []
        self._best: Program | None = None
        self._cursor = 0  # island of the next pick (rotation)
        self._batch_target: float | None = None

    # ---- population ----------------------------------------------------------------
    def add(self, program: Program) -> None:
        check_program(program)
        if program.id in self._programs or program.id in self._fresh:
            return
        is_seed = program.parent_id is None or not self._seeds
        if self._best is None or program.fitness > self._best.fitness:
            self._best = program
        if not is_seed:
            self._fresh[program.id] = program  # its island is known at observe()
            return
        self._seeds.append(program.id)
        self._programs[program.id] = program
        if not self.islands:  # every island starts from the first seed
            self.islands = [
                Island([program.id], program.id, program.fitness, self.options.initial_momentum,
                       checkpoints=[[0, program.id, 1]])
                for _ in range(self.options.num_islands)
            ]
            return
        island = self.islands[(len(self._seeds) - 1) % len(self.islands)]
        island.pool.append(program.id)
        if program.fitness > self._fitness(island.best):
            island.best = program.id
            self._checkpoint(island)

    def _fitness(self, pid: int) -> float:
        return self._programs[pid].fitness

    def effective_target(self) -> float:
        """The target r in fitness orientation (see the module docstring)."""
        assert self._best is not None
        best = self._best.fitness
        if self.target is not None and self.target > best:
            return self.target
        start = self.islands[0].start if self.islands else best
        return pm.fallback_target(best, start, self.options.target_margin)

    # ---- selection -----------------------------------------------------------------
    def sample(self, k: int) -> list[Pick]:
        if not self.islands:
            raise RuntimeError("pacevolve: sample() before any program was added")
        self._fresh.clear()  # children of the last batch that never reached observe()
        # One target per batch: the fallback moves with the best, and the batch's children
        # must all be measured against the gap as it stood when they were sampled.
        self._batch_target = self.effective_target()
        picks = []
        for _ in range(k):
            index = self._cursor
            self._cursor = (self._cursor + 1) % len(self.islands)
            picks.append(self._pick(index))
        return picks

    def _pick(self, index: int) -> Pick:
        island = self.islands[index]
        context: dict[str, Any] = {"selector": self.name, "island": index}
        if island.partner is not None:
            partner_island, island.partner = island.partner, None
            partner = self.islands[partner_island].best
            if partner != island.best:
                context.update(action="crossover", partner_island=partner_island)
                return Pick(self._programs[island.best], partner=self._programs[partner],
                            context=context)
        if len(island.pool) <= 1 or self.rng.random() < self.options.exploit_best:
            parent = island.best
        else:
            window = min(len(island.pool), self.options.pool_size)
            parent = island.pool[-1 - int(self.rng.integers(window))]
        return Pick(self._programs[parent], context=context)

    def observe(self, pick: Pick, outcomes: list[ChildOutcome]) -> None:
        index = pick.context.get("island")
        if not isinstance(index, int) or not 0 <= index < len(self.islands):
            raise ValueError(f"pacevolve: pick without a valid island in its context ({index!r})")
        island = self.islands[index]
        target = self._batch_target if self._batch_target is not None else self.effective_target()
        prev_best = self._fitness(island.best)
        for outcome in outcomes:
            program = outcome.program
            if program is None or program.id in self._programs:
                continue
            self._fresh.pop(program.id, None)
            self._programs[program.id] = program
            island.pool.append(program.id)
            if program.fitness > self._fitness(island.best):
                island.best = program.id
        island.iteration += 1
        new_best = self._fitness(island.best)
        if new_best > prev_best:
            self._checkpoint(island)
        self._trim(island)
        progress = pm.relative_progress(prev_best, new_best, target)
        island.momentum = pm.momentum_update(island.momentum, progress, self.options.beta)
        island.since_reset += 1
        if island.since_reset >= self.options.warmup and island.momentum < self.options.eps_rel:
            self._collaborate(index, target)

    def _collaborate(self, index: int, target: float) -> None:
        island = self.islands[index]
        island.triggers += 1
        progress = [
            pm.absolute_progress(isl.start, self._fitness(isl.best), target) for isl in self.islands
        ]
        others = {j: a for j, a in enumerate(progress) if j != index}
        probs = pm.ce_probabilities(progress[index], others)
        actions = [pm.BACKTRACK, *sorted(j for j in probs if j != pm.BACKTRACK)]
        p = np.array([probs[a] for a in actions], dtype=np.float64)
        action = actions[int(self.rng.choice(len(actions), p=p / p.sum()))]
        if action == pm.BACKTRACK:
            self._backtrack(island)
        else:
            island.partner = int(action)
            island.crossovers += 1
        island.momentum = self.options.initial_momentum
        island.since_reset = 0

    def _backtrack(self, island: Island) -> None:
        island.backtracks += 1
        count = len(island.checkpoints)
        back = pm.power_law_choice(count, self.options.backtrack_alpha, self.rng)
        keep = count - back  # index of the checkpoint we return to
        _, best, pool_len = island.checkpoints[keep]
        gone = [c[1] for c in island.checkpoints[keep + 1 :]]
        del island.checkpoints[keep + 1 :]
        kept = max(0, pool_len - island.dropped)
        gone.extend(island.pool[kept:])
        del island.pool[kept:]
        island.best = best
        island.partner = None
        self._release(island, gone)

    def _checkpoint(self, island: Island) -> None:
        island.checkpoints.append([island.iteration, island.best, island.dropped + len(island.pool)])
        if len(island.checkpoints) > self.options.max_checkpoints:
            old = island.checkpoints.pop(1)  # the start stays: the deepest possible revert
            if old[1] not in island.pool:
                self._release(island, [old[1]])

    def _trim(self, island: Island) -> None:
        """Keep the pool bounded; cut in halves so the cost is amortised O(1) per child."""
        cap = self.options.pool_size
        if len(island.pool) > 2 * cap:
            cut = len(island.pool) - cap
            gone = island.pool[:cut]
            del island.pool[:cut]
            island.dropped += cut
            self._release(island, gone)

    def _release(self, island: Island, pids: list[int]) -> None:
        """Forget programs the island no longer needs (not seeds, checkpoints or its best).
        Only seeds are shared between islands, so no other island can hold them."""
        needed = {c[1] for c in island.checkpoints}
        needed.add(island.best)
        for pid in pids:
            if pid not in needed and pid not in self._seeds:
                self._programs.pop(pid, None)

    def __len__(self) -> int:
        return len(self._programs)

    # ---- persistence ---------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "selector": self.name,
            "version": self.VERSION,
            "islands": [asdict(isl) for isl in self.islands],
            "fresh": list(self._fresh),
            "seeds": list(self._seeds),
            "best": None if self._best is None else self._best.id,
            "cursor": self._cursor,
            "batch_target": self._batch_target,
        }

    def load_state_dict(self, state: dict[str, Any], programs: dict[int, Program]) -> None:
        check_state(state, self.name, self.VERSION)
        self.islands = [Island(**isl) for isl in state["islands"]]
        if self.islands and len(self.islands) != self.options.num_islands:
            raise SelectorStateError(
                f"pacevolve: saved state has {len(self.islands)} islands, "
                f"options ask for {self.options.num_islands}"
            )
        self._programs = {}
        for isl in self.islands:
            for pid in [*isl.pool, isl.best, *(c[1] for c in isl.checkpoints), *state["seeds"]]:
                self._programs[int(pid)] = lookup(programs, pid, self.name)
        self._fresh = {int(i): lookup(programs, i, self.name) for i in state["fresh"]}
        self._seeds = [int(i) for i in state["seeds"]]
        self._best = None if state["best"] is None else lookup(programs, state["best"], self.name)
        self._cursor = int(state["cursor"])
        bt = state["batch_target"]
        self._batch_target = None if bt is None else float(bt)
