"""User mistakes end in one `error: ...` line and exit code 2, never a traceback."""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator

import typer


def _user_error_types() -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = [FileNotFoundError, KeyError, ValueError, PermissionError]
    for mod, name in (("evoforge.engine.loop", "EngineError"), ("evoforge.llm", "BackendError"),
                      ("evoforge.cli.run", "UserError"), ("evoforge.rl", "RLError"),
                      ("evoforge.sandbox", "SandboxError"), ("evoforge.cluster", "RayUnavailable")):
        try:
            module = __import__(mod, fromlist=[name])
            types.append(getattr(module, name))
        except (ImportError, AttributeError):
            pass
    return tuple(types)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    try:
        yield
    except KeyboardInterrupt:
        print("interrupted; continue with `evoforge resume RUN_DIR`", file=sys.stderr)
        raise typer.Exit(130)
    except _user_error_types() as exc:
        if os.environ.get("EVOFORGE_DEBUG"):
            raise
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"error: {msg}", file=sys.stderr)
        raise typer.Exit(2)
