"""evoforge and OpenEvolve itself on two of OpenEvolve's own examples, unchanged: same budget, same stand-in server.

Reuses bench_vs_openevolve.py's machinery (imported, not copied): one local stand-in
OpenAI-compatible server (evoforge.llm.standin_server) answers both systems; runs alternate
seed by seed; children/s = evaluated children / wall time of the whole command; the ratio is
taken inside this one run. The examples are function_minimization and circle_packing from
OpenEvolve's examples/ (the fetch mirror's commit is printed), copied to a temp folder.

Both systems get the same settings: OpenEvolve through bench_vs_openevolve's driver
(openevolve_tasks/run_openevolve.py: cascade off, 60 s timeout, population >= 1000, archive 100,
5 islands); evoforge through an OpenEvolve-format YAML with those same values, passed with
--config (so this also exercises the YAML mapping).

    python3 benchmarks/openevolve_side_by_side.py                       # ~10 min on 2 busy cores
    python3 benchmarks/openevolve_side_by_side.py --seeds 0 --budget 40
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_vs_openevolve as bench  # noqa: E402  (helper #13's machinery, reused as is)
from openevolve_examples import export_mirror  # noqa: E402

EXAMPLES = ("function_minimization", "circle_packing")


def matched_yaml(path: Path, budget: int) -> Path:
    """The driver's OpenEvolve settings, as an OpenEvolve config evoforge reads with --config."""
    path.write_text(
        "# same values as benchmarks/openevolve_tasks/run_openevolve.py gives OpenEvolve\n"
        "diff_based_evolution: true\n"
        "prompt:\n  system_message: You improve Python programs. Answer with SEARCH/REPLACE blocks.\n"
        f"database:\n  population_size: {max(1000, budget + 10)}\n  archive_size: 100\n  num_islands: 5\n"
        "evaluator:\n  timeout: 60\n  cascade_evaluation: false\n  max_retries: 0\n")
    return path


def _children_from_database(r: bench.RunResult, result_json: Path) -> None:
    """This commit's controller keeps no iteration counters (the driver reads OpenEvolve 0.4's);
    every evaluated child is added to its database (population >= 1000 > budget: none evicted),
    so evaluated children = programs in the database - 1 (the initial program)."""
    if r.ok and r.children is None and result_json.is_file():
        info = json.loads(result_json.read_text())
        if isinstance(info.get("programs_in_database"), int):
            r.children = info["programs_in_database"] - 1
            r.note = "children = programs in OpenEvolve's database - 1"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=int, default=60, help="children per run (both systems)")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--examples", nargs="+", default=list(EXAMPLES))
    p.add_argument("--openevolve-python", default=None)
    p.add_argument("--evoforge-args", default="-B 2 -n 2", help="extra `evoforge run` arguments, quoted")
    p.add_argument("--run-timeout", type=float, default=900.0)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)

    from evoforge.llm.standin_server import StandinServer

    tmp = Path(tempfile.mkdtemp(prefix="oe-side-"))
    os.chmod(tmp, 0o755)
    try:
        root, commit = export_mirror(tmp)
        oe_python, oe_note = bench.find_openevolve(args.openevolve_python)
        print(f"OpenEvolve examples at commit {commit}; OpenEvolve: {oe_note}")
        print(f"budget {args.budget} children, seeds {args.seeds}, workers {args.workers}; "
              f"load average before: {bench._load()}")
        if oe_python is None:
            return 1
        extra = args.evoforge_args.split() + ["--config", str(matched_yaml(tmp / "matched.yaml", args.budget))]
        # bench's evoforge --budget counts the seed too; its report subtracts it again
        tasks = [bench.BenchTask(ex, str(root / ex), root / ex, args.budget) for ex in args.examples]
        work = tmp / "runs"
        work.mkdir()
        results: list[bench.RunResult] = []
        with StandinServer(latency_s=0.0, seed=0) as server:
            for task in tasks:
                for i, seed in enumerate(args.seeds):
                    for system in (("evoforge", "openevolve") if i % 2 == 0 else ("openevolve", "evoforge")):
                        if system == "evoforge":
                            r = bench.run_evoforge(task, seed, server.url, args.workers, work, args.run_timeout, extra)
                        else:
                            r = bench.run_openevolve(oe_python, task, seed, server.url, args.workers, work,
                                                     args.run_timeout)
                            _children_from_database(r, work / f"openevolve-{task.key}-{seed}.json")
                        results.append(r)
                        print(f"  {task.key:22} {system:10} seed {seed}: " + (
                            f"{r.children} children in {r.wall_s:.1f} s = {r.rate:.2f}/s, best {r.best:.6g}"
                            if r.ok and r.rate is not None and r.best is not None else f"FAILED: {r.note}"), flush=True)
        rows = bench.report(tasks, results)
        print(f"load average after: {bench._load()}")
        if args.json:
            args.json.write_text(json.dumps({"commit": commit, "runs": [asdict(r) | {"rate": r.rate} for r in results],
                                             "table": rows}, indent=1))
        return 0 if results and all(r.ok for r in results) else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
