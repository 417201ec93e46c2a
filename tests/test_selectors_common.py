"""Registry, options, persistence and the two baselines, for every selector."""
from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

import evoforge.selectors  # noqa: F401  (registers the selectors)
from evoforge.database.base import SELECTORS, ChildOutcome, Program
from evoforge.database.indexed import IndexedSet, LazyMinHeap
from evoforge.database.simulate import World, run_steps, seed_program
from evoforge.selectors import SelectorConfigError, SelectorStateError

ALL = ["best-of-n", "greedy", "map-elites", "pacevolve", "puct"]

# Small settings so that eviction, migration, trimming and backtracking all happen.
OPTIONS: dict[str, dict] = {
    "best-of-n": {},
    "greedy": {"epsilon": 0.3, "archive_size": 50},
    "map-elites": {"size": "small", "migration_interval": 3, "num_inspirations": 2},
    # a wide fallback margin keeps progress values mid-range: both backtracks and crossovers
    "pacevolve": {"num_islands": 3, "warmup": 2, "eps_rel": 0.3, "pool_size": 20, "exploit_best": 0.5,
                  "target_margin": 1.0},
    "puct": {"archive_size": 40},
}


def make(name: str, seed: int = 0, target: float | None = None, **extra):
    return SELECTORS.get(name)(rng=np.random.default_rng(seed), target=target, **{**OPTIONS[name], **extra})


def test_all_selectors_registered():
    assert set(ALL) <= set(SELECTORS.names())


@pytest.mark.parametrize("name", ALL)
def test_unknown_option_is_one_clear_error(name):
    with pytest.raises(SelectorConfigError) as info:
        SELECTORS.get(name)(rng=np.random.default_rng(0), target=None, no_such_option=1)
    text = str(info.value)
    assert "no_such_option" in text and name in text and "\n" not in text


@pytest.mark.parametrize(
    "name,options",
    [
        ("greedy", {"epsilon": 1.5}),
        ("puct", {"c": "a lot"}),
        ("map-elites", {"size": "huge"}),
        ("map-elites", {"exploration_ratio": 0.5, "exploitation_ratio": 0.6}),
        ("pacevolve", {"beta": 1.0}),
        ("pacevolve", {"num_islands": 0}),
    ],
)
def test_bad_option_values_rejected(name, options):
    with pytest.raises(SelectorConfigError, match=name):
        SELECTORS.get(name)(rng=np.random.default_rng(0), target=None, **options)


def test_bad_target_rejected():
    with pytest.raises(SelectorConfigError, match="target"):
        SELECTORS.get("puct")(rng=np.random.default_rng(0), target=math.inf)


@pytest.mark.parametrize("name", ALL)
def test_non_finite_fitness_refused(name):
    sel = make(name)
    with pytest.raises(ValueError, match="non-finite"):
        sel.add(Program(id=0, code="x", score=math.nan, fitness=math.nan))


@pytest.mark.parametrize("name", ALL)
def test_sample_before_add_is_a_clear_error(name):
    with pytest.raises(RuntimeError, match=name):
        make(name).sample(2)


@pytest.mark.parametrize("name", ALL)
def test_state_round_trip_continues_exactly(name):
    """Save mid-run (through JSON), restore into a fresh selector with the same rng state,
    and check that both continue with exactly the same picks."""
    sel = make(name, seed=3)
    seed = seed_program()
    sel.add(seed)
    world = World(np.random.default_rng(4))
    run_steps(sel, world, steps=25, batch=4, children=5)

    state = json.loads(json.dumps(sel.state_dict()))
    programs = {seed.id: seed, **world.created}
    restored = make(name, seed=99)  # a different rng, overwritten below as the engine does
    restored.rng.bit_generator.state = copy.deepcopy(sel.rng.bit_generator.state)
    restored.load_state_dict(state, programs)
    assert len(restored) == len(sel)
    assert restored.best().id == sel.best().id

    if name == "pacevolve":  # the saved state must come after both kinds of CE action
        assert sum(i.backtracks for i in sel.islands) and sum(i.crossovers for i in sel.islands)
    if name == "map-elites":
        assert sel.migrations > 0 and len(sel) == sel.population_size
    twin = copy.deepcopy(world)
    run_steps(sel, world, steps=25, batch=4, children=5)
    run_steps(restored, twin, steps=25, batch=4, children=5)
    assert twin.log == world.log
    assert restored.state_dict() == sel.state_dict()


@pytest.mark.parametrize("name", ALL)
def test_state_for_another_selector_refused(name):
    other = "puct" if name != "puct" else "greedy"
    src = make(other)
    src.add(seed_program())
    with pytest.raises(SelectorStateError):
        make(name).load_state_dict(src.state_dict(), {0: seed_program()})


@pytest.mark.parametrize("name", ALL)
def test_state_with_missing_program_refused(name):
    sel = make(name)
    sel.add(seed_program())
    run_steps(sel, World(np.random.default_rng(1)), steps=3, batch=2, children=2)
    with pytest.raises(SelectorStateError, match="not in the store"):
        make(name).load_state_dict(sel.state_dict(), {})


@pytest.mark.parametrize("name", ALL)
def test_best_is_the_fittest_program_added(name):
    sel = make(name)
    seed = seed_program(fitness=-1.0)
    sel.add(seed)
    world = World(np.random.default_rng(5), noise=0.5)
    run_steps(sel, world, steps=10, batch=3, children=4)
    assert sel.best().fitness == max(p.fitness for p in [seed, *world.created.values()])


def test_best_of_n_always_returns_the_seed():
    sel = make("best-of-n")
    seed = seed_program()
    sel.add(seed)
    world = World(np.random.default_rng(0), noise=1.0)
    run_steps(sel, world, steps=5, batch=4, children=3)
    assert all(pid == seed.id for step in world.log for pid in step)
    assert len(sel) == 1 + len(world.created)


def test_greedy_epsilon_zero_takes_the_best_and_one_takes_random():
    programs = [Program(id=i, code=str(i), score=i, fitness=float(i), parent_id=None if i == 0 else 0) for i in range(20)]
    greedy = make("greedy", epsilon=0.0)
    for p in programs:
        greedy.add(p)
    assert {pick.parent.id for pick in greedy.sample(10)} == {19}
    explorer = make("greedy", epsilon=1.0, archive_size=5)
    for p in programs:
        explorer.add(p)
    assert len(explorer) == 5
    chosen = {pick.parent.id for pick in explorer.sample(200)}
    assert chosen == {15, 16, 17, 18, 19}  # uniform over the kept top-5 only


def test_indexed_set_swap_remove_and_choice():
    s: IndexedSet[int] = IndexedSet(range(5))
    assert s.discard(1) and not s.discard(1)
    assert s.to_list() == [0, 4, 2, 3]  # the last element fills the hole
    assert not s.add(4) and len(s) == 4 and 4 in s
    rng = np.random.default_rng(0)
    assert {s.choice(rng) for _ in range(200)} == {0, 2, 3, 4}
    with pytest.raises(IndexError):
        IndexedSet().choice(rng)


def test_lazy_heap_pops_in_key_order_and_skips_discarded():
    h: LazyMinHeap[str] = LazyMinHeap()
    for key, item in [((3.0, 1), "c"), ((1.0, 2), "a"), ((2.0, 3), "b"), ((0.5, 4), "z")]:
        h.push(key, item)
    h.discard("z")
    assert "z" not in h and len(h) == 3
    assert h.pop_first(lambda item: item == "a") == ((2.0, 3), "b")
    assert "a" in h
    assert [h.pop()[1] for _ in range(2)] == ["a", "c"]
    with pytest.raises(IndexError):
        h.pop()


def test_observe_accepts_penalised_outcomes_only():
    for name in ALL:
        sel = make(name)
        sel.add(seed_program())
        pick = sel.sample(1)[0]
        size = len(sel)
        before = json.dumps(sel.state_dict(), sort_keys=True, default=str)
        sel.observe(pick, [ChildOutcome("no_diff", -0.4, None, None), ChildOutcome("invalid", -0.1, None, None)])
        assert len(sel) == size, name  # a penalised child never enters the population
        assert sel.best().id == seed_program().id and sel.sample(1)[0].parent.id == seed_program().id
        state = sel.state_dict()
        json.dumps(state, default=str)  # still a JSON-able state after the feedback
        restored = make(name)
        restored.load_state_dict(copy.deepcopy(state), {seed_program().id: seed_program()})
        assert json.dumps(restored.state_dict(), sort_keys=True, default=str) == json.dumps(state, sort_keys=True, default=str)
        if name in ("puct", "pacevolve"):  # these learn from penalties: the feedback was recorded
            assert json.dumps(state, sort_keys=True, default=str) != before, name
