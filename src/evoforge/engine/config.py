"""One typed config for a run: every default visible (`evoforge config`), validated with clear errors."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evoforge.memory.config import MemoryConfig


class ConfigError(ValueError):
    """A config the user wrote is wrong; the message is one readable line per problem."""


class BackendConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field("builtin", description="builtin (model-free mutation operator) | openai | hf | scripted")
    base_url: Optional[Union[str, list[str]]] = Field(
        None, description="openai: server URL, e.g. http://127.0.0.1:8000/v1; a list: balanced by requests in flight"
    )
    model: Optional[str] = Field(None, description="openai: model name; hf: local path (or 'smollm2')")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the API key")
    options: dict[str, Any] = Field(default_factory=dict, description="extra backend options")


class PromptConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    edit_mode: Literal["diff", "full", "block"] = Field(
        "diff", description="SEARCH/REPLACE diffs, full rewrites, or block (rewrite only the EVOLVE-BLOCK's body)"
    )
    grammar: bool = Field(False, description="constrain decoding to the edit format (GBNF; llamacpp and "
                          "openai on llama.cpp/vLLM/SGLang servers), so every response parses")
    show_inspirations: bool = Field(False, description="ThetaEvolve default is parent-only prompts")
    template_dir: Optional[str] = Field(None, description="directory overriding the prompt templates")


class RunConfig(BaseModel):
    """Everything that defines a run. Paper defaults (ThetaEvolve) unless noted."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field("circle-packing-26", description="built-in task name or task directory")
    task_options: dict[str, Any] = Field(
        default_factory=dict, description="task settings applied at load (evoforge.tasks.loader.TaskOverrides: "
        "time_limit, memory_mb, env, env_pass, cascade, evaluator, ...)"
    )
    strict_seed: bool = Field(False, description="stop when the initial program fails (default: score it 0 and "
                              "go on, as OpenEvolve does; direction max only)")
    backend: BackendConfig = Field(default_factory=BackendConfig)
    budget: int = Field(3000, gt=0, description="sandbox evaluations before the run stops")
    time_limit: Optional[float] = Field(None, gt=0, description="wall-clock seconds before the run stops")
    max_steps: Optional[int] = Field(None, gt=0, description="steps before the run stops")
    batch_size: Optional[int] = Field(
        None, gt=0, description="B parents per step (default: see resolve_batch)"
    )
    n: Optional[int] = Field(None, gt=0, description="responses per prompt (default: see resolve_batch)")
    pipeline: Optional[Literal["lockstep", "overlap"]] = Field(
        None, description="overlap: step t+1 generates while step t evaluates (from the database as it "
        "stood); lockstep: ThetaEvolve's order (default: overlap for model backends, lockstep for builtin)"
    )
    temperature: float = Field(1.0, ge=0)
    max_tokens: int = Field(16384, gt=0)
    seed: int = 0
    selector: str = Field("map-elites", description="map-elites | puct | pacevolve | best-of-n | greedy")
    selector_options: dict[str, Any] = Field(
        default_factory=dict, description="e.g. {size: large}; map-elites without a size: sized to the budget"
    )
    env: Literal["dynamic", "static"] = Field(
        "dynamic", description="dynamic: prompts from the evolving database; static: always from the initial program"
    )
    workers: int = Field(2, gt=0, description="sandbox processes evaluating in parallel")
    executor: str = Field("sandbox", description="what runs the programs (sandbox/base.py EXECUTORS: sandbox, ...)")
    executor_options: dict[str, Any] = Field(default_factory=dict, description="extra options of the executor")
    eval_timeout: Optional[float] = Field(None, gt=0, le=7 * 86400, description="seconds per evaluation (default: the task's)")
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    train: Optional[dict[str, Any]] = Field(None, description="test-time RL (evoforge.rl.TrainConfig fields)")
    memory: MemoryConfig = Field(default_factory=MemoryConfig, description="PACEvolve's idea memory (--memory)")
    picture_interval: float = Field(10.0, ge=0, description="least seconds between picture refreshes (also >= 20x their cost)")
    snapshot_interval: float = Field(
        10.0, ge=0, description="least seconds between selector snapshots (also >= 50x a snapshot's cost); "
        "a resume replays the steps since the last one"
    )
    store_limits: dict[str, int] = Field(
        default_factory=dict, description="caps on what one child puts in run.db (database/sanitize.py StoreLimits: "
        "response_chars, feedback_chars, error_chars, metrics_bytes, object_bytes); over a cap: cut and marked"
    )

    @model_validator(mode="before")
    @classmethod
    def _executor_mapping(cls, data: Any) -> Any:
        """``executor: {name: ray, address: auto}`` is ``executor: ray`` + ``executor_options``."""
        if isinstance(data, dict) and isinstance(data.get("executor"), dict):
            data = dict(data)
            spec = dict(data["executor"])
            if "name" not in spec:
                raise ValueError("executor: a mapping needs a 'name' (e.g. {name: ray, address: auto})")
            data["executor"] = spec.pop("name")
            data["executor_options"] = {**spec, **dict(data.get("executor_options") or {})}
        return data

    @model_validator(mode="after")
    def _check(self) -> "RunConfig":
        if self.env == "static" and self.selector not in ("map-elites", "best-of-n"):
            raise ValueError("env 'static' always prompts from the initial program; leave selector unset")
        if self.memory.enabled and self.backend.name == "builtin":
            raise ValueError("--memory needs a language model backend (openai, hf, llamacpp, ...): the builtin "
                             "mutation operator has no language to propose or judge ideas with")
        if self.train is not None:  # checked here, before a model is loaded for nothing
            from evoforge.rl import RLError, train_config

            try:
                train_config(self.train)
            except RLError as exc:
                raise ValueError(str(exc)) from None
        return self


PAPER_BATCH = (32, 16)  # ThetaEvolve: B parents x n responses per step


def resolve_batch(cfg: RunConfig, backend_pref: tuple[int, int] | None = None) -> tuple[int, int]:
    """The run's batch shape B x n: the one place it is decided. The config's values; what is
    unset comes from the backend's preference (builtin 8 x 4, hf 2 x 4 on a CPU, else
    ThetaEvolve's 32 x 16) shrunk to fit the budget (selectors/sizing.py: at least ~250 steps,
    issue #13). The last step of a run is clipped to the budget by the loop."""
    from evoforge.selectors.sizing import plan_for_budget

    plan = plan_for_budget(cfg.budget, cfg.selector, {}, backend_pref or PAPER_BATCH, cfg.workers,
                           cfg.batch_size, cfg.n)
    return plan.batch_size, plan.n


def resolve_search(cfg: RunConfig, backend_pref: tuple[int, int] | None = None) -> RunConfig:
    """The config with what the budget decides filled in: B, n and, for map-elites without a
    size, the database's sizes (selectors/sizing.py). The engine stores this one, so a resume
    with a raised budget keeps the run's shape and database."""
    from evoforge.selectors.sizing import selector_options_for_budget

    b, n = resolve_batch(cfg, backend_pref)
    selector = "best-of-n" if cfg.env == "static" else cfg.selector
    options = selector_options_for_budget(selector, cfg.selector_options, cfg.budget)
    return cfg.model_copy(update={"batch_size": b, "n": n, "selector_options": options})


def resolve_pipeline(cfg: RunConfig, backend_name: str) -> str:
    """lockstep | overlap: overlap pays off when generation takes time (a model), not for the
    model-free builtin operator or a scripted replay, which answer in microseconds."""
    if cfg.pipeline is not None:
        return cfg.pipeline
    return "lockstep" if backend_name in ("builtin", "scripted") else "overlap"


def format_validation_error(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "config"
        lines.append(f"{where}: {err['msg']}")
    return "; ".join(lines)


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML, TOML or JSON config file into a dict (clear error on a bad file)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file not found: {p}")
    text = p.read_text()
    try:
        if p.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text) or {}
        elif p.suffix == ".toml":
            try:
                import tomllib
            except ModuleNotFoundError:  # Python 3.10
                import tomli as tomllib
            data = tomllib.loads(text)
        elif p.suffix == ".json":
            data = json.loads(text)
        else:
            raise ConfigError(f"config file must be .yaml, .yml, .toml or .json: {p}")
    except ConfigError:
        raise
    except Exception as exc:  # yaml/toml/json syntax errors
        raise ConfigError(f"cannot parse {p}: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: the top level must be a mapping of config keys")
    return data


def build_config(file_data: dict[str, Any] | None = None, **overrides: Any) -> RunConfig:
    """File values, then command-line overrides (None means 'not given')."""
    data: dict[str, Any] = dict(file_data or {})
    backend = dict(data.get("backend") or {})
    for key in ("base_url", "model"):
        if overrides.get(key) is not None:
            backend[key] = overrides.pop(key)
        overrides.pop(key, None)
    if overrides.get("backend") is not None:
        backend["name"] = overrides.pop("backend")
    overrides.pop("backend", None)
    if backend:
        data["backend"] = backend
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("invalid config: " + format_validation_error(exc)) from None


def dump_defaults() -> str:
    """The documented default config, as YAML with descriptions."""
    import yaml

    lines = ["# evoforge run config (all keys optional; these are the defaults)"]
    for name, field in RunConfig.model_fields.items():
        if field.description:
            lines.append(f"# {name}: {field.description}")
    lines.append(yaml.safe_dump(RunConfig().model_dump(), sort_keys=False))
    return "\n".join(lines)
