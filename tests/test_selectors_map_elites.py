"""MAP-Elites islands (OpenEvolve / ThetaEvolve database semantics)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from evoforge.database.base import Program
from evoforge.database.simulate import World, run_steps, seed_program
from evoforge.selectors import MapElites
from evoforge.selectors.features import FeatureSpace, jaccard_distance, line_set


def me(**options) -> MapElites:
    return MapElites(np.random.default_rng(0), **options)


def prog(pid: int, fitness: float, code: str = "x", parent: int | None = 0) -> Program:
    return Program(id=pid, code=code, score=fitness, fitness=fitness, parent_id=parent)


@pytest.mark.parametrize(
    "size,expected", [("small", (70, 25, 5)), ("medium", (1000, 100, 10)), ("large", (10000, 1000, 10))]
)
def test_sizes(size, expected):
    sel = me(size=size)
    assert (sel.population_size, sel.archive_size, sel.num_islands) == expected


def test_large_is_default_and_explicit_numbers_override():
    assert me().population_size == 10000
    sel = me(size="small", population_size=33, num_islands=2)
    assert (sel.population_size, sel.archive_size, sel.num_islands) == (33, 25, 2)


def test_population_limit_respected_over_a_run():
    sel = me(size="small", migration_interval=4)
    sel.add(seed_program())
    world = World(np.random.default_rng(1))
    for _ in range(30):
        run_steps(sel, world, steps=1, batch=8, children=4)
        assert len(sel) <= 70
        assert len(sel.archive_ids()) <= 25
    assert sum(sel.island_sizes()) == len(sel) == 70
    assert all(size > 0 for size in sel.island_sizes())
    assert sel.migrations > 0


def test_eviction_keeps_the_fittest_and_never_the_best():
    sel = me(num_islands=1, population_size=10, archive_size=5, feature_dimensions=("score",))
    sel.add(prog(0, -100.0, parent=None))
    rng = np.random.default_rng(0)
    fits = rng.normal(size=40)
    for i, f in enumerate(fits, start=1):
        sel.add(prog(i, float(f)))
    top10 = sorted(range(1, 41), key=lambda i: -fits[i - 1])[:10]
    assert len(sel) == 10
    assert sorted(pid for pid in top10 if sel.island_of(pid)) == sorted(top10)
    assert sel.best().id == top10[0]
    assert sorted(sel.archive_ids()) == sorted(top10[:5])


def test_the_best_survives_even_when_it_is_the_worst_entry():
    # a single-slot population: the newcomer is worse, so it goes, the best stays
    sel = me(num_islands=1, population_size=1, archive_size=1)
    sel.add(prog(0, 5.0, parent=None))
    sel.add(prog(1, 1.0))
    assert len(sel) == 1 and sel.best().id == 0 and sel.island_of(0) == [0]


def test_grid_replacement_keeps_the_better_program_per_cell():
    sel = me(num_islands=1, feature_dimensions=("complexity",), feature_bins=4)
    sel.add(prog(0, 0.0, code="aaaa", parent=None))
    sel.add(prog(1, 1.0, code="bbbb"))  # same length: same cell, better
    sel.add(prog(2, 0.5, code="cccc"))  # same cell, worse than 1
    assert sel.grid(0) == {(0,): 1}
    sel.add(prog(3, -1.0, code="dddddddd"))  # longer: a new cell, even though worse
    assert sel.grid(0) == {(0,): 1, (3,): 3}


def test_islands_children_follow_their_parents_island():
    sel = me(num_islands=3, exploration_ratio=1.0, exploitation_ratio=0.0)
    sel.add(seed_program())
    picks = sel.sample(3)
    assert [p.context["island"] for p in picks] == [0, 1, 2]
    assert sel.island_sizes() == [1, 1, 1]  # the seed starts in every island
    for i, p in enumerate(picks):
        sel.add(prog(10 + i, 1.0 + i, parent=p.parent.id))
    # the seed was picked first by island 0: its children of this batch all join island 0
    assert sel.island_sizes() == [4, 1, 1]
    assert sel.sample(1)[0].context["island"] == 0  # rotation continues


def test_migration_copies_to_ring_neighbours_and_never_re_migrates():
    n = 6
    sel = me(num_islands=n, population_size=10_000, migration_interval=2, migration_rate=0.3)
    sel.add(seed_program())
    world = World(np.random.default_rng(7))
    run_steps(sel, world, steps=40, batch=n, children=3)
    assert sel.migrations >= 5
    copies = 0
    for pid in world.created:
        islands = sel.island_of(pid)
        if not islands:
            continue
        natives = [i for i in islands if not sel.is_migrant(pid, i)]
        assert len(natives) == 1  # one original entry per child
        home = natives[0]
        for i in islands:
            if i != home:
                copies += 1
                assert sel.is_migrant(pid, i)
                assert i in ((home + 1) % n, (home - 1) % n), "a copy travelled more than one hop"
    assert copies > 0


def test_sampling_mix_follows_the_ratios():
    sel = me(size="small")
    sel.add(seed_program())
    run_steps(sel, World(np.random.default_rng(2)), steps=20, batch=5, children=4)
    counts = Counter(p.context["how"] for _ in range(400) for p in sel.sample(5))
    total = sum(counts.values())
    assert counts["exploration"] / total == pytest.approx(0.2, abs=0.04)
    assert counts["exploitation"] / total == pytest.approx(0.7, abs=0.04)
    assert counts["random"] / total == pytest.approx(0.1, abs=0.03)


def test_exploitation_draws_from_the_archive():
    sel = me(num_islands=1, population_size=100, archive_size=3, exploration_ratio=0.0,
             exploitation_ratio=1.0)
    sel.add(prog(0, 0.0, parent=None))
    for i in range(1, 30):
        sel.add(prog(i, float(i)))
    assert {p.parent.id for p in sel.sample(100)} == {27, 28, 29}


def test_inspirations_are_distinct_and_exclude_the_parent():
    sel = me(size="small", num_inspirations=3)
    sel.add(seed_program())
    run_steps(sel, World(np.random.default_rng(3)), steps=10, batch=5, children=4)
    for pick in sel.sample(20):
        ids = [p.id for p in pick.inspirations]
        assert 1 <= len(ids) <= 3 and len(set(ids)) == len(ids) and pick.parent.id not in ids


def test_parent_only_by_default():
    sel = me(size="small")
    sel.add(seed_program())
    run_steps(sel, World(np.random.default_rng(3)), steps=3, batch=4, children=2)
    assert all(not p.inspirations for p in sel.sample(10))


def test_features_diversity_and_adaptive_bins():
    assert jaccard_distance(line_set("a\nb\n"), line_set("  a\n\nb")) == 0.0
    assert jaccard_distance(line_set("a\nb"), line_set("a\nc")) == pytest.approx(1 - 1 / 3)
    space = FeatureSpace(["complexity"], bins=10)
    first = space.cell(prog(0, 0.0, code="x" * 100))
    assert first == (0,)  # range not open yet
    assert space.cell(prog(1, 0.0, code="x" * 200)) == (9,)  # the max of the range
    assert space.cell(prog(2, 0.0, code="x" * 150)) == (5,)
    assert space.ranges["complexity"] == [100.0, 200.0]
    missing = FeatureSpace(["loss"], bins=10).cell(prog(3, 0.0))
    assert missing == (5,)  # an absent metric sits in the middle bin


@pytest.mark.parametrize("cap,migrated", [(None, [10, 9]), (1, [10])])
def test_migration_sends_the_island_top_and_respects_the_cap(cap, migrated):
    sel = me(num_islands=3, population_size=1000, migration_rate=0.2, migration_cap=cap)
    sel.add(prog(0, 0.0, parent=None))
    for i in range(1, 11):  # all children of the seed land in island 0 (the seed's first island)
        sel.add(prog(i, float(i)))
    assert sel.island_sizes() == [11, 1, 1]
    sel.migrate()  # island 0 sends max(1, int(11 * 0.2)) = 2 (or the cap) to islands 1 and 2
    for pid in range(1, 11):
        assert sel.island_of(pid) == ([0, 1, 2] if pid in migrated else [0])
    assert sel.is_migrant(10, 1) and not sel.is_migrant(10, 0)
    sel.migrate()  # the copies are migrants: islands 1 and 2 send nothing new
    assert sel.island_sizes() == [11, 1 + len(migrated), 1 + len(migrated)]
