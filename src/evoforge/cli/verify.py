"""``evoforge tasks`` (the built-in catalogue) and ``evoforge verify TASK FILE``.

FILE is a construction (``.json``: the ``data`` field of a reference file, or a bare JSON value)
scored directly by the task's verifier, or a program (``.py``) run in the sandbox with the
task's limits. Exit status: 0 valid, 1 invalid or no solution, 2 bad usage (one ``error:`` line).
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Optional

import typer

from evoforge.tasks import TaskError, get_task, task_families
from evoforge.tasks.base import Task


def register(app: typer.Typer) -> None:
    app.command("tasks", help="List the built-in tasks with their initial and best known scores.")(tasks_command)
    app.command("verify", help="Verify a construction (.json) or run and score a program (.py) on a task.")(verify_command)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _plain(value: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, non-finite floats to strings."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        try:
            value = value.item()
        except (ValueError, TypeError):
            return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def task_row(task: Task) -> dict[str, Any]:
    target = task.target
    source = ""
    for kv in (task.best_human, task.best_ai):
        if kv is not None and kv.value == target:
            source = kv.source
    return {
        "name": task.name,
        "family": task.family,
        "direction": task.direction.value,
        "initial_score": task.initial_score,
        "best_known": target,
        "best_source": source,
        "object_kind": task.object_kind,
        "time_limit": task.time_limit,
    }


def tasks_command(as_json: bool = typer.Option(False, "--json", help="Print a JSON list instead of a table.")) -> None:
    rows = [task_row(get_task(name)) for names in task_families().values() for name in names]
    if as_json:
        typer.echo(json.dumps(_plain(rows), indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="evoforge built-in tasks")
    table.add_column("family", no_wrap=True)
    table.add_column("task", no_wrap=True)
    table.add_column("dir", justify="center")
    table.add_column("initial", justify="right")
    table.add_column("best known", justify="right")
    table.add_column("by", overflow="fold")
    for r in rows:
        by = r["best_source"].split(", ")[0].split("; ")[0]  # the full source is in --json
        num = lambda v, fmt: "-" if v is None else format(v, fmt)  # noqa: E731 - timing tasks have no fixed initial score
        table.add_row(r["family"], r["name"], r["direction"], num(r["initial_score"], ".6g"), num(r["best_known"], ".9g"), by)
    Console().print(table)


def _read_construction(file: Path) -> Any:
    try:
        obj = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise _fail(f"{file}: malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(f"{file}: cannot read: {exc}") from None
    if isinstance(obj, dict) and "data" in obj:
        return obj["data"]
    return obj


def _verify_json(task: Task, file: Path) -> dict[str, Any]:
    if task.verify is None:
        raise _fail(f"task {task.name!r} has no built-in verifier; give a program (.py) to run its evaluator")
    obj = _read_construction(file)
    start = time.perf_counter()
    verdict = task.verify(obj)
    return {
        "status": "ok" if verdict.valid else "invalid",
        "valid": verdict.valid,
        "score": verdict.score,
        "reason": verdict.reason,
        "metrics": verdict.metrics,
        "wall_time": time.perf_counter() - start,
    }


MAX_TIMEOUT = 7 * 86400.0  # a week: the sandbox's limits and deadlines need finite numbers


def _verify_program(task: Task, file: Path, timeout: float | None) -> dict[str, Any]:
    try:
        code = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(f"{file}: cannot read: {exc}") from None
    try:
        from evoforge.sandbox import SandboxPool
        from evoforge.tasks.evaluate import evaluate_program
    except ImportError as exc:
        raise _fail(f"the sandbox is not available ({exc}); verify a .json construction instead") from None
    try:
        with SandboxPool(workers=1) as pool:
            ev = evaluate_program(task, code, pool, timeout)
    except Exception as exc:  # the pool failed to start: report it, do not crash
        raise _fail(f"the sandbox could not run the program: {type(exc).__name__}: {exc}") from None
    return {
        "status": ev.status.value,
        "valid": ev.valid,
        "score": ev.score,
        "reason": ev.reason,
        "metrics": ev.metrics,
        "wall_time": ev.wall_time,
        "stdout": ev.stdout[-2000:],
        "stderr": ev.stderr[-2000:],
    }


def verify_command(
    task_name: str = typer.Argument(..., metavar="TASK", help="A built-in task name or a task directory."),
    file: Path = typer.Argument(..., metavar="FILE", help="A construction (.json) or a program (.py)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds for a .py program (default: the task's limit)."),
) -> None:
    try:
        task = get_task(task_name)
    except TaskError as exc:
        raise _fail(str(exc)) from None
    if not file.is_file():
        raise _fail(f"{file}: no such file")
    if timeout is not None and not 0 < timeout <= MAX_TIMEOUT:  # inf, nan: one clear line, not an OverflowError
        raise _fail(f"--timeout must be positive and finite (at most {MAX_TIMEOUT:g} s), got {timeout}")
    suffix = file.suffix.lower()
    if suffix == ".json":
        result = _verify_json(task, file)
    elif suffix == ".py" or suffix == task.params.get("program_suffix"):  # e.g. .cpp for net-capture-cpp
        result = _verify_program(task, file, timeout)
    else:
        raise _fail(f"{file}: expected a .json construction or a .py program, got {suffix or 'no extension'}")
    result = {"task": task.name, "file": str(file), **result}
    if as_json:
        typer.echo(json.dumps(_plain(result)))
    else:
        _print_human(task, result)
    raise typer.Exit(0 if result["valid"] else 1)


def _print_human(task: Task, r: dict[str, Any]) -> None:
    from evoforge.cli.textsafe import terminal_safe

    def _echo(line: str) -> None:
        typer.echo(terminal_safe(line))  # the program's reason and metrics may hold escape sequences

    _echo(f"task:   {task.name} ({task.direction.value})")
    _echo(f"status: {r['status']}")
    _echo(f"valid:  {'yes' if r['valid'] else 'no'}")
    if r["score"] is not None:
        _echo(f"score:  {r['score']!r}")
    if r["reason"]:
        _echo(f"reason: {r['reason']}")
    for key, value in _plain(r["metrics"]).items():
        _echo(f"  {key}: {value}")
    _echo(f"time:   {r['wall_time']:.3f} s")
