"""The dashboard over HTTP (no browser): figures against the run store, escaping, read-only,
confinement, live refresh, the CLI's error lines, and server-side aggregation on a big store."""
from __future__ import annotations

import importlib.util
import re
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import typer

pytest.importorskip("starlette", reason="the dashboard extra (starlette) is not installed")
pytest.importorskip("uvicorn", reason="the dashboard extra (uvicorn) is not installed")
from starlette.testclient import TestClient  # noqa: E402

from dashboard_fixture import add_step, copy_of_run, free_port  # noqa: E402
from evoforge.dashboard import data as dashboard_data  # noqa: E402
from evoforge.cli import dashboard as dashboard_cli  # noqa: E402
from evoforge.dashboard import islands  # noqa: E402
from evoforge.dashboard.server import create_app  # noqa: E402
from evoforge.database.store import RunStore  # noqa: E402
from evoforge.engine import outputs  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory, pool):
    directory = tmp_path_factory.mktemp("dash") / "cp26"
    info = copy_of_run(directory, pool)
    info["dir"] = directory
    return info


@pytest.fixture(scope="module")
def client(run):
    with TestClient(create_app([run["dir"]]), base_url="http://127.0.0.1") as c:
        yield c


def test_figures_are_the_run_stores(client, run):
    store = RunStore(run["dir"] / "run.db")
    try:
        want = outputs.summary(store)
        improvements = outputs.improvements(store, "max")
        evaluations = store.count_evaluations()
    finally:
        store.close()
    s = client.get("/api/run/0/summary").json()
    for key in ("best_score", "initial_score", "evaluated", "children", "steps"):
        assert s[key] == want[key], key
    assert {k: v for k, v in s["classes"].items() if v} == want["classes"]
    curve = client.get("/api/run/0/curve").json()
    points = list(zip(curve["best"]["x"], curve["best"]["y"]))
    assert points[:-1] == [tuple(p) for p in improvements] or points == [tuple(p) for p in improvements]
    assert curve["best"]["x"][-1] == evaluations == curve["evaluations"]
    assert curve["target"] == pytest.approx(2.6359830849)
    steps = client.get("/api/run/0/steps").json()
    assert sum(sum(v) for v in steps["classes"].values()) == pytest.approx(want["children"])
    assert list(steps["train"])[:4] == ["reward_mean", "kl_ref_per_token", "beta_mean", "loss"]
    assert steps["train"]["loss"]["y"][:2] == [1.0, 0.5]
    times = client.get("/api/run/0/eval_times").json()
    assert times["n"] == evaluations and sum(times["counts"]) == evaluations


def test_pages_render_and_link(client, run):
    home = client.get("/")
    assert home.status_code == 200 and 'href="/run/0"' in home.text and "circle-packing-26" in home.text
    page = client.get("/run/0").text
    for ident in ("best-evals", "best-time", "classes", "rate", "times"):
        assert f'id="{ident}"' in page
    assert f'/run/0/program/{run["best_id"]}' in page and "/run/0/table/memory_ideas" in page
    ideas = client.get("/run/0/ideas").text
    assert "use a hexagonal grid" in ideas and f'href="/run/0/program/{run["best_id"]}"' in ideas
    best = client.get(f"/run/0/program/{run['best_id']}")
    assert best.status_code == 200 and 'class="hl"' in best.text and "Diff from the parent" in best.text
    png = client.get(f"/run/0/program/{run['best_id']}/object.png")
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert client.app.state.pictures.kind(client.app.state.runs[0]) == "circles"  # the task's own drawer
    tree = client.get("/api/run/0/tree").json()
    assert tree["node"] == run["best_id"] and tree["ancestors"][0]["parent"] is None
    assert tree["ancestors"][-1]["id"] == run["best_id"]
    by_score = client.get("/run/0/programs?sort=score").text
    assert by_score.index(f'/run/0/program/{run["best_id"]}"') < by_score.index("/run/0/program/1\"")


def test_islands_from_the_selector_snapshot(client, run):
    assert 'href="/run/0/islands"' in client.get("/run/0").text
    html = client.get("/run/0/islands").text
    assert "map-elites, as of the snapshot after step" in html
    rows = re.findall(r"<tr><td>(\d+)</td><td>(\d+)</td>", html.split('<table class="islands">')[1].split("</table>")[0])
    assert len(rows) >= 2 and all(int(m) >= 1 for _, m in rows)  # (budget-sized), the seed in each at least
    assert html.count('<svg class="grid-map"') == len(rows) and '<a href="/run/0/program/1"><rect' in html
    assert islands.selector_state({"stages": {"select": {"selector": {"selector": "pacevolve", "islands": []}}}}) \
        == {"selector": "pacevolve", "islands": []}


def test_hostile_text_is_escaped_everywhere(client, run):
    for url in (f"/run/0/program/{run['hostile_id']}", "/run/0/table/memory_ideas", "/run/0/table/memory_hypotheses",
                "/run/0/ideas"):
        html = client.get(url).text
        assert "<script>window.__pwned" not in html and "<img src=x" not in html and "<svg onload" not in html
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    # the page's only scripts are the two static files; the program's own text is all there, as text
    html = client.get(f"/run/0/program/{run['hostile_id']}").text
    assert html.count("<script") == 2
    assert html.count("&lt;iframe src=&quot;javascript:window.__pwned=4&quot;&gt;") >= 3  # response, feedback, note


def test_security_headers_read_only_and_confined(client, run):
    r = client.get("/run/0")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert client.get("/api/run/0/live").headers["cache-control"] == "no-store"
    for method in ("post", "put", "delete", "patch"):
        assert getattr(client, method)("/api/run/0/summary").status_code == 405
    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400  # DNS rebinding
    for url in ("/run/1", "/api/run/7/curve", "/static/../data.py", "/static/%2e%2e/server.py",
                "/run/0/table/children", "/run/0/table/sqlite_master",
                '/run/0/table/memory_ideas"; DROP TABLE memory_ideas; --',
                "/run/0/program/99999", "/run/0/program/1/../../../etc/passwd"):
        assert client.get(url).status_code == 404, url
    reader = client.app.state.runs[0]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.db.execute("CREATE TABLE x (a)")


def test_live_refresh_sees_a_new_step(client, run):
    before = client.get("/api/run/0/live").json()
    step = add_step(run["dir"])
    time.sleep(dashboard_data.REFRESH_S + 0.1)
    after = client.get("/api/run/0/live").json()
    assert after["steps"] == step == before["steps"] + 1
    assert after["children"] == before["children"] + 1 and after["version"] > before["version"]


def test_cli_error_lines(tmp_path, run, capsys):
    # once through the installed command line, then in-process (a CLI start costs seconds here)
    cli = [sys.executable, "-m", "evoforge.cli.main", "dashboard"]
    bad = subprocess.run(cli + [str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [f"error: {tmp_path} is not a run directory (no run.db)"]

    def error_line(*args, **kw) -> str:
        with pytest.raises(typer.Exit) as stop:
            dashboard_cli.dashboard(*args, **kw)
        assert stop.value.exit_code == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ")
        return lines[0]

    (tmp_path / "run.db").write_text("not a database, " * 100)
    assert "is not an evoforge run store" in error_line([tmp_path], port=free_port(), host="127.0.0.1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert error_line([run["dir"]], port=port, host="127.0.0.1").startswith(f"error: cannot listen on 127.0.0.1:{port}")


def test_big_store_is_aggregated_on_the_server(tmp_path, monkeypatch):
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_dashboard.py"
    spec = importlib.util.spec_from_file_location("bench_dashboard", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.write_synthetic(tmp_path / "run.db", 3000)
    monkeypatch.setattr(dashboard_data, "MAX_POINTS", 200)
    reader = dashboard_data.RunReader(tmp_path)
    curve = reader.curve()
    assert curve["evaluations"] > 1000 and len(curve["scores"]["x"]) <= 200
    assert max(curve["scores"]["hi"]) == pytest.approx(curve["best"]["y"][-1])
    steps = reader.steps()
    assert len(steps["x"]) <= 200 // 5 and len(steps["train"]["loss"]["x"]) <= 100
    # bucket means keep the totals: children per step times steps per bucket adds up
    total = sum(sum(v) for v in steps["classes"].values()) * steps["width"]
    assert total == pytest.approx(3000, rel=0.05)
    page = reader.programs(10**6)
    assert page["page"] == page["pages"] - 1 and len(page["rows"]) <= dashboard_data.PAGE


def test_refresh_follows_a_resume_that_rewrites_the_unfinished_step(tmp_path, run):
    import shutil

    shutil.copytree(run["dir"], tmp_path / "r")
    reader = dashboard_data.RunReader(tmp_path / "r")
    store = RunStore(tmp_path / "r" / "run.db")
    try:
        last = store.last_step()
        step = last["step"] + 1
        ids = store.add_responses(step, [dict(pick=0, resp=j, parent_id=last["best_id"]) for j in range(3)])
        store.classify(ids[0], child_class="no_diff", reward=-0.4)
        reader.refresh(force=True)
        assert reader.cls[-3:].tolist() == [4, -1, -1]
        store.discard_after(step - 1)  # the killed step's responses are incomplete: a resume redoes them
        again = store.add_responses(step, [dict(pick=0, resp=j, parent_id=last["best_id"]) for j in range(3)])
        assert again == ids  # the same ids, now other children
        for cid in again:
            store.classify(cid, child_class="invalid", reward=-0.1, wall_time=0.5)
        store.finish_step(step, last["rng_state"], best_id=last["best_id"], best_score=last["best_score"],
                          evaluated=last["evaluated"] + 3, children=3, seconds=0.1)
    finally:
        store.close()
    reader.refresh(force=True)
    fresh = dashboard_data.RunReader(tmp_path / "r")
    for name in dashboard_data.RunReader._COLS:  # NaN counts as equal to NaN here
        np.testing.assert_array_equal(getattr(reader, name), getattr(fresh, name), err_msg=name)
    assert reader.cls[-3:].tolist() == [1, 1, 1]
    assert reader.summary()["classes"] == fresh.summary()["classes"]
