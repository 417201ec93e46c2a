"""``evoforge envs ...``: EvoEnv's environments (list, check) and synthesis runs (synth, show, export)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from evoforge.cli.errors import user_errors

envs_app = typer.Typer(help="Verifiable environments: the seeds, admission checks, synthesis runs (docs/EVOENV.md).",
                       no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


def register(app: typer.Typer) -> None:
    app.add_typer(envs_app, name="envs")


@envs_app.command("list")
def list_command(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """The ten seed environments (few-shot examples of the generator, held-out set of the solver)."""
    from evoforge.envs.seeds import ALGORITHMIC, SEED_NAMES, load_seed, seed_path

    rows = []
    for name in SEED_NAMES:
        env = load_seed(name)
        doc = (seed_path(name).read_text(encoding="utf-8").split('"""')[1:2] or [""])[0].strip()
        rows.append({"name": name, "kind": "algorithmic" if name in ALGORITHMIC else "verification",
                     "difficulties": f"1..{env.max_difficulty}", "file": str(seed_path(name)), "about": doc})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        typer.echo(f"{r['name']:<20} {r['kind']:<13} {r['difficulties']:<6} {r['about']}")


@envs_app.command("check")
def check_command(
    file: Path = typer.Argument(..., help="a Python file defining one VerifiableEnvironment subclass"),
    as_json: bool = typer.Option(False, "--json", help="print {layer, passed, reason, name, stats}"),
    timeout: float = typer.Option(60.0, help="seconds for the whole check in the sandbox"),
) -> None:
    """Run admission layers L1-L5 on FILE in the sandbox. Exit 0 only when all five pass."""
    from evoforge.envs.admission import LAYERS, CheckConfig, check_file

    with user_errors():
        if not file.is_file():
            raise FileNotFoundError(f"{file}: no such file" if not file.exists() else f"{file}: not a file")
        result = check_file(file, cfg=CheckConfig(timeout=timeout))
    if as_json:
        typer.echo(json.dumps(result.to_json()))
    elif result.passed:
        typer.echo(f"{file}: {result.name}: all five layers pass ({', '.join(LAYERS)})")
    else:
        typer.echo(f"{file}: layer {result.layer} of 5 passed; {result.reason}")
    raise typer.Exit(0 if result.passed else 1)


def _backend(name: str, model: Optional[str], base_url: Optional[str], seed: int):
    import evoforge.llm  # noqa: F401  (registers the backends)
    from evoforge.llm.base import BACKENDS

    if name == "demo":
        from evoforge.envs.candidates import DemoPolicy

        return DemoPolicy(seed)
    if name == "hf":
        return BACKENDS.get("hf")(model=model or "smollm2", seed=seed)
    if name == "openai":
        if not base_url:
            raise ValueError("backend openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        return BACKENDS.get("openai")(base_url=base_url, model=model or "default")
    raise ValueError(f"unknown backend {name!r} for envs synth (known: demo, hf, openai)")


@envs_app.command("synth")
def synth_command(
    backend: str = typer.Option("demo", help="demo (model-free stand-in) | hf | openai"),
    model: Optional[str] = typer.Option(None, help="hf: local model dir or 'smollm2'; openai: model name"),
    base_url: Optional[str] = typer.Option(None, help="openai: the server, e.g. http://127.0.0.1:8000/v1"),
    steps: int = typer.Option(10, help="synthesis steps (a run directory that holds fewer goes on to this many)"),
    train: bool = typer.Option(False, "--train", help="role-conditioned GRPO on both roles (hf backend)"),
    lr: float = typer.Option(1e-5, help="learning rate with --train"),
    run_dir: Optional[Path] = typer.Option(None, help="where the run lives [default: runs/envs-TIME]"),
    config_file: Optional[Path] = typer.Option(None, "--config", help="YAML/TOML with SynthConfig keys"),
    seed: int = typer.Option(0, help="random seed"),
    workers: int = typer.Option(2, help="parallel sandbox workers"),
) -> None:
    """Synthesise environments: generate, admit (L1-L5, reviews, pass rate, novelty), train the solver."""
    import logging
    import time

    from evoforge.envs.report import plot_layers
    from evoforge.envs.store import EnvStore
    from evoforge.envs.synth import SynthConfig, SynthContext, run_synthesis

    with user_errors():
        logging.basicConfig(level=logging.INFO, format="%(message)s")
        if backend not in ("demo", "hf", "openai"):
            raise ValueError(f"unknown backend {backend!r} for envs synth (known: demo, hf, openai)")
        directory = run_dir or Path("runs") / f"envs-{time.strftime('%Y%m%d-%H%M%S')}"
        directory.mkdir(parents=True, exist_ok=True)
        store = EnvStore(directory / "run.db")
        stored = store.get_meta("config")
        if stored:  # a resume: the run's own settings, only the number of steps may grow
            cfg = SynthConfig.model_validate(dict(stored, steps=max(steps, stored.get("steps", 0))))
        else:
            from evoforge.engine.config import load_config_file

            data = load_config_file(config_file) if config_file else {}
            cfg = SynthConfig.model_validate(dict(data, steps=steps, seed=seed))
        policy = _backend(backend, model, base_url, cfg.seed)
        learner = None
        if train:
            from evoforge.rl import TrainConfig, make_learner

            learner = make_learner(TrainConfig(estimator="grpo", model=model or "smollm2", lr=lr), policy)
        from evoforge.sandbox import SandboxPool

        with SandboxPool(workers=workers) as pool:
            ctx = SynthContext(cfg, directory, store, policy, pool, learner=learner)
            out = run_synthesis(ctx)
        plot_layers(store, directory / "layers.png")
        typer.echo(f"{directory}: {out['steps']} steps, {out['pool']} environments admitted ({out['active']} active); "
                   f"`evoforge envs show {directory}`")


def _open(run: Path):
    from evoforge.envs.store import EnvStore

    db = run / "run.db"
    if not db.is_file():
        raise FileNotFoundError(f"{run}: no run.db (not a synthesis run directory)")
    return EnvStore(db)


@envs_app.command("show")
def show_command(
    run: Path = typer.Argument(..., help="a synthesis run directory"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """The pool, admissions per layer over steps, the pass-rate histogram, held-out accuracy; writes layers.png."""
    from evoforge.envs.report import plot_layers, render_text, summary

    with user_errors():
        store = _open(run)
        data = summary(store)
        png = plot_layers(store, run / "layers.png")
    if as_json:
        typer.echo(json.dumps(data))
        return
    typer.echo(render_text({**data, "pool": [{k: v for k, v in e.items() if not k.endswith("_vec")} for e in data["pool"]]}))
    if png:
        typer.echo(f"\nlayer pass rates over steps: {png}")


@envs_app.command("export")
def export_command(
    run: Path = typer.Argument(..., help="a synthesis run directory"),
    out: Path = typer.Option(..., "--out", help="folder for envs/*.py and dataset.jsonl"),
    instances: int = typer.Option(20, help="prompt/answer pairs per environment"),
) -> None:
    """Write the pool's environments as files `envs check` accepts, and a JSONL of prompt/answer pairs."""
    from evoforge.envs.report import export
    from evoforge.sandbox import SandboxPool

    with user_errors():
        store = _open(run)
        with SandboxPool(workers=2) as pool:
            done = export(store, out, pool, instances)
    typer.echo(f"{done['files']} environment files in {out / 'envs'}, {done['rows']} rows in {out / 'dataset.jsonl'}")
