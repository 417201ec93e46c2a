"""Task families beyond mathematical constructions (issue 16), each a task *kind* with its own
verifier contract: a sandboxed stage (compile / run / time / fit, inside the confined child)
followed by a host-side verifier that recomputes the score from what came back.

    algorithm-engineering  net-capture-cpp, net-capture-py   (algo.py, netcapture.py, runner.py)
    performance-kernels    trimul-cpu                        (kernels.py)
    single-cell            denoise-synthetic                 (singlecell.py)
    symbolic-regression    oscillator1, oscillator2          (symreg.py)

``FAMILIES`` maps family -> task name -> builder; ``tasks/__init__.get_task`` consults it.
"""
from __future__ import annotations

from typing import Callable

from evoforge.tasks.base import Task


def _algo(lang: str) -> Callable[[], Task]:
    def build() -> Task:
        from evoforge.tasks.families import algo

        return algo.build(lang)
    return build


def _lazy(module: str, name: str) -> Callable[[], Task]:
    def build() -> Task:
        import importlib

        return importlib.import_module(f"evoforge.tasks.families.{module}").build(name)
    return build


FAMILIES: dict[str, dict[str, Callable[[], Task]]] = {
    "algorithm-engineering": {"net-capture-cpp": _algo("cpp"), "net-capture-py": _algo("python")},
    "performance-kernels": {"trimul-cpu": _lazy("kernels", "trimul-cpu")},
    "single-cell": {"denoise-synthetic": _lazy("singlecell", "denoise-synthetic")},
    "symbolic-regression": {"oscillator1": _lazy("symreg", "oscillator1"), "oscillator2": _lazy("symreg", "oscillator2")},
}
BUILDERS: dict[str, Callable[[], Task]] = {n: b for fam in FAMILIES.values() for n, b in fam.items()}


def family_names() -> dict[str, list[str]]:
    return {fam: list(tasks) for fam, tasks in FAMILIES.items()}
