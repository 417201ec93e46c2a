"""The budget-sized search: database sizes, selection pressure and the batch shape B x n."""
from __future__ import annotations

import numpy as np
import pytest

from evoforge.selectors import MapElites
from evoforge.selectors.map_elites import SIZES
from evoforge.selectors.sizing import (
    MIN_GENERATIONS,
    batch_for_budget,
    children_cap,
    database_for_budget,
    plan_for_budget,
    selector_options_for_budget,
)


@pytest.mark.parametrize("budget", [1, 50, 300, 1000, 3000, 10_000, 33_333, 100_000, 10**7])
def test_database_grows_with_the_budget_within_the_paper_sizes(budget):
    d = database_for_budget(budget)
    small, large = SIZES["small"], SIZES["large"]
    assert small[1] <= d.archive_size <= large[1]
    assert small[0] <= d.population_size <= large[0]
    assert 2 <= d.num_islands <= large[2]
    assert d.archive_size < d.population_size
    # MapElites accepts them as they are
    MapElites(np.random.default_rng(0), **d.as_options())


def test_database_sizes_meet_thetaevolves_at_their_budgets():
    # archive ~1 % of the budget: ThetaEvolve's large (1000) at 10^5, medium's 1000 / 100 at 10^4
    assert database_for_budget(100_000).as_options() == dict(zip(
        ("population_size", "archive_size", "num_islands"), SIZES["large"]))
    medium = database_for_budget(10_000)
    assert (medium.population_size, medium.archive_size) == SIZES["medium"][:2]
    # few islands at a few thousand evaluations: each island is a climb of its own
    assert database_for_budget(3000).num_islands == 2
    sizes = [database_for_budget(b) for b in (1000, 3000, 10_000, 30_000, 100_000)]
    assert [s.archive_size for s in sizes] == sorted(s.archive_size for s in sizes)
    # at a small budget the archive is a few per cent of it: exploitation draws from the top
    assert database_for_budget(3000).archive_size <= 0.02 * 3000


@pytest.mark.parametrize("budget, preferred, workers", [
    (1000, (32, 16), 2), (3000, (8, 4), 2), (3000, (32, 16), 2), (100, (8, 4), 2), (10**6, (32, 16), 2),
    (5000, (2, 4), 2), (1, (32, 16), 1), (3000, (8, 4), 16),
])
def test_batch_fits_the_budget(budget, preferred, workers):
    b, n = batch_for_budget(budget, preferred, workers)
    assert b >= 1 and n >= 1
    assert b <= preferred[0] and n <= preferred[1]  # only ever shrinks the backend's shape
    cap = children_cap(budget, workers)
    assert b * n <= max(cap, 1)
    if b * n < preferred[0] * preferred[1]:
        # shrunk only as far as needed: doubling either side again would pass the cap
        assert b * n * 2 > cap
    if budget // (b * n) < MIN_GENERATIONS:  # too few generations only when the workers demand it
        assert b * n <= workers


def test_batch_examples():
    assert batch_for_budget(1000, (32, 16), 2) == (2, 2)  # the paper's 32 x 16 would give 2 generations
    assert batch_for_budget(10**6, (32, 16), 2) == (32, 16)  # the paper's budgets keep the paper's shape
    assert batch_for_budget(100, (8, 4), 2) == (1, 2)  # never fewer children per step than workers
    assert batch_for_budget(3000, (8, 4), 2) == (4, 2)  # the builtin default at the default budget
    b, n = batch_for_budget(3000, (8, 4), 2)
    assert b * n <= 3000 // MIN_GENERATIONS


def test_selector_options_only_filled_when_the_user_set_no_size():
    auto = selector_options_for_budget("map-elites", {}, 3000)
    assert auto == database_for_budget(3000).as_options()
    kept = {"feature_bins": 5}
    assert selector_options_for_budget("map-elites", kept, 3000) == {**kept, **auto}
    for mine in ({"size": "large"}, {"archive_size": 7}, {"num_islands": 3}, {"population_size": 99}):
        assert selector_options_for_budget("map-elites", mine, 3000) == mine
    assert selector_options_for_budget("puct", {"c": 2.0}, 3000) == {"c": 2.0}
    assert selector_options_for_budget("greedy", {}, 3000) == {}


def test_plan_keeps_what_the_user_set():
    p = plan_for_budget(1000, "map-elites", {}, (32, 16), 2)
    assert (p.batch_size, p.n) == (2, 2) and p.selector_options == database_for_budget(1000).as_options()
    p = plan_for_budget(1000, "map-elites", {"size": "large"}, (32, 16), 2, batch_size=32, n=16)
    assert (p.batch_size, p.n, p.selector_options) == (32, 16, {"size": "large"})
    p = plan_for_budget(1000, "puct", {}, (32, 16), 2, batch_size=8)  # n fitted to the user's B
    assert p.batch_size == 8 and p.n == 1
    p = plan_for_budget(1000, "puct", {}, (32, 16), 2, n=4)  # B fitted to the user's n (>= 90 steps)
    assert p.n == 4 and p.batch_size == 2
    p = plan_for_budget(100_000, "puct", {}, (32, 16), 2, n=4)
    assert p.n == 4 and p.batch_size == 32


@pytest.mark.parametrize("bad", [0, -5, 2.5, True, None])
def test_bad_budget_is_refused(bad):
    with pytest.raises(ValueError):
        database_for_budget(bad)
    with pytest.raises(ValueError):
        batch_for_budget(bad)


def test_engine_stores_the_resolved_search_and_a_resume_keeps_it(tmp_path, pool):
    """The engine fills B, n and map-elites' sizes from the budget once, stores them with the
    run's config, and a resume with a raised budget keeps them (a changed database would not
    load the saved selector state)."""
    from test_engine import toy_task

    from evoforge.database.store import RunStore
    from evoforge.engine import Engine, build_config

    cfg = build_config(task="toy", budget=40, seed=0)
    engine = Engine(cfg, tmp_path, task=toy_task(), executor=pool)
    assert (engine.batch_size, engine.n) == batch_for_budget(40, (8, 4), cfg.workers)
    engine.run()
    store = RunStore(tmp_path / "run.db")
    saved = store.get_meta("config")
    store.close()
    assert (saved["batch_size"], saved["n"]) == (engine.batch_size, engine.n)
    assert saved["selector_options"] == database_for_budget(40).as_options()
    steps = engine.step_index
    more = Engine(build_config(saved, budget=4000, max_steps=steps + 3), tmp_path, task=toy_task(), executor=pool)
    assert (more.batch_size, more.n) == (engine.batch_size, engine.n)
    assert more.cfg.selector_options == saved["selector_options"]
    summary = more.run()  # the saved selector state loads into the kept sizes
    assert summary["evaluated"] > 40 and more.step_index > steps


def test_the_shape_depends_on_the_selector():
    # measured on circle packing at 3000 (RESULTS): map-elites best with many small steps,
    # greedy / puct with the builtin's 8 x 4
    p = plan_for_budget(3000, "map-elites", {}, (8, 4), 2)
    assert (p.batch_size, p.n) == (4, 2)
    for selector in ("greedy", "puct", "pacevolve", "best-of-n"):
        p = plan_for_budget(3000, selector, {}, (8, 4), 2)
        assert (p.batch_size, p.n) == (8, 4)
    p = plan_for_budget(3000, "puct", {}, (32, 16), 2)
    assert (p.batch_size, p.n) == (8, 4)  # a model server's shape, fitted
