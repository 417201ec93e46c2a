"""The dashboard on a big run: a synthetic 100 000-child run.db, then the time to open its pages.

    python3 benchmarks/bench_dashboard.py                       # 100 000 children in /tmp/evoforge-dash-100k
    python3 benchmarks/bench_dashboard.py --children 20000 --dir /tmp/d20k
    python3 benchmarks/bench_dashboard.py --browser              # and in headless Chromium, chart drawn

The run store is written with the real schema through ``RunStore`` (the engine's own calls:
add_responses, classify_many, finish_step, put_object), B=8 x n=4 = 32 children per step, with
circle-packing-sized programs (~1.5 kB of code, ~0.6 kB of response) and the class mix of a
builtin run. It is reused when it already exists. Then a real dashboard server (uvicorn, in a
thread) is started on it and every page and JSON endpoint a browser fetches is timed over HTTP:
"open" is the wall time from starting the server (which reads the store) to the last byte of
the run page's chart data: the overview, then the run page and its three JSON requests;
"open_cpu_s" is the CPU time this process spent meanwhile (server and client), which is what
the wall time comes to on an idle core when the machine is shared.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evoforge.database.base import SELECTORS, Program  # noqa: E402
from evoforge.database.store import RunStore  # noqa: E402

CLASSES = ["evaluated", "invalid", "no_solution", "no_diff", "unchanged"]
MIX = [0.6, 0.1, 0.05, 0.1, 0.15]


def _code(rng: np.random.Generator, k: int) -> str:
    body = "\n".join(f"    x{j} = {rng.random():.12f} * (i + {j})  # step {k}" for j in range(30))
    return f"import numpy as np\n\ndef solve():\n    i = 1\n{body}\n    return [x0, x1]\n"


def write_synthetic(path: Path, children: int, seed: int = 0, per_step: int = 32) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    store.set_meta("task", "circle-packing-26")
    store.set_meta("direction", "max")
    store.set_meta("target", 2.6359830849)
    store.set_meta("config", {"task": "circle-packing-26", "selector": "map-elites", "budget": children})
    [seed_id] = store.add_responses(0, [dict(pick=0, resp=0)])
    store.classify(seed_id, code=_code(rng, 0), child_class="evaluated", status="ok", score=0.96, fitness=0.96,
                   reward=0.96, metrics={"n": 26}, wall_time=0.02)
    store.set_meta("seed_id", seed_id)
    store.put_object(seed_id, {"circles": [[0.1 + 0.03 * i, 0.5, 0.02] for i in range(26)]})
    store.finish_step(0, {"s": 0}, {"programs": []}, best_id=seed_id, best_score=0.96, evaluated=1, children=0)
    valid_ids, valid_scores = [seed_id], [0.96]
    best_id, best, evaluated, step, made = seed_id, 0.96, 1, 0, 0
    t0 = time.time() - children * 0.013  # as if the run had gone at ~80 children/s
    while made < children:
        step += 1
        count = min(per_step, children - made)
        parents = rng.integers(0, len(valid_ids), size=count)
        rows = [dict(pick=j // 4, resp=j % 4, parent_id=valid_ids[p], response="<<<<<<< SEARCH\n" +
                     "    x1 = 0.5\n=======\n    x1 = 0.6\n>>>>>>> REPLACE\n" * 8) for j, p in enumerate(parents)]
        ids = store.add_responses(step, rows)
        updates = []
        for cid, p in zip(ids, parents):
            cls = CLASSES[int(rng.choice(5, p=MIX))]
            fields: dict = {"child_class": cls, "code": _code(rng, step), "canon_hash": f"{cid:016x}"}
            if cls in ("evaluated", "invalid", "no_solution"):
                evaluated += 1
                fields.update(status="ok" if cls == "evaluated" else cls, wall_time=float(rng.gamma(2.0, 0.01)))
            if cls == "evaluated":
                score = float(max(0.0, valid_scores[p] + rng.normal(0, 0.02)))
                fields.update(score=score, fitness=score, reward=score, metrics={"n": 26, "min_pair_slack": 0.0})
                valid_ids.append(cid)
                valid_scores.append(score)
                if score > best:
                    best, best_id = score, cid
                    store.put_object(cid, {"circles": [[0.1 + 0.03 * i, 0.5, 0.02] for i in range(26)]})
            else:
                fields.update(reward=-0.1, feedback="circle 3 sticks out of the unit square")
            updates.append((cid, fields))
        store.classify_many(updates)
        made += count
        store.finish_step(step, {"s": step}, best_id=best_id, best_score=best, evaluated=evaluated, children=count,
                          seconds=0.4, train_metrics={"reward_mean": float(rng.normal(0.5, 0.1)),
                                                      "loss": float(rng.normal(0.1, 0.02))})
    # the selector's snapshot, in the engine's layout (store schema 2), with every valid program fed to
    # a map-elites database of the "large" shape: the islands page reads it
    importlib.import_module("evoforge.selectors")  # registers the selectors
    selector = SELECTORS.get("map-elites")(rng=np.random.default_rng(seed), target=None, size="large",
                                           population_size=min(10_000, children))
    for row in store.db.execute("SELECT id, code, score, parent_id, step FROM children WHERE child_class = 'evaluated'"):
        selector.add(Program(row[0], row[1], row[2], row[2], row[3], row[4], {"n": 26}, f"{row[0]:016x}"))
    store.save_snapshot(step, {"select": {"selector": selector.state_dict()}})  # stored as {"stages": ...}
    # the engine's clock, not the generator's: spread the steps over a plausible run time
    store.db.execute("UPDATE steps SET finished_at = ? + step * 0.4", (t0,))
    store.db.execute("UPDATE children SET created_at = ? + step * 0.4", (t0,))
    store.close()


def _get(client, label: str, url: str) -> tuple[str, float, int]:
    t = time.perf_counter()
    r = client.get(url)
    r.raise_for_status()
    return label, time.perf_counter() - t, len(r.content)


def _browser_timings(base: str, program: int) -> list[tuple[str, float, int]]:
    """Headless Chromium: from navigation to every chart drawn (the page's data-ready flag)."""
    import tempfile

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000",
                 f"--user-data-dir={tempfile.mkdtemp(prefix='evoforge-bench-')}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=opts)
    out = []
    try:
        for label, path in [("browser: runs", "/"), ("browser: run page", "/run/0"), ("browser: tree", "/run/0/tree"),
                            ("browser: program", f"/run/0/program/{program}")]:
            t = time.perf_counter()
            driver.get(base + path)
            WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
            out.append((label, time.perf_counter() - t, 0))
    finally:
        driver.quit()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--children", type=int, default=100_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/evoforge-dash-100k"))
    ap.add_argument("--port", type=int, default=8799)
    ap.add_argument("--browser", action="store_true", help="also time the pages in headless Chromium (selenium)")
    args = ap.parse_args()
    db = args.dir / "run.db"
    if not db.exists():
        t = time.perf_counter()
        write_synthetic(db, args.children)
        print(f"wrote {db} ({os.path.getsize(db) / 1e6:.0f} MB) in {time.perf_counter() - t:.1f} s")
    import httpx

    from evoforge.dashboard.server import serve_in_thread

    t0, c0 = time.perf_counter(), time.process_time()
    server = serve_in_thread([args.dir], host="127.0.0.1", port=args.port)
    started = time.perf_counter() - t0
    base = server.url
    run = "0"
    timings = []
    with httpx.Client(base_url=base, timeout=60) as client:
        # what a browser fetches to show the overview, then the run's page with its charts
        for label, url in [("overview page", "/"), ("runs (poll)", "/api/runs"),
                           ("best curve", f"/api/run/{run}/curve"),
                           ("run page", f"/run/{run}"), ("steps", f"/api/run/{run}/steps"),
                           ("eval times", f"/api/run/{run}/eval_times")]:
            timings.append(_get(client, label, url))
        opened, opened_cpu = time.perf_counter() - t0, time.process_time() - c0
        for label, url in [("programs page 1", f"/run/{run}/programs"),
                           ("programs p.500 by score", f"/run/{run}/programs?page=500&sort=score"),
                           ("lineage of the best", f"/run/{run}/tree"), ("lineage (json)", f"/api/run/{run}/tree"),
                           ("program tree (json)", f"/api/run/{run}/forest"),
                           ("islands page", f"/run/{run}/islands"),
                           ("program page", f"/run/{run}/program/{args.children // 2}"),
                           ("live poll", f"/api/run/{run}/live"), ("curve again", f"/api/run/{run}/curve")]:
            timings.append(_get(client, label, url))
    if args.browser:
        timings += _browser_timings(base, args.children // 2)
    server.stop()
    print(f"load {os.getloadavg()[0]:.2f}; {args.children} children")
    for label, s, size in timings:
        print(f"  {label:<24} {s * 1000:8.1f} ms" + (f"  {size / 1024:8.1f} KiB" if size else ""))
    # CPU seconds of this process (server and client) while opening: what the wall time is on an idle core
    print(json.dumps({"server_start_s": round(started, 3), "open_s": round(opened, 3),
                      "open_cpu_s": round(opened_cpu, 3)}))


if __name__ == "__main__":
    main()
