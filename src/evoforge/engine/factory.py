"""Config values -> components. The only place that knows which registry serves which key."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from evoforge.database.base import SELECTORS, Selector
from evoforge.engine.config import RunConfig
from evoforge.llm.base import BACKENDS, Backend
from evoforge.sandbox.base import EXECUTORS, Executor
from evoforge.tasks.base import Task


def make_task(name: str, options: dict[str, Any] | None = None) -> Task:
    from evoforge.tasks import get_task

    return get_task(name, options)


def make_backend(cfg: RunConfig, task: Task) -> Backend:
    import evoforge.llm  # noqa: F401  (registers the backends)

    b = cfg.backend
    options: dict[str, Any] = dict(b.options)
    if b.name == "openai":
        if not b.base_url:
            raise ValueError("backend openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        options.update(base_url=b.base_url, model=b.model or "default", api_key_env=b.api_key_env)
    elif b.model is not None:
        options.setdefault("model", b.model)
    if b.name == "builtin":
        options.setdefault("seed", cfg.seed)
    cls = BACKENDS.get(b.name)
    _check_backend_options(b.name, cls, options)
    return cls(**options)


def _check_backend_options(name: str, cls: Any, options: dict[str, Any]) -> None:
    """Options no backend knows (a typo) are one clear error; another backend's option (a config
    written for openai, run with builtin) is dropped with one warning line: never silently ignored."""
    import logging

    from evoforge.llm.base import BackendError

    known = _init_options(cls)
    foreign = set().union(*(_init_options(BACKENDS.get(n)) for n in BACKENDS.names() if n != name))
    unknown = sorted(set(options) - known - foreign)
    if unknown:
        raise BackendError(f"backend {name} has no option {', '.join(unknown)} "
                           f"(its options: {', '.join(sorted(known)) or 'none'})")
    dropped = sorted(set(options) - known)
    if dropped:
        logging.getLogger("evoforge").warning("backend %s does not use option(s) %s (options of another backend): "
                                              "ignored", name, ", ".join(dropped))
        for key in dropped:
            del options[key]


def _init_options(cls: Any) -> set[str]:
    import inspect

    known: set[str] = set()
    for klass in getattr(cls, "__mro__", (cls,)):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        known |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name != "self"}
    return known


def make_selector(cfg: RunConfig, task: Task, rng: np.random.Generator) -> Selector:
    import evoforge.selectors  # noqa: F401  (registers the selectors)

    name = "best-of-n" if cfg.env == "static" else cfg.selector
    target = task.fitness(task.target) if task.target is not None else None
    return SELECTORS.get(name)(rng=rng, target=target, **cfg.selector_options)


def make_executor(cfg: RunConfig) -> Executor:
    import evoforge.cluster  # noqa: F401  (registers ray; Ray itself is imported only when used)
    import evoforge.sandbox  # noqa: F401  (the sandbox package registers more executors)

    if cfg.executor == "ray":  # slots: executor_options.workers (--workers), else every CPU of the cluster
        return EXECUTORS.get("ray")(**cfg.executor_options)
    workers = min(cfg.workers, max(1, os.cpu_count() or 1) * 4) if cfg.executor == "sandbox" else cfg.workers
    return EXECUTORS.get(cfg.executor)(workers=workers, **cfg.executor_options)


def make_learner(cfg: RunConfig, backend: Backend, run_dir: Path) -> Any:
    if cfg.train is None:
        return None
    from evoforge.rl import LEARNERS, learner_name, train_config

    tcfg = train_config(cfg.train)
    return LEARNERS.get(learner_name(tcfg, backend))(tcfg, backend)
