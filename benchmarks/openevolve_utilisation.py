"""How busy evoforge keeps its sandbox workers on an evaluator-bound OpenEvolve example.

Runs `evoforge run EXAMPLE --backend openai` against the stand-in server for a few batch
shapes and sums run.db's per-child evaluation wall time:

    worker utilisation = sum of evaluation wall times / (workers x wall time of the run)

    python3 benchmarks/openevolve_utilisation.py                      # function_minimization, ~1 min
    python3 benchmarks/openevolve_utilisation.py --example circle_packing --budget 40
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from openevolve_examples import export_mirror  # noqa: E402

MATCHED = ("diff_based_evolution: true\nprompt:\n  system_message: You improve Python programs.\n"
           "database:\n  population_size: 1000\n  archive_size: 100\n  num_islands: 5\n"
           "evaluator:\n  timeout: 60\n  cascade_evaluation: false\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--example", default="function_minimization")
    p.add_argument("--budget", type=int, default=60)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--shapes", nargs="+", default=["2x2", "1x1", "4x2"], help="BxN batch shapes")
    args = p.parse_args(argv)
    from evoforge.llm.standin_server import StandinServer

    tmp = Path(tempfile.mkdtemp(prefix="oe-util-"))
    os.chmod(tmp, 0o755)
    try:
        root, commit = export_mirror(tmp)
        (tmp / "matched.yaml").write_text(MATCHED)
        print(f"OpenEvolve {commit}, example {args.example}, budget {args.budget}, load {os.getloadavg()[0]:.1f}")
        print("| -B x -n | wall s | evaluations | sum of evaluation time s | worker utilisation | mean evaluation |")
        print("|---|---|---|---|---|---|")
        with StandinServer(latency_s=0.0, seed=0) as server:
            for shape in args.shapes:
                b, n = shape.split("x")
                run_dir = tmp / f"run-{shape}"
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "evoforge.cli.main", "run", str(root / args.example), "--backend",
                                "openai", "--base-url", server.url, "--model", "standin", "--budget", str(args.budget),
                                "--workers", str(args.workers), "-q", "--run-dir", str(run_dir), "--config",
                                str(tmp / "matched.yaml"), "-B", b, "-n", n], capture_output=True, check=True, timeout=900)
                wall = time.perf_counter() - started
                db = sqlite3.connect(run_dir / "run.db")
                count, total = db.execute("SELECT COUNT(*), SUM(wall_time) FROM children WHERE wall_time IS NOT NULL").fetchone()
                db.close()
                print(f"| {b} x {n} | {wall:.1f} | {count} | {total:.1f} | {total / (args.workers * wall):.0%} | "
                      f"{total / count * 1000:.0f} ms |", flush=True)
        print(f"load after: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
