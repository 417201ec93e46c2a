"""`evoforge run`, `resume`, `show` and `config`: the main job and what a person sees of it."""
from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from evoforge.cli.errors import user_errors

console = Console(stderr=True, soft_wrap=True)  # a log line stays one line, whatever the width
RUN_DB = "run.db"


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("resume")(resume)
    app.command("show")(show)
    app.command("config")(config)


def run(
    task: str = typer.Argument(..., help="built-in task name (see `evoforge tasks`) or a task directory; "
                               "or PROGRAM, with EVALUATOR (OpenEvolve's command line)"),
    evaluator: Optional[str] = typer.Argument(None, help="the evaluator of PROGRAM (evaluate(path) -> dict)"),
    config_file: Optional[Path] = typer.Option(None, "--config", "-c",
                                               help="YAML/TOML config file (evoforge's, or OpenEvolve's config.yaml)"),
    backend: Optional[str] = typer.Option(None, help="builtin (default, model-free mutation operator) | openai | hf | llamacpp"),
    base_url: Optional[list[str]] = typer.Option(
        None, help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1; give it again for more servers"),
    model: Optional[str] = typer.Option(None, help="model name (openai), local path (hf), smollm2 | gemma3-270m | a .gguf (llamacpp)"),
    budget: Optional[int] = typer.Option(None, help="sandbox evaluations [default: 3000]"),
    time_limit: Optional[float] = typer.Option(None, help="stop after this many seconds"),
    seed: Optional[int] = typer.Option(None, help="random seed [default: 0]"),
    run_dir: Optional[Path] = typer.Option(None, help="where the run lives [default: runs/TASK-TIME]"),
    selector: Optional[str] = typer.Option(None, help="map-elites | puct | pacevolve | best-of-n | greedy"),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", "-B", help="parents per step [default: engine/config.py resolve_batch]"),
    n: Optional[int] = typer.Option(None, "-n", help="responses per prompt [default: as -B]"),
    workers: Optional[int] = typer.Option(None, help="parallel sandbox workers [default: 2; ray: every CPU of the cluster]"),
    executor: Optional[str] = typer.Option(None, help="sandbox (default: the local pool) | ray (docs/SCALING.md)"),
    ray_address: Optional[str] = typer.Option(None, help="--executor ray: auto | HOST:PORT [default: a local Ray]"),
    env: Optional[str] = typer.Option(None, help="dynamic (default) | static (always prompt from the initial program)"),
    train: bool = typer.Option(False, "--train", help="test-time RL on the model's own attempts"),
    memory: bool = typer.Option(False, "--memory", help="PACEvolve's idea memory (needs a language model backend)"),
    adapter: Optional[str] = typer.Option(None, help="hf backend: load this trained LoRA adapter"),
    edit_mode: Optional[str] = typer.Option(None, "--edit-mode", help="diff (SEARCH/REPLACE) | block (rewrite the "
                                            "EVOLVE-BLOCK's body) | full [default: diff]"),
    grammar: bool = typer.Option(False, "--grammar", help="constrain decoding to the edit format (llamacpp; openai on "
                                 "llama.cpp, vLLM, SGLang): every response parses"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="new tokens per response [default: 16384]"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no live display"),
    iterations: Optional[int] = typer.Option(None, "--iterations", "-i", help="OpenEvolve's: budget = N + 1"),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenEvolve's: backend openai at this URL"),
    primary_model: Optional[str] = typer.Option(None, "--primary-model", help="OpenEvolve's: backend openai, this model"),
    env_pass: Optional[list[str]] = typer.Option(None, "--env-pass", help="hand this host variable to the evaluator (repeat)"),
    memory_mb: Optional[int] = typer.Option(None, "--memory-mb", help="memory limit of one evaluation, MB"),
    strict_seed: bool = typer.Option(False, "--strict-seed", help="stop if the initial program fails (default: score it 0)"),
) -> None:
    """Evolve programs for TASK (or PROGRAM with EVALUATOR) until the budget is spent; the run directory shows the result."""
    with user_errors():
        from evoforge.engine.config import build_config, load_config_file

        data = load_config_file(config_file) if config_file else {}
        from evoforge.cli.openevolve import prepare

        prep = prepare(data, task, evaluator, iterations=iterations, api_base=api_base, primary_model=primary_model,
                       env_pass=env_pass, memory_mb=memory_mb, strict_seed=strict_seed,
                       config_name=str(config_file or ""), backend_name=backend)
        data, task = prep.data, prep.task
        for line in prep.notes:
            console.print(line, markup=False, highlight=False)
        if train and data.get("train") is None:
            data["train"] = {}
        if edit_mode or grammar:  # the prompt section of the config, over the file's
            data["prompt"] = {**(data.get("prompt") or {}), **({"edit_mode": edit_mode} if edit_mode else {}),
                              **({"grammar": True} if grammar else {})}
        if max_tokens:
            data["max_tokens"] = max_tokens
        if memory:
            data["memory"] = {**(data.get("memory") or {}), "enabled": True}
        if executor is not None:
            data["executor"] = executor
        from evoforge.engine.config import RunConfig

        data = RunConfig._executor_mapping(data)  # executor: {name: ray, ...} from a file
        if ray_address is not None or (workers is not None and data.get("executor") == "ray"):
            if data.get("executor", "sandbox") != "ray":
                raise UserError("--ray-address needs --executor ray")
            options = data.setdefault("executor_options", {})
            if ray_address is not None:
                options["address"] = ray_address
            if workers is not None:
                options["workers"] = workers
                workers = None
        if adapter:
            if (backend or (data.get("backend") or {}).get("name") or "builtin") != "hf":
                raise UserError("--adapter loads a LoRA adapter into the hf backend: add --backend hf")
            data.setdefault("backend", {}).setdefault("options", {})["adapter"] = adapter
        urls = (base_url[0] if len(base_url) == 1 else list(base_url)) if base_url else None
        cfg = build_config(data, task=task, backend=backend, base_url=urls, model=model, budget=budget,
                           time_limit=time_limit, seed=seed, selector=selector, batch_size=batch_size, n=n,
                           workers=workers, env=env)
        directory = run_dir or Path("runs") / f"{prep.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
        if _holds_a_run(directory):
            raise UserError(f"{directory} already holds a run; continue it with `evoforge resume {directory}`")
        _execute(cfg, directory, quiet)


def resume(
    run_dir: Path = typer.Argument(..., help="the run directory to continue"),
    budget: Optional[int] = typer.Option(None, help="raise the evaluation budget"),
    time_limit: Optional[float] = typer.Option(None, help="stop after this many seconds"),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Continue a run (after a crash or kill) with its own config; nothing evaluated is redone."""
    with user_errors():
        from evoforge.engine.config import build_config

        store = _open_store(run_dir)
        saved = store.get_meta("config")
        store.close()
        if saved is None:  # `run` accepts such a directory (see _holds_a_run): the advice does not loop
            raise UserError(f"{run_dir} holds no started run (it stopped before its first evaluation); start it "
                            f"with `evoforge run TASK --run-dir {run_dir}`")
        if not os.access(run_dir, os.W_OK):
            raise UserError(f"{run_dir} is read-only: `evoforge show` reads it; copy it elsewhere to resume it")
        saved["time_limit"] = None  # a limit counts from each start
        cfg = build_config(saved, budget=budget, time_limit=time_limit)
        _execute(cfg, run_dir, quiet)


def show(
    run_dir: Path = typer.Argument(..., help="a run directory"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object"),
) -> None:
    """Best score, best program, counts per class and the score over evaluations."""
    with user_errors():
        from evoforge.engine.outputs import BEST_PROGRAM, improvements, summary

        store = _open_store(run_dir)
        try:
            info = summary(store)
            info["run_dir"] = str(run_dir)
            info["score_over_evaluations"] = improvements(store, info.get("direction") or "max")
            best_row = store.child_detail(info["best_program_id"]) if info.get("best_program_id") is not None else None
            metrics = dict(best_row["metrics"]) if best_row else {}
            info["best_artifacts"] = metrics.pop("artifacts", None) or {}  # OpenEvolve's EvaluationResult.artifacts
            info["best_metrics"] = metrics
            from evoforge.memory.view import read_memory

            memory = read_memory(store.db)
            if memory is not None:
                info["memory"] = memory
        finally:
            store.close()
        if as_json:
            print(json.dumps(info))
            return
        from rich.markup import escape

        from evoforge.cli.textsafe import terminal_safe  # programs and models wrote these texts

        out = Console()
        table = Table(show_header=False, box=None)
        for key in ("task", "best_score", "initial_score", "evaluated", "children", "steps", "batch"):
            table.add_row(key, terminal_safe(info.get(key)))
        if info.get("remeasured"):
            table.add_row("remeasured", f"{info['remeasured']} of the evaluations timed candidates for a new best again, "
                          "beside the initial program (noisy reward)")
        table.add_row("classes", ", ".join(f"{k} {v}" for k, v in sorted(info["classes"].items())))
        numbers = {k: v for k, v in info["best_metrics"].items() if isinstance(v, (int, float))}
        if numbers:
            table.add_row("best metrics", terminal_safe("  ".join(f"{k}={v:.6g}" for k, v in numbers.items())))
        out.print(table)
        for key, text in info["best_artifacts"].items():
            out.rule(escape(terminal_safe(f"artifact {key} (best program)")))
            out.print(terminal_safe(str(text)[-2000:]), markup=False, highlight=False)
        if "memory" in info:
            from evoforge.memory.view import format_tree

            for line in format_tree(info["memory"]):
                out.print(terminal_safe(line), markup=False, highlight=False)
        curve = info["score_over_evaluations"]
        if curve:
            out.print("best score over evaluations: " + "  ".join(f"{e}:{s:.6g}" for e, s in curve[-8:]))
        best = Path(run_dir) / BEST_PROGRAM
        if best.is_file():
            out.rule(f"best program ({best})")
            out.print(terminal_safe(best.read_text(errors="replace")), markup=False, highlight=False)


def config() -> None:
    """Print every config key with its default (a starting point for --config)."""
    from evoforge.engine.config import dump_defaults

    print(dump_defaults())


class UserError(Exception):
    pass


def _open_store(run_dir: Path) -> Any:
    """Read-only: `show` reads an archived (read-only) run; nothing here writes."""
    from evoforge.database.store import RunStore

    if not (Path(run_dir) / RUN_DB).is_file():
        raise UserError(f"{run_dir} is not a run directory (no {RUN_DB})")
    return RunStore(Path(run_dir) / RUN_DB, readonly=True)


def _holds_a_run(directory: Path) -> bool:
    """A run.db with a started run (its config stored); an empty one from a failed start is removed."""
    db = Path(directory) / RUN_DB
    if not db.is_file():
        return False
    store = _open_store(directory)
    try:
        if store.get_meta("config") is not None:
            return True
    finally:
        store.close()
    from evoforge.database.runlock import RunLock, RunLocked

    try:
        with RunLock(directory):  # not while another process is starting this very run
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
    except RunLocked as exc:
        raise UserError(str(exc)) from None
    return False


def _execute(cfg: Any, run_dir: Path, quiet: bool) -> None:
    import errno
    import shutil
    import signal
    import sqlite3

    from evoforge.database.runlock import RunLock, RunLocked
    from evoforge.engine import Engine

    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[_log_handler()])
    display = _Display(cfg.budget, quiet)
    created = not Path(run_dir).exists()
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops a run as cleanly as Ctrl-C
    try:
        with RunLock(run_dir):  # a second run/resume of this directory gets one line naming the holder
            try:
                engine = Engine(cfg, run_dir, on_step=display.update)
            except BaseException:
                if created:  # a failed start (bad task, backend, options) leaves no run directory behind
                    shutil.rmtree(run_dir, ignore_errors=True)
                raise
            console.print(f"evoforge: task [bold]{engine.task.name}[/] ({engine.task.direction.value}), backend "
                          f"{engine.backend.name}, selector {engine.selector.name}, B={engine.batch_size} x n={engine.n} "
                          f"({engine.pipeline_mode}), "
                          f"budget {cfg.budget} evaluations, run dir {run_dir}")
            with display:
                result = engine.run()
    except RunLocked as exc:
        raise UserError(str(exc)) from None
    except (sqlite3.OperationalError, OSError) as exc:
        text = str(exc).lower()
        if isinstance(exc, OSError) and exc.errno == errno.EROFS or "readonly" in text:
            raise UserError(f"{run_dir} is read-only ({exc}): `evoforge show` reads it; copy it elsewhere to "
                            "resume it") from None
        if (isinstance(exc, OSError) and exc.errno not in (errno.ENOSPC, errno.EDQUOT)) or (
                isinstance(exc, sqlite3.OperationalError) and "full" not in text and "disk" not in text):
            raise
        raise UserError(f"the run directory could not be written ({exc}); what is stored is intact: free some "
                        f"disk space, then `evoforge resume {run_dir}`") from None
    finally:
        signal.signal(signal.SIGTERM, previous)  # in-process callers (tests) get their handler back
    console.print(f"done: best {result['best_score']} (initial {result['initial_score']}) after "
                  f"{result['evaluated']} evaluations; see " + _outputs_line(run_dir))


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt  # user_errors prints the resume line, the engine's cleanup runs as for Ctrl-C


def _outputs_line(run_dir: Path) -> str:
    """Only the files this run wrote (a folder task has no picture of its object)."""
    names = [n for n in ("best_program.py", "best.png", "history.png") if (Path(run_dir) / n).is_file()]
    return f"{run_dir}/" + ", ".join(names) if names else str(run_dir)


class _Display:
    """A live panel on a terminal; one line per step otherwise (logs, CI)."""

    def __init__(self, budget: int, quiet: bool):
        self.budget = budget
        self.quiet = quiet
        self.live_mode = console.is_terminal and not quiet
        self.live: Live | None = None
        self.last_line = 0.0

    def __enter__(self) -> "_Display":
        if self.live_mode:
            self.live = Live(Table(), console=console, refresh_per_second=4)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def update(self, s: Any) -> None:
        hist = "  ".join(f"{k}:{v}" for k, v in sorted(s.totals.items()))
        if self.live is not None:
            t = Table(title="evoforge", show_header=False)
            t.add_row("step", str(s.step))
            t.add_row("evaluations", f"{s.evaluated} / {self.budget}")
            t.add_row("children/s", f"{s.children_per_second:.1f}")
            t.add_row("best score", f"{s.best_score}")
            t.add_row("classes", hist)
            if s.train_metrics:
                t.add_row("train", "  ".join(f"{k}={v:.4g}" for k, v in s.train_metrics.items()))
            self.live.update(t)
        elif not self.quiet and (time.monotonic() - self.last_line > 2.0 or s.improved):
            self.last_line = time.monotonic()
            console.print(f"step {s.step}  evals {s.evaluated}/{self.budget}  {s.children_per_second:.1f} "
                          f"children/s  best {s.best_score}  [{hist}]", highlight=False, markup=False)


def _log_handler() -> logging.Handler:
    from rich.logging import RichHandler

    return RichHandler(console=console, show_time=False, show_path=False)
