"""Task directories, in two layouts, and a program + evaluator pair.

evoforge layout::

    my-task/
      task.toml (or task.yaml)   name, description, direction, time_limit, known values, ...
      initial_program.py         the starting program (EVOLVE-BLOCK markers optional)
      evaluator.py               evaluate(program_path) -> dict, as in OpenEvolve

OpenEvolve layout, unchanged: ``initial_program.<ext>`` + ``evaluator.py`` (+ optional
``config.yaml`` or ``config_*.yaml``: its system prompt, evaluator timeout, memory limit and
cascade, with OpenEvolve's defaults: 300 s, cascade on, thresholds 0.5/0.75/0.9). OpenEvolve
maximises ``combined_score``. ``load_program_evaluator`` builds the same kind of task from the
two files of ``evoforge run PROGRAM EVALUATOR`` (OpenEvolve's command line).

In both layouts the evaluator runs inside the sandbox on the program's file; it returns a dict
(or OpenEvolve's EvaluationResult) whose ``combined_score`` is the fitness and whose other
numbers are metrics (an ``error`` key marks the program invalid). ``evaluate_stage1/2/3`` make
a cascade. ``TaskOverrides`` (a run config's ``task_options``) changes limits and settings of
any task at load time.
"""
from __future__ import annotations

import ast
import dataclasses
import os
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
    "cascade_thresholds", "params", "env", "env_pass", "scratch", "remeasure",
}
EVOLVE_START = "# EVOLVE-BLOCK-START"
OE_MEMORY_MB = 4096  # OpenEvolve sets no memory limit; JAX/torch evaluators reserve GBs of address space


@dataclasses.dataclass
class TaskOverrides:
    """Settings a run applies on top of a task's own (``task_options`` in a run config).

    ``evaluator`` is only for a program + evaluator pair; ``env`` holds fixed values and
    ``env_pass`` names host variables handed to the evaluator (nothing else of the host's
    environment reaches it).
    """

    evaluator: str | None = None
    description: str | None = None
    time_limit: float | None = None
    memory_mb: int | None = None
    cascade: bool | None = None
    cascade_thresholds: list[float] | None = None
    program_suffix: str | None = None
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    env_pass: list[str] = dataclasses.field(default_factory=list)
    artifacts: bool | None = None
    artifacts_in_prompt: bool | None = None
    max_artifact_bytes: int | None = None
    scratch: bool | None = None  # False: the evaluator runs in its folder, read-only (saves a copy per evaluation)
    remeasure: int | None = None  # noisy rewards: re-measure a candidate for a new best this many times, beside the seed

    @classmethod
    def parse(cls, data: dict[str, Any] | None) -> "TaskOverrides":
        data = dict(data or {})
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise TaskError(f"task_options: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(names))})")
        return cls(**data)

    def apply(self, task: Task) -> Task:
        params = dict(task.params)
        if self.cascade is not None:
            params["cascade"] = self.cascade
        if self.cascade_thresholds is not None:
            params["cascade_thresholds"] = _floats(self.cascade_thresholds, "cascade_thresholds", "task_options")
        for key in ("program_suffix", "artifacts", "artifacts_in_prompt", "max_artifact_bytes", "scratch"):
            if getattr(self, key) is not None:
                params[key] = getattr(self, key)
        env = {**params.get("env", {}), **resolve_env(self.env, self.env_pass, "task_options")}
        if env:
            params["env"] = env
        changes: dict[str, Any] = {"params": params}
        if self.description:
            changes["description"] = self.description
        if self.time_limit is not None:
            changes["time_limit"] = _positive(self.time_limit, "time_limit", "task_options")
        if self.memory_mb is not None:
            changes["memory_mb"] = int(_positive(self.memory_mb, "memory_mb", "task_options"))
        if self.remeasure is not None:
            changes["remeasure"] = _remeasure(self.remeasure, "task_options")
        return dataclasses.replace(task, **changes)


def resolve_env(fixed: Any, passed: Any, where: str) -> dict[str, str]:
    """Fixed values plus the named host variables that are set (unset ones are left out)."""
    if not isinstance(fixed, dict) or not all(isinstance(k, str) for k in fixed):
        raise TaskError(f"{where}: 'env' must be a table of NAME = value")
    if not isinstance(passed, (list, tuple)) or not all(isinstance(n, str) and n for n in passed):
        raise TaskError(f"{where}: 'env_pass' must be a list of variable names")
    out = {k: str(v) for k, v in fixed.items()}
    out.update({n: os.environ[n] for n in passed if n in os.environ})
    return out


def task_name(path: Path) -> str:
    """A folder task's name: its path relative to where the user is (its own name when outside)."""
    resolved = path.resolve()
    try:
        rel = resolved.relative_to(Path.cwd().resolve())
    except ValueError:
        return resolved.name
    return str(rel) if str(rel) != "." else resolved.name


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
    env = resolve_env(m.get("env", {}), m.get("env_pass", []), where)
    if env:
        params["env"] = env
    if "scratch" in m:
        params["scratch"] = bool(m["scratch"])
    program_file = path / _string(m, "initial_program", where, "initial_program.py")
    if program_file.suffix != ".py":
        params["program_suffix"] = program_file.suffix
    return Task(
        name=_string(m, "name", where, task_name(path)),
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
        remeasure=_remeasure(m.get("remeasure", 0), where),
        params=params,
    )


def _remeasure(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 20:
        raise TaskError(f"{where}: 'remeasure' must be a whole number 0..20 (re-measurements of a new best), got {value!r}")
    return value


def _load_openevolve(path: Path) -> Task:
    programs = sorted(p for p in path.glob("initial_program.*") if p.is_file())
    programs.sort(key=lambda p: p.suffix != ".py")  # a Python program first, if there are several
    missing = ([] if programs else ["initial_program.py"]) + ([] if (path / "evaluator.py").exists() else ["evaluator.py"])
    if missing:
        raise TaskError(
            f"{path}: not a task directory: missing {' and '.join(missing)} "
            "(need task.toml/task.yaml + initial_program.py + evaluator.py, or OpenEvolve's initial_program.py + evaluator.py)"
        )
    configs = [path / n for n in ("config.yaml", "config.yml") if (path / n).is_file()]
    configs += sorted(path.glob("config_*.yaml")) + sorted(path.glob("config_*.yml"))
    config_file = configs[0] if configs else None
    return openevolve_task(programs[0], path / "evaluator.py", config_file, task_name(path))


def load_program_evaluator(program: Path, evaluator: Path) -> Task:
    """OpenEvolve's ``openevolve-run PROGRAM EVALUATOR``: the two files, OpenEvolve's defaults."""
    program, evaluator = Path(program), Path(evaluator)
    for file, what in ((program, "program"), (evaluator, "evaluator")):
        if not file.is_file():
            raise TaskError(f"{file}: {what} file not found")
    return openevolve_task(program, evaluator, None, task_name(program.resolve().parent))


def openevolve_task(program_file: Path, evaluator_file: Path, config_file: Path | None, name: str) -> Task:
    """A task in OpenEvolve's terms: its config's evaluator settings, or its defaults."""
    from evoforge.compat.openevolve_config import OpenEvolveConfigError, evaluator_settings, system_message

    program = _read_program(program_file)
    evaluator = _check_evaluator(evaluator_file)
    config = _read_manifest(config_file) if config_file is not None else {}
    where = config_file.name if config_file is not None else "OpenEvolve defaults"
    ev = config.get("evaluator") if isinstance(config.get("evaluator"), dict) else {}
    try:
        settings = evaluator_settings(ev)
        system = system_message(config)
    except OpenEvolveConfigError as exc:
        raise TaskError(f"{config_file}: {exc}") from None
    params: dict[str, Any] = {"layout": "openevolve", "cascade": settings["cascade"],
                              "cascade_thresholds": settings["cascade_thresholds"], "config_file": where}
    suffix = config.get("file_suffix") or program_file.suffix
    if suffix and suffix != ".py":
        params["program_suffix"] = suffix if suffix.startswith(".") else f".{suffix}"
    if "artifacts" in settings:
        params["artifacts"] = settings["artifacts"]
    if system:
        params["system_message"] = system
    return Task(
        name=name,
        description=system or _default_description(program_file.parent, evaluator),
        initial_program=program,
        direction=Direction.MAX,  # OpenEvolve maximises combined_score
        verify=None,
        evolve_blocks="EVOLVE-BLOCK-START" in program,
        time_limit=settings["time_limit"],
        memory_mb=settings.get("memory_mb", OE_MEMORY_MB),
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
    if file.suffix != ".py":
        return text  # another language: its evaluator compiles or interprets it
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
