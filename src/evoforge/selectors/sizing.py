"""Search sizes that fit the evaluation budget: the map-elites database (size and selection
pressure) and the batch shape B x n, when the user has not set them.

Why (benchmarks/RESULTS.md, "Search quality at equal budget"): at a budget of a few thousand
evaluations two things decide the best score, and the paper's settings (sized for ~10^5) get
both wrong there:

* pressure: exploitation draws a parent uniformly from the island's part of the elite archive.
  ThetaEvolve's Large archive (1000) holds every program of a 3000-evaluation run, so the draw
  is uniform over the population: a random walk. An archive of ~1 % of the budget keeps the draw
  among the top programs; ThetaEvolve's three sizes sit on that line (small 25 ~ 2 500
  evaluations, medium 100 ~ 10^4, large 1000 ~ 10^5: "large databases lose early, win late").
* generations: a step's children all descend from the population as it was when the step
  began, so a run has budget / (B x n) generations. The paper's 32 x 16 gives 2 at 1000
  evaluations; OpenEvolve, one child in flight per island, has hundreds.

Pure functions of the budget (and the workers), so the engine resolves them once, at the start
of a run, and stores the result in the run's config: a resume with a raised budget keeps them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# Fewest generations (steps) a run should get: B x n shrinks until budget / (B x n) reaches it.
# Map-elites with its budget-sized archive climbs best with many small steps (2.07 at 4 x 2 on
# circle packing at 3000); greedy and PUCT exploit the best programs directly and were best with
# bigger steps (greedy 8 x 4: 2.06 / 2.15 / 2.02 on seeds 0-2 against 1.86 median at 4 x 2;
# PUCT 2.01 / 2.05 / 1.87 against 1.81): benchmarks/RESULTS.md, "Search quality at equal budget".
MIN_GENERATIONS = 250
MIN_GENERATIONS_OTHER = 90  # every selector but map-elites: the builtin's 8 x 4 stays at 3000
# The elite archive as a share of the budget, and the population as a multiple of the archive
# (ThetaEvolve's medium and large sizes: 10x).
ARCHIVE_SHARE = 0.01
POPULATION_PER_ARCHIVE = 10
SMALL, LARGE = (70, 25, 5), (10000, 1000, 10)  # ThetaEvolve's small and large (population, archive, islands)
ISLAND_EVALUATIONS = 1500  # one island per this many evaluations, 2 to 10 (ThetaEvolve: 10 at 10^4+)
# The options that, when the user gives any of them, mean "my sizes": nothing is filled in.
MAP_ELITES_SIZE_KEYS = ("size", "population_size", "archive_size", "num_islands")


@dataclass(frozen=True)
class DatabaseSize:
    population_size: int
    archive_size: int
    num_islands: int

    def as_options(self) -> dict[str, int]:
        return asdict(self)


def _check_budget(budget: int) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be a positive integer, got {budget!r}")
    return budget


def database_for_budget(budget: int) -> DatabaseSize:
    """Map-elites sizes for ``budget`` evaluations: archive ~1 % of the budget between
    ThetaEvolve's small (25) and large (1000), population 10x the archive (at least small's 70),
    one island per 1500 evaluations between 2 and 10 (each island is a separate climb: at a
    few thousand evaluations more islands means shallower ones)."""
    _check_budget(budget)
    archive = min(LARGE[1], max(SMALL[1], round(budget * ARCHIVE_SHARE)))
    population = min(LARGE[0], max(SMALL[0], POPULATION_PER_ARCHIVE * archive))
    islands = min(LARGE[2], max(2, budget // ISLAND_EVALUATIONS))
    return DatabaseSize(population, archive, islands)


def min_generations(selector: str) -> int:
    return MIN_GENERATIONS if selector == "map-elites" else MIN_GENERATIONS_OTHER


def children_cap(budget: int, workers: int = 1, generations: int = MIN_GENERATIONS) -> int:
    """The most children per step that still gives the run ``generations`` steps (never
    fewer than ``workers``, which would leave parallel evaluations idle)."""
    _check_budget(budget)
    return max(int(workers), budget // generations, 1)


def batch_for_budget(budget: int, preferred: tuple[int, int] = (32, 16), workers: int = 1,
                     generations: int = MIN_GENERATIONS) -> tuple[int, int]:
    """The batch shape (B, n): the backend's ``preferred`` shape, halved (the larger of B and n
    first; on a tie n, down to 2, which GRPO needs for a group) until B x n fits
    ``children_cap(budget, workers, generations)``."""
    cap = children_cap(budget, workers, generations)
    b, n = (max(1, int(v)) for v in preferred)
    while b * n > cap and b * n > 1:
        if b > n or (b == n and n <= 2):
            b = max(1, b // 2)
        else:
            n = max(1, n // 2)
    return b, n


def _fit(fixed: int, free: int, cap: int) -> int:
    """Halve ``free`` until fixed x free fits ``cap`` (or free is 1)."""
    while free > 1 and fixed * free > cap:
        free //= 2
    return free


def selector_options_for_budget(selector: str, options: dict[str, Any], budget: int) -> dict[str, Any]:
    """``options`` with map-elites' sizes filled in from the budget when the user set none of
    them (``size: large`` or explicit numbers keep the paper's or their own); other selectors
    are returned unchanged (their archives are bounded caches, not the pressure knob)."""
    if selector != "map-elites" or any(k in options for k in MAP_ELITES_SIZE_KEYS):
        return dict(options)
    return {**options, **database_for_budget(budget).as_options()}


@dataclass(frozen=True)
class SearchPlan:
    """Everything the budget decides for one run (what the engine applies)."""

    batch_size: int
    n: int
    selector_options: dict[str, Any]


def plan_for_budget(
    budget: int,
    selector: str,
    selector_options: dict[str, Any],
    preferred: tuple[int, int],
    workers: int,
    batch_size: int | None = None,
    n: int | None = None,
) -> SearchPlan:
    """Resolve what the user left unset: B and n (one the user gives is kept and the other
    fitted to it), and map-elites' database sizes."""
    generations = min_generations(selector)
    if batch_size is None and n is None:
        batch_size, n = batch_for_budget(budget, preferred, workers, generations)
    elif n is None:
        n = _fit(batch_size, max(1, preferred[1]), children_cap(budget, workers, generations))
    elif batch_size is None:
        batch_size = _fit(n, max(1, preferred[0]), children_cap(budget, workers, generations))
    return SearchPlan(batch_size, n, selector_options_for_budget(selector, selector_options, budget))
