"""Discovery tasks: built-in problems with exact verifiers, and user task directories.

    from evoforge.tasks import get_task, builtin_names, TaskError
    task = get_task("circle-packing-26")   # a built-in name, or a path to a task directory
"""
from __future__ import annotations

from pathlib import Path

from evoforge.tasks.base import Direction, KnownValue, Shaping, Task, Verdict
from evoforge.tasks.errors import TaskError

__all__ = [
    "Direction", "KnownValue", "Shaping", "Task", "TaskError", "Verdict",
    "all_task_names", "builtin_names", "get_task", "load_task_dir", "run_in_process", "task_families",
]


def builtin_names() -> list[str]:
    """Names of the built-in mathematical tasks (constructions with exact verifiers), in catalogue order."""
    from evoforge.tasks.catalog import SPECS

    return list(SPECS)


def task_families() -> dict[str, list[str]]:
    """Every built-in task by family: 'mathematics' first, then the families of tasks/families/."""
    from evoforge.tasks.families import family_names

    return {"mathematics": builtin_names(), **family_names()}


def all_task_names() -> list[str]:
    return [n for names in task_families().values() for n in names]


def get_task(name_or_path: str | Path, options: dict | None = None) -> Task:
    """A built-in task by name, or a task directory (evoforge or OpenEvolve layout) by path.

    ``options`` (a run config's ``task_options``, see loader.TaskOverrides) changes the task's
    limits and settings; with ``options["evaluator"]``, ``name_or_path`` is a program file
    evaluated by that evaluator (OpenEvolve's ``PROGRAM EVALUATOR``).
    Raises TaskError (one line) for an unknown name or a malformed directory.
    """
    if options:
        from evoforge.tasks.loader import TaskOverrides, load_program_evaluator

        over = TaskOverrides.parse(options)
        if over.evaluator:
            return over.apply(load_program_evaluator(Path(str(name_or_path)).expanduser(), Path(over.evaluator)))
        return over.apply(get_task(name_or_path))
    from evoforge.tasks.catalog import SPECS

    key = str(name_or_path)
    if key in SPECS:
        return SPECS[key].build()
    from evoforge.tasks.families import BUILDERS

    if key in BUILDERS:
        return BUILDERS[key]()
    if key.startswith("denoise-h5ad:") or key.startswith("denoise-matrix:"):
        from evoforge.tasks.families import singlecell

        return singlecell.real_task(key.split(":", 1)[1])
    path = Path(key).expanduser()
    if path.is_dir():
        from evoforge.tasks.loader import load_task_dir

        return load_task_dir(path)
    if path.exists():
        raise TaskError(f"{key!r} is a file; a task is a built-in name or a task directory "
                        "(or give the program and its evaluator: evoforge run PROGRAM EVALUATOR)")
    raise TaskError(f"unknown task {key!r} (built-in: {', '.join(all_task_names())}; or give a task directory)")


def load_task_dir(path: str | Path) -> Task:
    from evoforge.tasks.loader import load_task_dir as _load

    return _load(Path(path))


def run_in_process(task: Task, code: str | None = None) -> Verdict:
    """Run a program's entry in this process (no sandbox: trusted code only, e.g. the shipped
    initial programs in tests) and verify what it returns."""
    if task.verify is None or task.evaluator_path is not None:
        raise TaskError(f"task {task.name!r} has no in-process verifier (its evaluator runs in the sandbox)")
    namespace: dict[str, object] = {"__name__": "__evoforge_program__"}
    exec(compile(code if code is not None else task.initial_program, f"<{task.name}>", "exec"), namespace)
    entry = namespace.get(task.entry)
    if not callable(entry):
        raise TaskError(f"the program defines no function {task.entry!r}")
    return task.verify(entry())
