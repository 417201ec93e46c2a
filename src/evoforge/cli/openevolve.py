"""`evoforge run` for OpenEvolve users: PROGRAM EVALUATOR, OpenEvolve's YAML and its flags.

    evoforge run initial_program.py evaluator.py --config config.yaml --iterations 100 \
        --api-base http://127.0.0.1:8000/v1 --primary-model qwen

What the YAML sets is mapped (evoforge.compat.openevolve_config); what has no meaning here is
printed once as ignored. Command-line values win over the file, as in OpenEvolve.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Prepared:
    data: dict[str, Any]  # the run config dict for build_config
    task: str  # what goes into RunConfig.task
    notes: list[str] = field(default_factory=list)  # lines for the user (mapped, ignored, warnings)
    stem: str = ""  # for the default run directory name


def prepare(data: dict[str, Any], task: str, evaluator: str | None, *, iterations: int | None = None,
            api_base: str | None = None, primary_model: str | None = None, env_pass: list[str] | None = None,
            memory_mb: int | None = None, strict_seed: bool = False, config_name: str = "",
            backend_name: str | None = None) -> Prepared:
    """Fold OpenEvolve's inputs into an evoforge run config dict (raises ValueError: one line)."""
    from evoforge.compat.openevolve_config import OpenEvolveConfigError, looks_like_openevolve, map_openevolve

    out = Prepared(dict(data), task, stem=Path(task).name)
    options: dict[str, Any] = dict(out.data.pop("task_options", None) or {})
    if looks_like_openevolve(out.data):
        try:
            mapped = map_openevolve(out.data)
        except OpenEvolveConfigError as exc:
            raise ValueError(f"{config_name or 'config'}: {exc}") from None
        from evoforge.compat.openevolve_config import system_message

        system = system_message(out.data)
        out.data = mapped.run
        options.update(mapped.task)
        llm = out.data.get("backend") or {}
        if backend_name and llm and backend_name != llm.get("name"):  # --backend wins over the config's llm
            out.data.pop("backend")
            out.notes.append(f"--backend {backend_name}: the config's llm settings are not used")
        if system:
            options["description"] = system
        where = config_name or "OpenEvolve config"
        out.notes.append(f"{where}: OpenEvolve config mapped: " + ("; ".join(mapped.applied) or "task settings"))
        if mapped.ignored:
            out.notes.append(f"{where}: ignored (no meaning in evoforge): " + ", ".join(mapped.ignored))
    if evaluator is not None:
        program, ev = Path(task).expanduser(), Path(evaluator).expanduser()
        for file, what in ((program, "program"), (ev, "evaluator")):
            if not file.is_file():
                raise ValueError(f"{file}: {what} file not found")
        out.task = str(program.resolve())  # absolute: `evoforge resume` works from anywhere
        options["evaluator"] = str(ev.resolve())
        out.stem = program.resolve().parent.name
    if iterations is not None:
        if iterations < 0:
            raise ValueError(f"--iterations must be >= 0, got {iterations}")
        out.data["budget"] = iterations + 1  # OpenEvolve's iterations are children; evoforge counts the seed too
    backend = dict(out.data.get("backend") or {})
    if api_base:
        backend.update(name="openai", base_url=api_base)
    if primary_model:
        backend.update(name="openai", model=primary_model)
    if backend:
        out.data["backend"] = backend
    prompt = out.data.get("prompt") or {}
    if prompt.get("edit_mode") == "full" and (backend_name or backend.get("name", "builtin")) == "builtin":
        prompt["edit_mode"] = "diff"  # the model-free operator writes SEARCH/REPLACE edits only
        out.notes.append("diff_based_evolution: false: the builtin backend writes diffs; edit_mode stays diff")
    if env_pass:
        missing = [n for n in env_pass if n not in os.environ]
        if missing:
            out.notes.append(f"--env-pass: {', '.join(missing)} not set here; not passed")
        options["env_pass"] = sorted(set(options.get("env_pass", [])) | set(env_pass))
    if memory_mb is not None:
        options["memory_mb"] = memory_mb
    if strict_seed:
        out.data["strict_seed"] = True
    if options:
        out.data["task_options"] = options
    return out
