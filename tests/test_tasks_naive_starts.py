"""The default AC1 and Hadamard-29 start from naive programs that the model-free operator can
move; ThetaEvolve's starts stay available as ac1-paper and hadamard-29-paper."""
from __future__ import annotations

import numpy as np
import pytest

from evoforge.edits.diff import evolve_regions
from evoforge.llm.builtin import BuiltinMutator
from evoforge.tasks import get_task, run_in_process


def _scores_of_mutants(name: str, tries: int) -> tuple[float, list[float]]:
    task = get_task(name)
    mutator = BuiltinMutator(seed=0)
    scores = []
    for j in range(tries):
        m = mutator.mutate(task.initial_program, np.random.default_rng([0, j]))
        try:
            verdict = run_in_process(task, m.code)
        except Exception:  # a broken mutant: the sandbox would call it invalid
            continue
        if verdict.valid:
            scores.append(verdict.score)
    return task.initial_score, scores


@pytest.mark.parametrize("name", ["ac1", "hadamard-29"])
def test_naive_start_is_evolvable(name):
    initial, scores = _scores_of_mutants(name, 10)
    changed = [s for s in scores if s != initial]
    assert len(changed) >= 5, (initial, scores)  # most single mutations move the score
    task = get_task(name)
    assert any(task.better(s, initial) for s in changed)  # and some improve it


@pytest.mark.parametrize("name", ["ac1", "hadamard-29"])
def test_naive_start_is_naive_and_its_numbers_are_inside_the_evolve_block(name):
    task, paper = get_task(name), get_task(name + "-paper")
    assert task.better(paper.initial_score, task.initial_score)  # the paper's start is better
    lines = task.initial_program.splitlines()
    (a, b), = evolve_regions(task.initial_program)
    outside = "\n".join(lines[:a] + lines[b:])
    assert "0.9" not in outside and "[1, 0" not in outside
    assert task.description != paper.description and "-paper" in task.description


def test_paper_starts_are_thetaevolves_and_the_operator_cannot_improve_them():
    for name, published in (("ac1-paper", 1.5213613), ("hadamard-29-paper", 0.1432749)):
        task = get_task(name)
        assert run_in_process(task).score == pytest.approx(published, abs=5e-8)
        initial, scores = _scores_of_mutants(name, 10)
        assert not any(task.better(s, initial) for s in scores)
