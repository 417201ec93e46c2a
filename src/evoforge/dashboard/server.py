"""The Starlette app: GET routes only, security headers on every response, a run addressed by
its position in the list given on the command line (no path from a request ever reaches the
file system)."""
from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from evoforge.dashboard import islands, pages
from evoforge.dashboard.data import CLASSES, DashboardError, RunReader

STATIC = Path(__file__).parent / "static"
ISLAND_SELECTORS = ("map-elites", "pacevolve")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
           "Referrer-Policy": "no-referrer", "Cross-Origin-Opener-Policy": "same-origin",
           "Cross-Origin-Resource-Policy": "same-origin"}


class SecurityHeaders:
    """Pure ASGI middleware (works for static files and streaming alike)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):  # read-only: nothing else exists
            await Response("read-only dashboard", 405, headers={"Allow": "GET, HEAD", **HEADERS})(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                raw += [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
                if scope["path"].startswith("/api/"):
                    raw.append((b"cache-control", b"no-store"))
                message = {**message, "headers": raw}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_app(run_dirs: Sequence[Path], hosts: Sequence[str] = ("127.0.0.1", "localhost")) -> Starlette:
    """``hosts``: the Host headers answered (a DNS-rebinding page cannot read a local dashboard)."""
    if not run_dirs:
        raise DashboardError("give at least one run directory")
    runs = [RunReader(Path(d)) for d in run_dirs]
    pictures = Pictures()
    island_cache: dict[int, Any] = {}

    def page(render: Callable[[Request, RunReader, int], str | None], what: str = "no such run or program") -> Any:
        """An HTML route of one run: ``render`` returns the page, or None for a 404."""
        def endpoint(request: Request) -> Response:
            k = request.path_params["run"]
            html = render(request, runs[k], k) if 0 <= k < len(runs) else None
            return HTMLResponse(html) if html is not None else HTMLResponse(pages.not_found(what), 404)
        return endpoint

    def run_page(q: Request, r: RunReader, k: int) -> str:
        s = r.summary()
        return pages.run_page(k, s, r.extra_tables(), s["selector"] in ISLAND_SELECTORS)

    def programs(q: Request, r: RunReader, k: int) -> str:
        sort = "score" if q.query_params.get("sort") == "score" else "id"
        cls = q.query_params.get("cls") if q.query_params.get("cls") in CLASSES else None
        return pages.programs_page(k, r.dir.name, r.programs(_int(q.query_params.get("page")), sort, cls), sort, cls)

    def tree(q: Request, r: RunReader, k: int) -> str | None:
        t = r.tree(_node(q))
        return pages.tree_page(k, r.dir.name, t) if t else None

    def program(q: Request, r: RunReader, k: int) -> str | None:
        p = r.program(q.path_params["id"])
        return pages.program_page(k, r.dir.name, p) if p else None

    def stage_table(q: Request, r: RunReader, k: int) -> str | None:
        t = r.table(q.path_params["name"], _int(q.query_params.get("page")))
        return pages.stage_table_page(k, r.dir.name, t) if t else None

    def ideas(q: Request, r: RunReader, k: int) -> str | None:
        found = r.ideas()
        return pages.ideas_page(k, r.dir.name, found) if found is not None else None

    def islands_page(q: Request, r: RunReader, k: int) -> str | None:
        found = islands.islands(r, island_cache)
        return pages.islands_page(k, r.dir.name, found, r.direction) if found else None

    def object_png(request: Request) -> Response:
        k = request.path_params["run"]
        png = pictures.get(runs[k], request.path_params["id"]) if 0 <= k < len(runs) else None
        if png is None:
            return HTMLResponse(pages.not_found("no such run, or no object stored for this program"), 404)
        return Response(png, media_type="image/png")

    def api(method: str) -> Any:
        def endpoint(request: Request) -> Response:
            k = request.path_params["run"]
            if not 0 <= k < len(runs):
                return JSONResponse({"error": "no such run"}, 404)
            r = runs[k]
            return JSONResponse(r.tree(_node(request)) if method == "tree" else getattr(r, method)())
        return endpoint

    def overview(request: Request) -> Response:
        return HTMLResponse(pages.overview([r.summary() for r in runs]))

    def api_runs(request: Request) -> Response:
        return JSONResponse([r.live() | {"name": r.dir.name, "target": r.meta.get("target")} for r in runs])

    def pygments_css(request: Request) -> Response:
        return Response(pages.PYGMENTS_CSS, media_type="text/css")

    routes = [
        Route("/", overview), Route("/run/{run:int}", page(run_page, "no such run")),
        Route("/run/{run:int}/programs", page(programs, "no such run")),
        Route("/run/{run:int}/tree", page(tree)), Route("/run/{run:int}/program/{id:int}", page(program)),
        Route("/run/{run:int}/program/{id:int}/object.png", object_png),
        Route("/run/{run:int}/table/{name:str}", page(stage_table, "no such run or table")),
        Route("/run/{run:int}/ideas", page(ideas, "no such run, or it has no idea memory")),
        Route("/run/{run:int}/islands", page(islands_page, "no such run, or no snapshot of a selector with islands")),
        Route("/api/runs", api_runs),
        *[Route(f"/api/run/{{run:int}}/{m}", api(m))
          for m in ("summary", "live", "curve", "steps", "eval_times", "tree", "forest")],
        Route("/static/pygments.css", pygments_css), Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders),
                                               Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))])
    app.state.runs = runs
    app.state.pictures = pictures
    return app


def _node(request: Request) -> int | None:
    node = request.query_params.get("node")
    return _int(node) if node is not None else None


def _int(text: str | None) -> int:
    try:
        return max(0, int(text or 0))
    except ValueError:
        return 0


class Pictures:
    """PNGs of stored objects, drawn once each (the objects table is append-only)."""

    def __init__(self, limit: int = 256):
        self.cache: dict[tuple[int, int], bytes] = {}
        self.kinds: dict[int, str] = {}
        self.limit = limit
        self.lock = threading.Lock()

    def get(self, r: RunReader, child_id: int) -> bytes | None:
        key = (id(r), child_id)
        with self.lock:
            if key in self.cache:
                return self.cache[key]
        obj = r.object(child_id)
        if obj is None:
            return None
        from evoforge.viz import draw_object

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "object.png"
            draw_object(self.kind(r), obj, path, title=f"#{child_id}")
            png = path.read_bytes()
        with self.lock:
            if len(self.cache) >= self.limit:
                self.cache.pop(next(iter(self.cache)))
            self.cache[key] = png
        return png

    def kind(self, r: RunReader) -> str:
        """The task's object kind (how its object is drawn): a built-in task's own; generic for a task
        directory, which is not loaded (its files are outside the run directories given)."""
        if id(r) not in self.kinds:
            kind = "generic"
            try:
                from evoforge.tasks import builtin_names, get_task

                name = r.meta.get("task")
                if name in builtin_names():
                    kind = get_task(name).object_kind
            except Exception:  # noqa: BLE001 - a picture of some kind is better than none
                pass
            self.kinds[id(r)] = kind
        return self.kinds[id(r)]


class ServerThread:
    """uvicorn in a background thread (tests, benchmarks)."""

    def __init__(self, app: Starlette, host: str, port: int):
        import uvicorn

        self.url = f"http://{host}:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise DashboardError(f"the dashboard could not listen on {host}:{port}")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve_in_thread(run_dirs: Sequence[Path], host: str = "127.0.0.1", port: int = 8765) -> ServerThread:
    return ServerThread(create_app(run_dirs, hosts=_hosts(host)), host, port)


def _hosts(host: str) -> list[str]:
    return sorted({"127.0.0.1", "localhost", "[::1]", host})

