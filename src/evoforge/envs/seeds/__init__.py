"""The ten seed environments: our own code, shown to the generator as few-shot examples and used
as the held-out set of the solver. One subclass per file, each file a valid `envs check` input.

Algorithmic (the code computes the answer): knapsack, grid_path, modular_recurrence,
interval_scheduling, edit_distance. Verification (hard to solve, easy to check; a witness is
planted): subset_sum, sat, graph_colouring, factoring, planted_clique.
"""
from __future__ import annotations

import importlib
from pathlib import Path

from evoforge.envs.base import VerifiableEnvironment

HERE = Path(__file__).parent
ALGORITHMIC = ("knapsack", "grid_path", "modular_recurrence", "interval_scheduling", "edit_distance")
VERIFICATION = ("subset_sum", "sat", "graph_colouring", "factoring", "planted_clique")
SEED_NAMES = ALGORITHMIC + VERIFICATION


def seed_path(name: str) -> Path:
    if name not in SEED_NAMES:
        raise KeyError(f"unknown seed environment {name!r} (known: {', '.join(SEED_NAMES)})")
    return HERE / f"{name}.py"


def seed_source(name: str) -> str:
    return seed_path(name).read_text(encoding="utf-8")


def load_seed(name: str) -> VerifiableEnvironment:
    """An instance of a seed environment (trusted code: imported in this process)."""
    module = importlib.import_module(f"evoforge.envs.seeds.{seed_path(name).stem}")
    classes = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, VerifiableEnvironment)
               and v is not VerifiableEnvironment and v.__module__ == module.__name__]
    assert len(classes) == 1, f"seed {name} must define exactly one environment"
    return classes[0]()
