"""The ``evoforge`` command. Each command group lives in its own module and registers here."""
from __future__ import annotations

import typer

app = typer.Typer(
    name="evoforge",
    help="Discovery by program evolution with test-time learning.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register_commands() -> None:
    from evoforge.cli import verify  # noqa: F401  (tasks, verify)

    verify.register(app)
    from evoforge.cli import envs  # envs list / check / synth / show / export

    envs.register(app)
    try:
        from evoforge.cli import run  # run, resume, show
    except ImportError:  # pragma: no cover - during bring-up only
        return
    run.register(app)
    from evoforge.cli import dashboard  # dashboard (its web stack is imported only when it runs)

    dashboard.register(app)


_register_commands()

if __name__ == "__main__":  # pragma: no cover
    app()
