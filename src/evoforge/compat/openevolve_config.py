"""OpenEvolve's config.yaml -> evoforge: run keys, task settings, and the keys that mean nothing here.

Schema read from OpenEvolve's openevolve/config.py (algorithmicsuperintelligence/openevolve at
411fb59c886c18704caaffb611e17cf9e7d824d2). Every key is either mapped (docs/MIGRATING.md has
the table of where each goes) or listed once in ``ignored`` with a reason. Nothing is dropped
silently.

    mapped = map_openevolve(yaml_dict)
    mapped.run    # RunConfig fields (budget, backend, selector_options, ...)
    mapped.task   # task overrides (evoforge.tasks.loader.TaskOverrides fields)
    mapped.ignored, mapped.applied   # one line each for the user
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# OpenEvolve's defaults that change what an evaluation does (EvaluatorConfig).
OE_TIMEOUT = 300.0
OE_CASCADE = True
OE_THRESHOLDS = [0.5, 0.75, 0.9]

# Keys of OpenEvolve's Config that evoforge has no use for, with the reason shown to the user.
_IGNORED: dict[str, str] = {
    "checkpoint_interval": "every step is committed to run.db; `evoforge resume` continues any run",
    "log_level": "", "log_dir": "",
    "max_code_length": "", "diff_pattern": "SEARCH/REPLACE is always parsed with evoforge's own parser",
    "early_stopping_patience": "", "convergence_threshold": "", "early_stopping_metric": "",
    "max_tasks_per_child": "", "evolution_trace": "run.db keeps every child",
    "llm.evaluator_models": "no LLM feedback", "llm.reasoning_effort": "", "llm.provider": "only OpenAI-compatible servers",
    "llm.manual_mode": "", "llm.random_seed": "the run's seed is used", "llm.retry_delay": "",
    "llm.api_key": "keys are read from an environment variable only (llm.api_key: ${VAR} names it)",
    "prompt.template_dir": "evoforge's templates differ (prompt.template_dir in an evoforge config)",
    "prompt.evaluator_system_message": "no LLM feedback",
    "database.db_path": "the run directory holds run.db", "database.in_memory": "", "database.log_prompts": "",
    "database.elite_selection_ratio": "", "database.diversity_metric": "", "database.diversity_reference_size": "",
    "database.artifacts_base_path": "artifacts are stored per child in run.db",
    "database.artifact_size_threshold": "", "database.cleanup_old_artifacts": "", "database.artifact_retention_days": "",
    "database.max_snapshot_artifacts": "", "database.novelty_llm": "", "database.embedding_model": "",
    "database.similarity_threshold": "", "database.random_seed": "the run's seed is used",
    "evaluator.max_retries": "an evaluation is not retried (the sandbox is deterministic)",
    "evaluator.cpu_limit": "", "evaluator.distributed": "", "evaluator.use_llm_feedback": "no LLM feedback",
    "evaluator.llm_feedback_weight": "no LLM feedback", "evaluator.max_artifact_storage": "artifacts are bounded per child",
}
_PROMPT_IGNORED = (
    "programs_as_changes_description", "system_message_changes_description", "initial_changes_description",
    "use_template_stochasticity", "template_variations", "use_meta_prompting", "meta_prompt_weight",
    "artifact_security_filter", "suggest_simplification_after_chars", "include_changes_under_chars",
    "concise_implementation_max_lines", "comprehensive_implementation_min_lines", "diff_summary_max_line_len",
    "diff_summary_max_lines", "code_length_threshold",
)
_IGNORED.update({f"prompt.{k}": "" for k in _PROMPT_IGNORED})
_MODEL_KEYS = ("api_base", "api_key", "name", "weight", "temperature", "top_p", "max_tokens", "timeout", "retries",
               "retry_delay", "random_seed", "reasoning_effort", "system_message", "provider", "init_client",
               "max_budget_usd", "manual_mode")

_DB_OPTIONS = ("population_size", "archive_size", "num_islands", "feature_dimensions", "feature_bins",
               "migration_interval", "migration_rate", "exploration_ratio", "exploitation_ratio")
_TOP = {"max_iterations", "random_seed", "language", "file_suffix", "diff_based_evolution", "llm", "prompt",
        "database", "evaluator"} | {k for k in _IGNORED if "." not in k}
_ENV_REF = re.compile(r"^\$\{([^}]+)\}$")


class OpenEvolveConfigError(ValueError):
    """A value of an OpenEvolve config that cannot be used (one line)."""


@dataclass
class Mapped:
    run: dict[str, Any] = field(default_factory=dict)
    task: dict[str, Any] = field(default_factory=dict)
    applied: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def looks_like_openevolve(data: dict[str, Any]) -> bool:
    """True for a dict in OpenEvolve's schema rather than evoforge's (their top-level keys differ)."""
    if any(k in data for k in ("max_iterations", "llm", "database", "evaluator", "diff_based_evolution")):
        return True
    prompt = data.get("prompt")
    return isinstance(prompt, dict) and ("system_message" in prompt or "num_top_programs" in prompt)


def map_openevolve(data: dict[str, Any]) -> Mapped:
    m = Mapped()
    for key in data:
        if key not in _TOP:
            _ignore(m, key, "not an OpenEvolve key")
        elif key in _IGNORED:
            _ignore(m, key, _IGNORED[key])
    if data.get("max_iterations") is not None:
        m.run["budget"] = _int(data["max_iterations"], "max_iterations", 0) + 1
        m.applied.append(f"max_iterations {data['max_iterations']} -> budget {m.run['budget']}")
    if data.get("random_seed") is not None:
        m.run["seed"] = _int(data["random_seed"], "random_seed", None)
    suffix = data.get("file_suffix") or _suffix_of(data.get("language"))
    if suffix:
        m.task["program_suffix"] = suffix if str(suffix).startswith(".") else f".{suffix}"
    if "diff_based_evolution" in data:
        m.run.setdefault("prompt", {})["edit_mode"] = "diff" if data["diff_based_evolution"] else "full"
    _map_llm(m, _section(data, "llm"))
    _map_prompt(m, _section(data, "prompt"))
    _map_database(m, _section(data, "database"))
    m.task.update(evaluator_settings(_section(data, "evaluator"), m))
    return m


def evaluator_settings(ev: dict[str, Any], m: Mapped | None = None) -> dict[str, Any]:
    """Task overrides from OpenEvolve's ``evaluator`` section, with OpenEvolve's defaults filled in."""
    out: dict[str, Any] = {
        "time_limit": _pos(ev.get("timeout", OE_TIMEOUT), "evaluator.timeout"),
        "cascade": bool(ev.get("cascade_evaluation", OE_CASCADE)),
        "cascade_thresholds": [float(_num(v, "evaluator.cascade_thresholds")) for v in
                               _list(ev.get("cascade_thresholds", OE_THRESHOLDS), "evaluator.cascade_thresholds")],
    }
    if ev.get("memory_limit_mb") is not None:
        out["memory_mb"] = int(_pos(ev["memory_limit_mb"], "evaluator.memory_limit_mb"))
    if "enable_artifacts" in ev:
        out["artifacts"] = bool(ev["enable_artifacts"])
    if m is not None:
        if ev.get("parallel_evaluations") is not None:
            m.run["workers"] = _int(ev["parallel_evaluations"], "evaluator.parallel_evaluations", 1)
        known = {"timeout", "cascade_evaluation", "cascade_thresholds", "memory_limit_mb", "enable_artifacts",
                 "parallel_evaluations"}
        for key in ev:
            if key not in known:
                _ignore(m, f"evaluator.{key}", _IGNORED.get(f"evaluator.{key}", "not an OpenEvolve key"))
    return out


def system_message(data: dict[str, Any]) -> str | None:
    """prompt.system_message (or ThetaEvolve's system_message_list[0]), else llm.system_message."""
    prompt, llm = _section(data, "prompt"), _section(data, "llm")
    text = prompt.get("system_message")
    listed = prompt.get("system_message_list")
    if not text and isinstance(listed, list) and listed:
        text = listed[0].get("message") if isinstance(listed[0], dict) else listed[0]
    if not text or text == "system_message":  # OpenEvolve's placeholder default
        text = llm.get("system_message")
    return text.strip() if isinstance(text, str) and text.strip() and text != "system_message" else None


def _map_llm(m: Mapped, llm: dict[str, Any]) -> None:
    models = [x for x in llm.get("models") or [] if isinstance(x, dict) and x.get("name")]
    for i, entry in enumerate(llm.get("models") or []):
        for key in entry if isinstance(entry, dict) else ():
            if key not in _MODEL_KEYS:
                _ignore(m, f"llm.models[{i}].{key}", "not an OpenEvolve key")
    if llm.get("primary_model"):
        models.append({"name": llm["primary_model"], "weight": llm.get("primary_model_weight") or 1.0})
    if llm.get("secondary_model"):
        models.append({"name": llm["secondary_model"], "weight": llm.get("secondary_model_weight") or 0.2})
    backend: dict[str, Any] = {}
    options: dict[str, Any] = {}
    if models:
        best = max(models, key=lambda x: float(x.get("weight") or 1.0))
        backend.update(name="openai", model=str(best["name"]))
        base = best.get("api_base") or llm.get("api_base")
        if base:
            backend["base_url"] = str(base)
        others = [str(x["name"]) for x in models if x is not best]
        m.applied.append(f"llm model {best['name']} -> backend openai" + (f" at {backend['base_url']}" if base else ""))
        if others:
            _ignore(m, "llm.models", f"one model per run: {best['name']} is used, not {', '.join(others)}")
    elif llm.get("api_base"):
        backend.update(name="openai", base_url=str(llm["api_base"]))
    key = llm.get("api_key")
    if isinstance(key, str) and _ENV_REF.match(key):
        backend["api_key_env"] = _ENV_REF.match(key).group(1)  # type: ignore[union-attr]
    elif key:
        _ignore(m, "llm.api_key", _IGNORED["llm.api_key"])
    for oe, ours in (("temperature", "temperature"), ("max_tokens", "max_tokens")):
        if llm.get(oe) is not None:
            m.run[ours] = llm[oe]
    if llm.get("top_p") is not None:
        options["extra_body"] = {"top_p": float(llm["top_p"])}
    if llm.get("timeout") is not None:
        options["timeout"] = float(llm["timeout"])
    if llm.get("retries") is not None:
        options["max_retries"] = _int(llm["retries"], "llm.retries", 0)
    if options:
        backend["options"] = options
    if backend:
        m.run["backend"] = backend
    known = {"api_base", "models", "primary_model", "primary_model_weight", "secondary_model",
             "secondary_model_weight", "api_key", "temperature", "max_tokens", "top_p", "timeout", "retries",
             "system_message", "name", "weight", "init_client", "max_budget_usd"}
    for k in llm:
        if k not in known:
            _ignore(m, f"llm.{k}", _IGNORED.get(f"llm.{k}", "not an OpenEvolve key"))


def _map_prompt(m: Mapped, prompt: dict[str, Any]) -> None:
    if any(k in prompt for k in ("num_top_programs", "num_diverse_programs")):
        shown = int(prompt.get("num_top_programs", 3) or 0) + int(prompt.get("num_diverse_programs", 2) or 0)
        m.run.setdefault("prompt", {})["show_inspirations"] = shown > 0
    if "include_artifacts" in prompt:
        m.task["artifacts_in_prompt"] = bool(prompt["include_artifacts"])
    if prompt.get("max_artifact_bytes") is not None:
        m.task["max_artifact_bytes"] = _int(prompt["max_artifact_bytes"], "prompt.max_artifact_bytes", 1)
    known = {"system_message", "system_message_list", "num_top_programs", "num_diverse_programs",
             "include_artifacts", "max_artifact_bytes"}
    for k in prompt:
        if k not in known:
            _ignore(m, f"prompt.{k}", _IGNORED.get(f"prompt.{k}", "not an OpenEvolve key"))


def _map_database(m: Mapped, db: dict[str, Any]) -> None:
    options = {k: db[k] for k in _DB_OPTIONS if db.get(k) is not None}
    if isinstance(options.get("feature_bins"), dict):
        bins = options.pop("feature_bins")
        _ignore(m, "database.feature_bins", f"per-dimension bins are not supported ({bins}); 10 bins each")
    if "feature_dimensions" in options:
        options["feature_dimensions"] = list(options["feature_dimensions"])
    if options:
        m.run["selector"] = "map-elites"
        m.run["selector_options"] = options
    for k in db:
        if k not in _DB_OPTIONS:
            _ignore(m, f"database.{k}", _IGNORED.get(f"database.{k}", "not an OpenEvolve key"))


def _ignore(m: Mapped, key: str, reason: str) -> None:
    line = f"{key} ({reason})" if reason else key
    if line not in m.ignored:
        m.ignored.append(line)


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise OpenEvolveConfigError(f"'{key}' must be a mapping, got {type(value).__name__}")
    return value


def _suffix_of(language: Any) -> str | None:
    table = {"python": ".py", "rust": ".rs", "r": ".r", "cpp": ".cpp", "c++": ".cpp", "c": ".c", "text": ".txt",
             "javascript": ".js", "julia": ".jl", "go": ".go", "metal": ".metal"}
    return table.get(str(language).lower()) if language else None


def _num(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OpenEvolveConfigError(f"'{key}' must be a number, got {value!r}")
    return float(value)


def _pos(value: Any, key: str) -> float:
    num = _num(value, key)
    if not num > 0:
        raise OpenEvolveConfigError(f"'{key}' must be positive, got {value!r}")
    return num


def _int(value: Any, key: str, low: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low):
        raise OpenEvolveConfigError(f"'{key}' must be an integer" + (f" >= {low}" if low is not None else "")
                                    + f", got {value!r}")
    return value


def _list(value: Any, key: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise OpenEvolveConfigError(f"'{key}' must be a list of numbers, got {value!r}")
    return list(value)
