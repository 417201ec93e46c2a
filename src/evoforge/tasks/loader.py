"""Task directories, in two layouts.

evoforge layout::

    my-task/
      task.toml (or task.yaml)   name, description, direction, time_limit, known values, ...
      initial_program.py         the starting program (EVOLVE-BLOCK markers optional)
      evaluator.py               evaluate(program_path) -> dict, as in OpenEvolve

OpenEvolve layout, unchanged: ``initial_program.py`` + ``evaluator.py`` (+ optional
``config.yaml``, of which the system prompt, evaluator timeout and cascade thresholds are read;
other keys are ignored). OpenEvolve maximises ``combined_score``.

In both layouts the evaluator runs inside the sandbox on the program's file; it returns a dict
whose ``combined_score`` is the fitness and whose other numbers are metrics (an ``error`` key
marks the program invalid). ``evaluate_stage1/2/3`` make a cascade.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import yaml

from evoforge.tasks.base import Direction, KnownValue, Shaping, Task
from evoforge.tasks.errors import TaskError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MANIFEST_KEYS = {
    "name", "description", "direction", "entry", "time_limit", "memory_mb", "initial_program",
    "evaluator", "object_kind", "initial_score", "best_human", "best_ai", "shaping",
    "cascade_thresholds", "params",
}
EVOLVE_START = "# EVOLVE-BLOCK-START"


def load_task_dir(path: Path) -> Task:
    path = Path(path)
    if not path.is_dir():
        raise TaskError(f"task directory {str(path)!r} does not exist")
    manifests = [p for p in (path / "task.toml", path / "task.yaml", path / "task.yml") if p.exists()]
    if len(manifests) > 1:
        raise TaskError(f"{path}: both {manifests[0].name} and {manifests[1].name}; keep one manifest")
    if manifests:
        return _load_evoforge(path, manifests[0])
    return _load_openevolve(path)


def _read_manifest(file: Path) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
        data = tomllib.loads(text) if file.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TaskError(f"{file}: malformed manifest: {first}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{file}: cannot read: {exc}") from None
    if not isinstance(data, dict):
        raise TaskError(f"{file}: the manifest must be a table of keys, got {type(data).__name__}")
    return data


def _load_evoforge(path: Path, manifest: Path) -> Task:
    m = _read_manifest(manifest)
    unknown = sorted(set(m) - MANIFEST_KEYS)
    if unknown:
        raise TaskError(f"{manifest}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(MANIFEST_KEYS))})")
    where = manifest.name
    program = _read_program(path / _string(m, "initial_program", where, "initial_program.py"))
    evaluator = _check_evaluator(path / _string(m, "evaluator", where, "evaluator.py"))
    params = m.get("params", {})
    if not isinstance(params, dict):
        raise TaskError(f"{where}: 'params' must be a table")
    params = dict(params)
    if "cascade_thresholds" in m:
        params["cascade_thresholds"] = _floats(m["cascade_thresholds"], "cascade_thresholds", where)
    return Task(
        name=_string(m, "name", where, path.resolve().name),
        description=_string(m, "description", where, _default_description(path, evaluator)),
        initial_program=program,
        direction=_direction(m.get("direction", "max"), where),
        verify=None,
        entry=_string(m, "entry", where, "solve"),
        object_kind=_string(m, "object_kind", where, "generic"),
        best_human=_known(m.get("best_human"), "best_human", where),
        best_ai=_known(m.get("best_ai"), "best_ai", where),
        initial_score=_number(m.get("initial_score"), "initial_score", where),
        time_limit=_positive(m.get("time_limit", 60.0), "time_limit", where),
        memory_mb=int(_positive(m.get("memory_mb", 2048), "memory_mb", where)),
        evolve_blocks=EVOLVE_START in program,
        shaping=_shaping(m.get("shaping"), where),
        evaluator_path=evaluator,
        params=params,
    )


def _load_openevolve(path: Path) -> Task:
    missing = [f for f in ("initial_program.py", "evaluator.py") if not (path / f).exists()]
    if missing:
        raise TaskError(
            f"{path}: not a task directory: missing {' and '.join(missing)} "
            "(need task.toml/task.yaml + initial_program.py + evaluator.py, or OpenEvolve's initial_program.py + evaluator.py)"
        )
    program = _read_program(path / "initial_program.py")
    evaluator = _check_evaluator(path / "evaluator.py")
    config = _read_manifest(path / "config.yaml") if (path / "config.yaml").exists() else {}
    prompt = config.get("prompt") if isinstance(config.get("prompt"), dict) else {}
    ev = config.get("evaluator") if isinstance(config.get("evaluator"), dict) else {}
    params: dict[str, Any] = {"layout": "openevolve"}
    system = prompt.get("system_message")
    if not system and isinstance(prompt.get("system_message_list"), list) and prompt["system_message_list"]:
        first = prompt["system_message_list"][0]
        system = first.get("message") if isinstance(first, dict) else first
    if isinstance(system, str) and system.strip():
        params["system_message"] = system.strip()
    if ev.get("cascade_evaluation") and ev.get("cascade_thresholds") is not None:
        params["cascade_thresholds"] = _floats(ev["cascade_thresholds"], "evaluator.cascade_thresholds", "config.yaml")
    timeout = ev.get("timeout", 60.0)
    return Task(
        name=path.resolve().name,
        description=params.get("system_message") or _default_description(path, evaluator),
        initial_program=program,
        direction=Direction.MAX,  # OpenEvolve maximises combined_score
        verify=None,
        evolve_blocks=EVOLVE_START in program,
        time_limit=_positive(timeout, "evaluator.timeout", "config.yaml"),
        evaluator_path=evaluator,
        params=params,
    )


def _read_program(file: Path) -> str:
    if not file.is_file():
        raise TaskError(f"{file}: initial program not found")
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{file}: cannot read: {exc}") from None
    try:
        ast.parse(text, filename=str(file))
    except SyntaxError as exc:
        raise TaskError(f"{file}: line {exc.lineno}: the initial program does not compile: {exc.msg}") from None
    return text


def _check_evaluator(file: Path) -> Path:
    """The evaluator must compile and define evaluate() or evaluate_stage1(); it is not run here."""
    if not file.is_file():
        raise TaskError(f"{file}: evaluator not found")
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    except SyntaxError as exc:
        raise TaskError(f"{file}: line {exc.lineno}: the evaluator does not compile: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{file}: cannot read: {exc}") from None
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if not defined & {"evaluate", "evaluate_stage1"}:
        raise TaskError(f"{file}: the evaluator defines no evaluate(program_path) function")
    return file.resolve()


def _default_description(path: Path, evaluator: Path) -> str:
    return (
        f"Improve the program of task {path.resolve().name!r}. The evaluator {evaluator.name} runs it and "
        "reports combined_score (the fitness) and other metrics."
    )


def _string(m: dict[str, Any], key: str, where: str, default: str) -> str:
    value = m.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise TaskError(f"{where}: '{key}' must be a non-empty string")
    return value


def _direction(value: Any, where: str) -> Direction:
    text = str(value).strip().lower()
    aliases = {"max": "max", "maximize": "max", "maximise": "max", "min": "min", "minimize": "min", "minimise": "min"}
    if text not in aliases:
        raise TaskError(f"{where}: direction must be 'max' or 'min', got {value!r}")
    return Direction(aliases[text])


def _number(value: Any, key: str, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TaskError(f"{where}: '{key}' must be a number, got {value!r}")
    return float(value)


def _positive(value: Any, key: str, where: str) -> float:
    num = _number(value, key, where)
    if num is None or not num > 0:
        raise TaskError(f"{where}: '{key}' must be a positive number, got {value!r}")
    return num


def _floats(value: Any, key: str, where: str) -> list[float]:
    if not isinstance(value, list):
        raise TaskError(f"{where}: '{key}' must be a list of numbers")
    return [float(_number(v, key, where)) for v in value]  # type: ignore[arg-type]


def _known(value: Any, key: str, where: str) -> KnownValue | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return KnownValue(float(value), "")
    if isinstance(value, dict) and "value" in value:
        return KnownValue(float(_number(value["value"], f"{key}.value", where)), str(value.get("source", "")))  # type: ignore[arg-type]
    raise TaskError(f"{where}: '{key}' must be a number or a table {{value = ..., source = \"...\"}}")


def _shaping(value: Any, where: str) -> Shaping | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not {"lower", "upper"} <= set(value):
        raise TaskError(f"{where}: 'shaping' must be a table with lower, upper (and optional alpha, k)")
    lower = _number(value["lower"], "shaping.lower", where)
    upper = _number(value["upper"], "shaping.upper", where)
    if lower is None or upper is None or not upper > lower:
        raise TaskError(f"{where}: shaping needs upper > lower, got lower={lower} upper={upper}")
    alpha = _number(value.get("alpha", 1.0), "shaping.alpha", where)
    k = _number(value.get("k", 3.0), "shaping.k", where)
    return Shaping(lower=lower, upper=upper, alpha=float(alpha or 1.0), k=float(k or 3.0))
