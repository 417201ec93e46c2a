"""Lockstep vs overlap (issue #8): children/s and best score at an equal evaluation budget,
with the stand-in OpenAI-compatible server answering after a fixed latency per request.

In lockstep a step waits for its generation, then for its evaluation. In overlap, step t+1's
prompts are generating (from the database as it stood) while step t's children evaluate, so
a step costs max(generation, evaluation) instead of their sum: close to 2x when the two take
as long. So that they do, n grows with the latency (n = 4 x latency in seconds; B = 8 children
of circle packing take ~1 s on 2 workers), and the budget is --steps steps of B x n. The server
runs in its own process, as a model server would. Both modes run in this one script, so the
ratio is valid on a loaded machine.

    python benchmarks/bench_pipeline.py                 # latencies 1 s and 3 s, 2 workers
    python benchmarks/bench_pipeline.py --latency 1 --steps 6 -B 8
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_run(url: str, mode: str, args: argparse.Namespace, latency: float, run_dir: Path) -> dict:
    from evoforge.engine import Engine, build_config

    n = args.n or max(1, round(4 * latency))
    cfg = build_config(task=args.task, backend="openai", base_url=url, model="standin", budget=args.steps * args.B * n,
                       batch_size=args.B, n=n, seed=args.seed, pipeline=mode, workers=args.workers,
                       picture_interval=1e9, selector=args.selector)
    t0 = time.perf_counter()
    summary = Engine(cfg, run_dir).run()
    wall = time.perf_counter() - t0
    # steady state: from the end of step 1 to the end of the last step (no pool start, no seed)
    import sqlite3

    db = sqlite3.connect(run_dir / "run.db")
    rows = db.execute("SELECT step, children, finished_at FROM steps WHERE step >= 1 ORDER BY step").fetchall()
    db.close()
    steady = sum(c for _, c, _ in rows[1:]) / max(rows[-1][2] - rows[0][2], 1e-9) if len(rows) > 1 else 0.0
    return {"latency_s": latency, "pipeline": mode, "shape": f"{args.B}x{n}", "children": summary["children"],
            "evaluated": summary["evaluated"], "seconds": round(wall, 2),
            "children_per_s": round(summary["children"] / wall, 2), "steady_children_per_s": round(steady, 2),
            "best_score": summary["best_score"]}


@contextlib.contextmanager
def standin_process(latency: float, seed: int):
    """The stand-in server in its own process (it would compete for this one's GIL otherwise)."""
    import socket

    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "evoforge.llm.standin_server", "--port", str(port),
                             "--latency", str(latency), "--seed", str(seed)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, action="append", help="seconds per request (repeatable) [1, 3]")
    ap.add_argument("--task", default="circle-packing-26")
    ap.add_argument("--steps", type=int, default=8, help="budget = steps x B x n evaluations")
    ap.add_argument("-B", type=int, default=8)
    ap.add_argument("-n", type=int, default=None, help="responses per prompt [4 x latency]")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--selector", default="greedy")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for latency in args.latency or [1.0, 3.0]:
            with standin_process(latency, args.seed) as url:
                for mode in ("lockstep", "overlap"):
                    rows.append(one_run(url, mode, args, latency, Path(tmp) / f"{mode}-{latency}"))
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"rows": rows, "load1": load}))
        return
    print(f"task {args.task}, {args.steps} steps of B x n, {args.workers} workers, load average {load:.1f}")
    print(f"{'latency':>8} {'B x n':>6} {'pipeline':>9} {'children':>8} {'seconds':>8} {'children/s':>10} "
          f"{'steady':>8} {'best':>10}")
    for r in rows:
        print(f"{r['latency_s']:>7.1f}s {r['shape']:>6} {r['pipeline']:>9} {r['children']:>8} {r['seconds']:>8.1f} "
              f"{r['children_per_s']:>10.2f} {r['steady_children_per_s']:>8.2f} {r['best_score']:>10.4f}")
    for latency in sorted({r["latency_s"] for r in rows}):
        lock, over = (next(r for r in rows if r["latency_s"] == latency and r["pipeline"] == m)
                      for m in ("lockstep", "overlap"))
        print(f"latency {latency:.1f} s: overlap / lockstep children/s = "
              f"{over['children_per_s'] / lock['children_per_s']:.2f}x (steady state, after step 1: "
              f"{over['steady_children_per_s'] / max(lock['steady_children_per_s'], 1e-9):.2f}x)")


if __name__ == "__main__":
    main()
