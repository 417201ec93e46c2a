"""``evoforge dashboard [RUN_DIR ...]``: the read-only web dashboard over run stores."""
from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import List, Optional

import typer

from evoforge.cli.errors import user_errors

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def register(app: typer.Typer) -> None:
    app.command("dashboard")(dashboard)


def dashboard(
    run_dirs: Optional[List[Path]] = typer.Argument(None, help="run directories [default: every run under ./runs]"),
    port: int = typer.Option(8765, help="TCP port"),
    host: str = typer.Option("127.0.0.1", help="address to bind; anything but loopback exposes your runs"),
) -> None:
    """Charts, the program tree and every program of one or several runs, live, in a browser."""
    with user_errors():
        try:
            import uvicorn

            from evoforge.dashboard.server import _hosts, create_app
        except ImportError as exc:
            raise ValueError(f"the dashboard needs its extra ({exc.name} is missing): "
                             "pip install 'evoforge[dashboard]'") from None
        dirs = list(run_dirs or sorted(p.parent for p in Path("runs").glob("*/run.db")))
        if not dirs:
            raise ValueError("no run directory given and none under ./runs")
        _check_port(host, port)
        app = create_app(dirs, hosts=_hosts(host))
        if host not in LOOPBACK:
            print(f"warning: listening on {host}: anyone who reaches this address can read these runs "
                  "(there is no login)", file=sys.stderr)
        shown = f"[{host}]" if ":" in host else host
        print(f"evoforge dashboard: {len(dirs)} run(s) at http://{shown}:{port}/ (read-only; Ctrl-C stops it)",
              file=sys.stderr)
        uvicorn.run(app, host=host, port=port, log_level="warning", lifespan="off")


def _check_port(host: str, port: int) -> None:
    """One error line instead of uvicorn's log and exit when the address is taken or invalid."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            raise ValueError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
