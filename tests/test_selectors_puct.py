"""PUCT (TTT-Discover reuse): scores, back-up, lineage blocking, archive trimming."""
from __future__ import annotations

import math

import numpy as np
import pytest

from evoforge.database.base import ChildOutcome, Pick, Program
from evoforge.selectors import PUCT, puct_scores


def prog(pid: int, fitness: float, parent: int | None = None) -> Program:
    return Program(id=pid, code=f"# {pid}", score=fitness, fitness=fitness, parent_id=parent)


def evaluated(fitness: float) -> ChildOutcome:
    return ChildOutcome("evaluated", fitness, fitness, None)


PENALISED = ChildOutcome("invalid", -0.1, None, None)


def small_tree(**options) -> PUCT:
    """0 (R=1) -> 1 (R=2) -> 3 (R=3);  0 -> 2 (R=0.5)."""
    sel = PUCT(np.random.default_rng(0), **options)
    for p in [prog(0, 1.0), prog(1, 2.0, 0), prog(2, 0.5, 0), prog(3, 3.0, 1)]:
        sel.add(p)
    return sel


def test_scores_on_a_small_tree_by_hand():
    # ranks 3,1,0,2 -> P = 4/10, 3/10, 2/10, 1/10; scale = 3 - 0.5; T = 0, n = 0
    scores = small_tree().scores()
    assert scores[3] == pytest.approx(3.0 + 2.5 * 0.4)
    assert scores[1] == pytest.approx(2.0 + 2.5 * 0.3)
    assert scores[0] == pytest.approx(1.0 + 2.5 * 0.2)
    assert scores[2] == pytest.approx(0.5 + 2.5 * 0.1)


def test_backup_updates_parent_max_and_all_ancestor_counts():
    sel = small_tree()
    sel.observe(Pick(parent=prog(3, 3.0, 1)), [evaluated(2.5), PENALISED, evaluated(2.8)])
    state = sel.state_dict()
    n = dict(zip(state["archive"], state["n"]))
    assert n == {0: 1, 1: 1, 2: 0, 3: 1}  # state 3 and its ancestors 1, 0; not the sibling 2
    assert dict((i, v) for i, v in state["m"]) == {3: 2.8}  # parent only
    assert state["T"] == 1
    s = sel.scores()
    bonus = math.sqrt(2.0)
    assert s[3] == pytest.approx(2.8 + 2.5 * 0.4 * bonus / 2)  # Q = m(3): worse than R(3)
    assert s[1] == pytest.approx(2.0 + 2.5 * 0.3 * bonus / 2)  # visited, no child of its own: Q = R
    assert s[0] == pytest.approx(1.0 + 2.5 * 0.2 * bonus / 2)
    assert s[2] == pytest.approx(0.5 + 2.5 * 0.1 * bonus / 1)


def test_m_keeps_the_max_and_ignores_penalised_children():
    sel = small_tree()
    parent = Pick(parent=prog(2, 0.5, 0))
    sel.observe(parent, [evaluated(4.0)])
    sel.observe(parent, [evaluated(1.0)])
    sel.observe(parent, [PENALISED, PENALISED])
    state = sel.state_dict()
    assert dict((i, v) for i, v in state["m"]) == {2: 4.0}
    assert dict(zip(state["archive"], state["n"]))[2] == 3
    assert dict(zip(state["archive"], state["n"]))[0] == 3
    assert state["T"] == 3


def test_puct_scores_function_matches_formula():
    r = np.array([1.0, 3.0, 2.0])
    m = np.array([np.nan, 0.0, 5.0])
    n = np.array([0.0, 2.0, 1.0])
    got = puct_scores(r, m, n, total=3, c=0.5)
    prior = np.array([1, 3, 2]) / 6.0
    want = np.array([1.0, 0.0, 5.0]) + 0.5 * 2.0 * prior * 2.0 / (1 + n)
    assert got == pytest.approx(want)


def test_lineage_of_a_chosen_state_is_blocked_within_a_batch():
    sel = small_tree()
    # 3 first (score 4.0); its ancestors 1 and 0 are blocked, so 2 comes next;
    # then every state is blocked: a new round starts with 3 again rather than failing.
    assert [p.parent.id for p in sel.sample(3)] == [3, 2, 3]


def test_descendants_of_a_chosen_state_are_blocked():
    sel = PUCT(np.random.default_rng(0), c=0.0)  # score = Q = R
    for p in [prog(0, 5.0), prog(1, 4.0, 0), prog(2, 3.0, 1), prog(3, 1.0)]:
        sel.add(p)
    assert [p.parent.id for p in sel.sample(2)] == [0, 3]  # 1 and 2 descend from 0
    unblocked = PUCT(np.random.default_rng(0), c=0.0, block_lineage=False)
    for p in [prog(0, 5.0), prog(1, 4.0, 0)]:
        unblocked.add(p)
    assert [p.parent.id for p in unblocked.sample(2)] == [0, 0]


def test_top_two_children_per_parent():
    sel = PUCT(np.random.default_rng(0))
    for p in [prog(0, 0.0), prog(1, 1.0, 0), prog(2, 2.0, 0), prog(3, 1.5, 0)]:
        sel.add(p)
    assert sorted(sel.state_dict()["archive"]) == [0, 2, 3]  # child 1 dropped
    sel.add(prog(4, 0.5, 0))
    assert sorted(sel.state_dict()["archive"]) == [0, 2, 3]  # a worse fourth child never stays


def test_global_top_k_keeps_seeds():
    sel = PUCT(np.random.default_rng(0), archive_size=3)
    for p in [prog(0, -10.0), prog(1, 1.0, 0), prog(2, 2.0, 1), prog(3, 3.0, 2), prog(4, 0.5, 3)]:
        sel.add(p)
    assert sorted(sel.state_dict()["archive"]) == [0, 1, 2, 3]  # 4 is the lowest non-seed
    sel.add(prog(5, 5.0, 3))
    assert sorted(sel.state_dict()["archive"]) == [0, 2, 3, 5]  # 1 goes; the weak seed stays
    assert len(sel) == 4 and sel.best().id == 5


def test_removed_states_still_count_for_ancestry():
    """Visits back up through ancestors that were trimmed from the archive."""
    sel = PUCT(np.random.default_rng(0), archive_size=2)
    for p in [prog(0, 0.0), prog(1, 0.1, 0), prog(2, 5.0, 1), prog(3, 6.0, 2)]:
        sel.add(p)
    assert sorted(sel.state_dict()["archive"]) == [0, 2, 3]  # 1 trimmed
    sel.observe(Pick(parent=prog(3, 6.0, 2)), [evaluated(1.0)])
    n = dict(zip(sel.state_dict()["archive"], sel.state_dict()["n"]))
    assert n == {0: 1, 2: 1, 3: 1}


def test_minimisation_through_fitness():
    """A minimisation task hands fitness = -score: the lowest score is preferred."""
    sel = PUCT(np.random.default_rng(0), c=0.0)
    for pid, score, parent in [(0, 10.0, None), (1, 3.0, 0), (2, 7.0, 0)]:
        sel.add(Program(id=pid, code="", score=score, fitness=-score, parent_id=parent))
    assert sel.sample(1)[0].parent.id == 1
