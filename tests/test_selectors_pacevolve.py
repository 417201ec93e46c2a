"""PACEvolve: the MBB / CE formulas by hand, in both directions, and the selector's control."""
from __future__ import annotations

import numpy as np
import pytest

from evoforge.database.base import ChildOutcome, Program
from evoforge.selectors import PACEvolve
from evoforge.selectors import pacevolve_math as pm


# ---- formulas -----------------------------------------------------------------------
def min_form_relative(prev: float, new: float, r: float) -> float:
    """SPEC §3 as written, for minimisation."""
    return (prev - new) / (prev - r) if new < prev else 0.0


def min_form_absolute(s0: float, s: float, r: float) -> float:
    return (s0 - s) / (s0 - r)


def test_relative_progress_by_hand_maximisation():
    assert pm.relative_progress(5.0, 7.5, 10.0) == pytest.approx(0.5)
    assert pm.relative_progress(5.0, 5.0, 10.0) == 0.0  # no new best
    assert pm.relative_progress(5.0, 4.0, 10.0) == 0.0
    assert pm.relative_progress(5.0, 6.0, 5.0) == 1.0  # gap already closed


@pytest.mark.parametrize("prev,new,r", [(10.0, 8.0, 0.0), (3.0, 2.9, 1.5), (-1.0, -4.0, -5.0), (2.0, 2.0, 1.0)])
def test_relative_progress_mirrors_the_minimisation_form(prev, new, r):
    # fitness = -score and target_f = -r
    assert pm.relative_progress(-prev, -new, -r) == pytest.approx(min_form_relative(prev, new, r))


@pytest.mark.parametrize("s0,s,r", [(10.0, 8.0, 0.0), (1.5, 1.503, 1.4), (4.0, 4.0, 1.0)])
def test_absolute_progress_mirrors_the_minimisation_form(s0, s, r):
    assert pm.absolute_progress(-s0, -s, -r) == pytest.approx(max(0.0, min_form_absolute(s0, s, r)))


def test_absolute_progress_by_hand_maximisation():
    assert pm.absolute_progress(0.96, 2.5, 2.635) == pytest.approx((2.5 - 0.96) / (2.635 - 0.96))
    assert pm.absolute_progress(1.0, 0.5, 2.0) == 0.0  # clipped at 0


def test_momentum_sequence_by_hand():
    m, seen = 1.0, []
    for r in [0.0, 0.5, 0.0, 0.0]:
        m = pm.momentum_update(m, r, beta=0.5)
        seen.append(m)
    assert seen == pytest.approx([0.5, 0.5, 0.25, 0.125])


def test_ce_probabilities_by_hand_lagging_island():
    # A_i = 0.2, partners 1: 0.5 (best), 2: 0.1.  S = 0.7
    # w_BT = 0 + 0.7*0.8*0.5 = 0.28;  w_C1 = 0.3 + 0.7*0.2*0.5 = 0.37;  w_C2 = 0
    p = pm.ce_probabilities(0.2, {1: 0.5, 2: 0.1})
    assert p[pm.BACKTRACK] == pytest.approx(0.28 / 0.65)
    assert p[1] == pytest.approx(0.37 / 0.65)
    assert p[2] == 0.0


def test_ce_probabilities_by_hand_leading_island():
    # A_i = 0.8, partner 0.3.  S = 0.5;  w_BT = 0.5 + 0.5*0.2*0.7 = 0.57;  w_C = 0 + 0.5*0.8*0.3 = 0.12
    p = pm.ce_probabilities(0.8, {1: 0.3})
    assert p[pm.BACKTRACK] == pytest.approx(0.57 / 0.69)
    assert p[1] == pytest.approx(0.12 / 0.69)


def test_ce_probabilities_extremes():
    assert pm.ce_probabilities(0.0, {1: 0.0, 2: 0.0}) == {pm.BACKTRACK: 1.0, 1: 0.0, 2: 0.0}  # all stuck
    both_done = pm.ce_probabilities(1.0, {1: 1.0, 2: 0.5})  # synergy only for the best partner
    assert both_done[1] == pytest.approx(1.0) and both_done[pm.BACKTRACK] == 0.0
    assert pm.ce_probabilities(0.3, {}) == {pm.BACKTRACK: 1.0}


@pytest.mark.parametrize("direction", ["max", "min"])
def test_ce_probabilities_same_in_both_directions(direction):
    """Islands' progress computed from raw scores of a min task equals the max-task case."""
    s0, r = 10.0, 0.0
    scores = {0: 8.0, 1: 5.0, 2: 9.0}
    if direction == "min":
        a = {j: pm.absolute_progress(-s0, -s, -r) for j, s in scores.items()}
    else:  # the mirrored task: maximise 10 - s towards 10
        a = {j: pm.absolute_progress(0.0, s0 - s, s0 - r) for j, s in scores.items()}
    assert a == pytest.approx({0: 0.2, 1: 0.5, 2: 0.1})
    p = pm.ce_probabilities(a[0], {1: a[1], 2: a[2]})
    assert p[pm.BACKTRACK] == pytest.approx(0.28 / 0.65)


def test_power_law_weights_favour_recent():
    w = pm.power_law_weights(3, 1.0)
    assert w == pytest.approx(np.array([1.0, 0.5, 1.0 / 3.0]) / (11.0 / 6.0))
    rng = np.random.default_rng(0)
    draws = [pm.power_law_choice(4, 2.0, rng) for _ in range(2000)]
    assert set(draws) <= {1, 2, 3, 4} and draws.count(1) > draws.count(2) > draws.count(4)


def test_fallback_target_is_above_the_best():
    assert pm.fallback_target(2.0, 1.0, 0.05) == pytest.approx(2.1)
    assert pm.fallback_target(-1.5, -1.6, 0.1) == pytest.approx(-1.35)


# ---- the selector -------------------------------------------------------------------
class Driver:
    """Feeds scripted child fitnesses, one pick per step (islands rotate)."""

    def __init__(self, sel: PACEvolve, sign: float):
        self.sel, self.sign, self.next_id = sel, sign, 1

    def step(self, score: float | None, island_scores: dict[int, float] | None = None):
        pick = self.sel.sample(1)[0]
        island = pick.context["island"]
        if island_scores is not None:
            score = island_scores.get(island)
        outcomes = []
        if score is not None:
            f = self.sign * score
            child = Program(id=self.next_id, code="c", score=score, fitness=f, parent_id=pick.parent.id)
            self.next_id += 1
            self.sel.add(child)
            outcomes.append(ChildOutcome("evaluated", score, f, child))
        self.sel.observe(pick, outcomes)
        return pick


@pytest.mark.parametrize("direction", ["max", "min"])
def test_momentum_and_trigger_on_a_scripted_sequence(direction):
    sign = 1.0 if direction == "max" else -1.0
    # scores in the task's own orientation: a max task climbs 0 -> 10, a min task falls 0 -> -10
    target = 10.0 * sign
    sel = PACEvolve(np.random.default_rng(0), target=sign * target, num_islands=1, beta=0.5,
                    eps_rel=0.15, warmup=2, exploit_best=1.0)
    sel.add(Program(id=0, code="s", score=0.0, fitness=0.0))
    drive = Driver(sel, sign)
    island = sel.islands[0]
    script = [5.0, 4.0, 7.5, 1.0, 2.0]  # distances along the task's own direction
    momenta = []
    for x in script:
        drive.step(sign * x)
        momenta.append(island.momentum)
        if island.triggers:
            break
    # R = 0.5, 0, 0.5, 0, 0 -> m = 0.75, 0.375, 0.4375, 0.21875, 0.109375 < 0.15: trigger, reset
    assert momenta[:4] == pytest.approx([0.75, 0.375, 0.4375, 0.21875])
    assert island.triggers == 1 and island.backtracks == 1  # one island: Backtrack only
    assert momenta[4] == pytest.approx(1.0) and island.since_reset == 0
    # the backtrack returned to a checkpoint (start, 5 or 7.5) and dropped what came after it
    best = sel._programs[island.best]
    assert best.score * sign in (0.0, 5.0, 7.5)
    assert island.pool[-1] == island.best or len(island.pool) == 1


def test_no_trigger_during_warmup():
    sel = PACEvolve(np.random.default_rng(0), target=10.0, num_islands=1, beta=0.0,
                    eps_rel=0.5, warmup=4, exploit_best=1.0)
    sel.add(Program(id=0, code="s", score=0.0, fitness=0.0))
    drive = Driver(sel, 1.0)
    for _ in range(3):
        drive.step(None)  # all penalised: R = 0, momentum 0 at once
    assert sel.islands[0].triggers == 0
    drive.step(None)
    assert sel.islands[0].triggers == 1


def test_backtrack_discards_recent_history_and_reverts_the_best():
    sel = PACEvolve(np.random.default_rng(1), target=100.0, num_islands=1, beta=0.9,
                    eps_rel=0.0, warmup=0, exploit_best=1.0, backtrack_alpha=0.0)
    sel.add(Program(id=0, code="s", score=0.0, fitness=0.0))
    drive = Driver(sel, 1.0)
    for x in [1.0, 0.5, 2.0, 1.5, 1.2]:  # checkpoints at start, 1.0 (id 1), 2.0 (id 3)
        drive.step(x)
    island = sel.islands[0]
    assert [c[1] for c in island.checkpoints] == [0, 1, 3]
    assert island.pool == [0, 1, 2, 3, 4, 5]
    sel._backtrack(island)
    keep = [c[1] for c in island.checkpoints][-1]
    assert island.best == keep
    assert island.pool == list(range(keep + 1)) if keep else island.pool == [0]
    for gone in range(keep + 1, 6):
        assert gone not in sel._programs


def test_lagging_island_crosses_with_the_leader():
    # target 10: island 1 jumps to 9.99 (A ~ 1); island 0 never improves (A = 0), so once it
    # triggers, P(Crossover_1) = 0.999 / (0.999 + 0.001 * 0.001 * 1): it crosses with island 1.
    sel = PACEvolve(np.random.default_rng(0), target=10.0, num_islands=2, beta=0.5,
                    eps_rel=0.2, warmup=1, exploit_best=1.0)
    sel.add(Program(id=0, code="s", score=0.0, fitness=0.0))
    drive = Driver(sel, 1.0)
    drive.step(None, {1: 9.99})  # island 0 first, penalised
    drive.step(None, {1: 9.99})  # island 1 jumps
    leader = sel.islands[1].best
    crossovers_after = []
    picks = []
    for _ in range(8):
        picks.append(drive.step(None, {}))
        crossovers_after.append(sel.islands[0].crossovers)
    assert sel.islands[0].backtracks == 0
    first = crossovers_after.index(1)  # island 0 triggered here and chose Crossover_1
    nxt = next(p for p in picks[first + 1 :] if p.context["island"] == 0)
    assert nxt.context.get("action") == "crossover" and nxt.context["partner_island"] == 1
    assert nxt.partner is not None and nxt.partner.id == leader and nxt.parent.id == 0
    plain = [p for p in picks[: first + 1] if p.context["island"] == 0]
    assert all(p.partner is None for p in plain)


def test_without_target_the_fallback_keeps_gaps_open():
    sel = PACEvolve(np.random.default_rng(0), target=None, num_islands=2)
    sel.add(Program(id=0, code="s", score=0.0, fitness=1.0))
    assert sel.effective_target() == pytest.approx(1.0 + 0.05 * 1.0)
    beaten = PACEvolve(np.random.default_rng(0), target=0.5, num_islands=2)  # already beaten
    beaten.add(Program(id=0, code="s", score=0.0, fitness=1.0))
    assert beaten.effective_target() > 1.0


def test_islands_rotate_and_children_join_the_picking_island():
    sel = PACEvolve(np.random.default_rng(0), target=10.0, num_islands=3, exploit_best=1.0)
    sel.add(Program(id=0, code="s", score=0.0, fitness=0.0))
    drive = Driver(sel, 1.0)
    islands = [drive.step(1.0).context["island"] for _ in range(4)]
    assert islands == [0, 1, 2, 0]
    assert [isl.pool for isl in sel.islands] == [[0, 1, 4], [0, 2], [0, 3]]


def test_pool_is_bounded():
    sel = PACEvolve(np.random.default_rng(0), target=1e9, num_islands=1, pool_size=5,
                    warmup=10**6, exploit_best=0.0)
    sel.add(Program(id=0, code="s", score=0.0, fitness=0.0))
    drive = Driver(sel, 1.0)
    for i in range(40):
        drive.step(float(i % 3))
    island = sel.islands[0]
    assert len(island.pool) <= 10 and island.dropped + len(island.pool) == 41
    assert len(sel) <= 10 + len(island.checkpoints) + 1
