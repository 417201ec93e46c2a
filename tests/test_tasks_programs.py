"""The shipped initial programs run, are valid, and score what the catalogue says (and what
the papers publish, where they do)."""
from __future__ import annotations

import pytest

from evoforge.tasks import Direction, builtin_names, get_task, run_in_process
from evoforge.tasks.catalog import load_program

NAMES = builtin_names()

EXPECTED_NAMES = {
    "circle-packing-26", "circle-packing-32", "circle-packing-26-t", "circle-packing-32-t",
    "ac1", "ac2", "ac3", "hadamard-29", "erdos-min-overlap", "circle-packing-rect-21", "kissing-11",
    "heilbronn-triangle-11", "heilbronn-convex-13", "heilbronn-convex-14",
    "min-distance-ratio-16-2d", "min-distance-ratio-14-3d", "sums-differences",
    "ac1-paper", "hadamard-29-paper",
}


def test_catalogue_names():
    assert set(NAMES) == EXPECTED_NAMES


@pytest.mark.parametrize("name", NAMES)
def test_initial_program_scores_its_initial_score(name: str):
    task = get_task(name)
    verdict = run_in_process(task)
    assert verdict.valid, verdict.reason
    assert verdict.score == pytest.approx(task.initial_score, rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_task_is_complete(name: str):
    task = get_task(name)
    assert task.name == name and task.entry == "solve" and task.evolve_blocks
    assert task.initial_program.count("# EVOLVE-BLOCK-START") == 1
    assert task.initial_program.count("# EVOLVE-BLOCK-END") == 1
    assert "solve()" in task.description and "Score" in task.description
    assert task.best_ai is not None and task.best_ai.source
    assert task.best_human is not None and task.best_human.source
    assert task.time_limit > 0 and task.object_kind != "generic"
    # the best known value beats the naive start
    assert task.better(task.target, task.initial_score)
    compile(task.initial_program, name, "exec")


@pytest.mark.parametrize(
    "name, published",
    [("circle-packing-26-t", 0.9597642), ("circle-packing-26", 0.9597642), ("ac3", 3.1585505),
     ("hadamard-29-paper", 0.1432749), ("ac1-paper", 1.5213613)],
)
def test_published_initial_scores(name: str, published: float):
    assert run_in_process(get_task(name)).score == pytest.approx(published, abs=5e-8)


def test_cp26_tolerant_program_is_the_lead_file_and_strictly_invalid():
    """The OpenEvolve start is valid only with tolerance (2.8e-17 overlap); the strict task ships
    the same rings shrunk by 1e-12."""
    plain = load_program("circle_packing.py")
    assert get_task("circle-packing-26-t").initial_program == plain
    strict = get_task("circle-packing-26")
    assert not run_in_process(strict, plain).valid


def test_shaping_bands():
    ac2, ac3 = get_task("ac2"), get_task("ac3")
    assert (ac2.shaping.lower, ac2.shaping.upper, ac2.shaping.alpha, ac2.shaping.k) == (0.91, 0.96, 1.0, 3.0)
    assert (ac3.shaping.lower, ac3.shaping.upper, ac3.shaping.alpha) == (1.4557, 3.2, 3.0)
    assert get_task("circle-packing-26").shaping is None and get_task("hadamard-29").shaping is None


def test_directions_and_params():
    assert get_task("ac1").direction is Direction.MIN and get_task("ac2").direction is Direction.MAX
    assert get_task("circle-packing-32-t").params == {"n": 32, "tolerance": 1e-6}
    assert "N = 32" in get_task("circle-packing-32").initial_program
    assert "N = 14" in get_task("heilbronn-convex-14").initial_program
    assert "D = 3" in get_task("min-distance-ratio-14-3d").initial_program


def test_load_program_rejects_missing_parameter():
    with pytest.raises(RuntimeError):
        load_program("ac3.py", N=5)
