"""The ten seed environments: deterministic, graded by difficulty, the reference answer scores 1
and a wrong one 0; every seed file passes admission L1-L5 in the sandbox."""
from __future__ import annotations

import json
from itertools import combinations

import pytest

from evoforge.envs import VerifiableEnvironment
from evoforge.envs.admission import check_sources
from evoforge.envs.seeds import ALGORITHMIC, SEED_NAMES, VERIFICATION, load_seed, seed_source

CASES = [(s, d) for d in (1, 3, 5) for s in range(4)]


def wrong_answer(name: str, instance, answer) -> str:
    """An answer that is certainly wrong for this instance."""
    if name in ALGORITHMIC:
        return str(answer + 1)
    if name == "subset_sum":
        return json.dumps(answer[:-1])  # positive numbers: the sum falls short
    if name == "sat":
        first = instance["clauses"][0]
        bits = [int(b) for b in answer]
        for lit in first:  # make every literal of the first clause false
            bits[abs(lit) - 1] = 0 if lit > 0 else 1
        return "".join(map(str, bits))
    if name == "graph_colouring":
        u, v = instance["edges"][0]
        colours = list(answer)
        colours[u] = colours[v]
        return json.dumps(colours)
    if name == "factoring":
        return json.dumps([1, instance["N"]])
    if name == "planted_clique":
        edges = {tuple(e) for e in instance["edges"]}
        u, v = next(p for p in combinations(range(instance["n"]), 2) if p not in edges)
        rest = [x for x in range(instance["n"]) if x not in (u, v)][: instance["k"] - 2]
        return json.dumps([u, v] + rest)
    raise AssertionError(name)


def test_ten_seeds_four_of_each_kind():
    assert len(SEED_NAMES) == 10 and len(set(SEED_NAMES)) == 10
    assert len(ALGORITHMIC) >= 4 and len(VERIFICATION) >= 4


@pytest.mark.parametrize("name", SEED_NAMES)
def test_seed_contract(name):
    env = load_seed(name)
    assert isinstance(env, VerifiableEnvironment) and env.name == name
    sizes = {}
    for seed, d in CASES:
        instance, answer = env.generate(seed, d)
        assert (instance, answer) == env.generate(seed, d)  # deterministic
        assert json.loads(json.dumps([instance, answer])) == json.loads(json.dumps([instance, answer]))
        text = env.format_answer(answer)
        prompt = env.render(instance)
        assert isinstance(prompt, str) and prompt
        assert env.score(instance, text) == 1.0, (seed, d)
        assert env.score(instance, "The answer: " + text) == 1.0  # parses free text itself
        assert env.score(instance, wrong_answer(name, instance, answer)) == 0.0, (seed, d)
        assert env.score(instance, "") == 0.0 and env.score(instance, "no idea") == 0.0
        sizes.setdefault(d, []).append(len(json.dumps(instance)))
    assert sum(sizes[5]) > sum(sizes[1])  # difficulty grows the instances
    assert len({json.dumps(env.generate(s, 3)[0]) for s in range(8)}) >= 6  # seeds vary the instance


def test_every_seed_file_passes_admission(pool):
    results = check_sources([seed_source(n) for n in SEED_NAMES], pool)
    assert [(r.layer, r.reason, r.name) for r in results] == [(5, "", n) for n in SEED_NAMES]
