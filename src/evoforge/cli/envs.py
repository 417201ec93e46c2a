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
            raise FileNotFoundError(f"{file}: no such file")
        result = check_file(file, cfg=CheckConfig(timeout=timeout))
    if as_json:
        typer.echo(json.dumps(result.to_json()))
    elif result.passed:
        typer.echo(f"{file}: {result.name}: all five layers pass ({', '.join(LAYERS)})")
    else:
        typer.echo(f"{file}: layer {result.layer} of 5 passed; {result.reason}")
    raise typer.Exit(0 if result.passed else 1)
