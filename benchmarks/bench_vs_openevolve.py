"""evoforge side by side with OpenEvolve: children per second and best score, same machine, same run.

Both systems talk to ONE local OpenAI-compatible stand-in server on 127.0.0.1 (it answers with
the builtin mutator's SEARCH/REPLACE responses for the program in the prompt, zero latency by
default), on the same task, with the same evaluation budget and 2 parallel evaluation workers
each. Runs alternate between the systems, seed by seed. For each run we time the WHOLE command
(interpreter start to exit) and count the children it evaluated:

    children/s = evaluated children / wall time of the whole run

and report the median over seeds, the ratio evoforge / OpenEvolve, and the median best score.

Tasks:
  trivial  benchmarks/openevolve_tasks/trivial, an OpenEvolve-format task that both systems load
           (score 1/(1+|solve()-42|), evaluated in-process in microseconds): framework overhead.
  cp       circle packing n=26 with the 1e-6 tolerance: evoforge's built-in circle-packing-26-t;
           for OpenEvolve benchmarks/openevolve_tasks/circle_packing, an evaluator that, like
           OpenEvolve's example, runs each program in a fresh interpreter, with the same checks.

OpenEvolve is installed in its own venv so it cannot disturb ours:
    python3 -m venv /work/venvs/openevolve && /work/venvs/openevolve/bin/pip install openevolve

Usage (defaults take ~6 minutes on 2 idle cores, more when the machine is busy):
    python3 benchmarks/bench_vs_openevolve.py
    python3 benchmarks/bench_vs_openevolve.py --tasks cp --seeds 0 1 2 3 4 --cp-budget 500
    python3 benchmarks/bench_vs_openevolve.py --latency 0.5     # a slower "model"
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
OE_TASKS = HERE / "openevolve_tasks"
OE_DRIVER = OE_TASKS / "run_openevolve.py"
DEFAULT_OE_PYTHON = Path("/work/venvs/openevolve/bin/python")  # --openevolve-python for another


@dataclass(frozen=True)
class BenchTask:
    key: str
    evoforge_task: str  # built-in name or task directory
    openevolve_dir: Path
    budget: int


@dataclass
class RunResult:
    system: str
    task: str
    seed: int
    ok: bool
    wall_s: float
    children: int | None = None  # evaluated children (the initial program not counted)
    best: float | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def rate(self) -> float | None:
        return self.children / self.wall_s if self.ok and self.children and self.wall_s > 0 else None


def find_openevolve(given: str | None) -> tuple[str | None, str]:
    """(python that can import openevolve, or None; how it was found / why not)."""
    candidates = [given] if given else [str(DEFAULT_OE_PYTHON), sys.executable]
    for python in candidates:
        if not python or not (Path(python).exists() or shutil.which(python)):
            continue
        probe = subprocess.run([python, "-c", "import openevolve, sys; print(openevolve.__version__)"],
                               capture_output=True, text=True)
        if probe.returncode == 0:
            return python, f"openevolve {probe.stdout.strip()} ({python})"
    tried = ", ".join(c for c in candidates if c)
    return None, f"OpenEvolve not found (tried {tried}); install it with " \
                 f"`python3 -m venv /work/venvs/openevolve && /work/venvs/openevolve/bin/pip install openevolve`"


def run_evoforge(task: BenchTask, seed: int, url: str, workers: int, workdir: Path,
                 timeout_s: float, extra_args: list[str]) -> RunResult:
    run_dir = workdir / f"evoforge-{task.key}-{seed}"
    cmd = [sys.executable, "-m", "evoforge.cli.main", "run", task.evoforge_task,
           "--backend", "openai", "--base-url", url, "--model", "standin",
           "--budget", str(task.budget), "--seed", str(seed), "--run-dir", str(run_dir),
           "--workers", str(workers), "--quiet", *extra_args]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=HERE.parent)
    except subprocess.TimeoutExpired:
        return RunResult("evoforge", task.key, seed, False, time.perf_counter() - started,
                         note=f"timed out after {timeout_s:.0f} s")
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        return RunResult("evoforge", task.key, seed, False, wall, note=_last_line(proc.stderr))
    show = subprocess.run([sys.executable, "-m", "evoforge.cli.main", "show", str(run_dir), "--json"],
                          capture_output=True, text=True, cwd=HERE.parent)
    if show.returncode != 0:
        return RunResult("evoforge", task.key, seed, False, wall, note="show: " + _last_line(show.stderr))
    info = json.loads(show.stdout)
    evaluated = int(info["evaluated"]) - (1 if info.get("initial_score") is not None else 0)
    return RunResult("evoforge", task.key, seed, True, wall, evaluated, info.get("best_score"),
                     extra={"children_all": info.get("children"), "classes": info.get("classes")})


def run_openevolve(python: str, task: BenchTask, seed: int, url: str, workers: int, workdir: Path,
                   timeout_s: float, extra_args: list[str] = ()) -> RunResult:
    out = workdir / f"openevolve-{task.key}-{seed}"
    result_path = out.with_suffix(".json")
    cmd = [python, str(OE_DRIVER), str(task.openevolve_dir), "--api-base", url, "--model", "standin",
           "--iterations", str(task.budget), "--seed", str(seed), "--workers", str(workers),
           "--output", str(out), "--result", str(result_path), *extra_args]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=out.parent)
    except subprocess.TimeoutExpired:
        return RunResult("openevolve", task.key, seed, False, time.perf_counter() - started,
                         note=f"timed out after {timeout_s:.0f} s")
    wall = time.perf_counter() - started
    if proc.returncode != 0 or not result_path.is_file():
        return RunResult("openevolve", task.key, seed, False, wall, note=_last_line(proc.stderr))
    info = json.loads(result_path.read_text())
    return RunResult("openevolve", task.key, seed, True, wall, info["evaluated_children"], info["best_score"],
                     extra={k: info[k] for k in ("completed_iterations", "run_s") if k in info})


def sandbox_ceiling(task: BenchTask, workers: int, count: int = 200) -> float:
    """evoforge's sandbox alone on this task's initial program (distinct copies): evaluations/s."""
    from evoforge.sandbox import SandboxPool
    from evoforge.tasks import get_task
    from evoforge.tasks.evaluate import request_for

    spec = get_task(task.evoforge_task)
    with SandboxPool(workers=workers) as pool:
        pool.run_many([request_for(spec, spec.initial_program)])  # warm up
        requests = [request_for(spec, spec.initial_program + f"\n# copy {i}\n") for i in range(count)]
        started = time.perf_counter()
        pool.run_many(requests)
        return count / (time.perf_counter() - started)


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "failed without output"


def _median(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def report(tasks: list[BenchTask], results: list[RunResult]) -> list[dict]:
    rows = []
    header = f"{'task':8} {'system':11} {'runs':>4} {'children':>8} {'wall s':>7} {'children/s':>10} " \
             f"{'best (median)':>14} {'best (min)':>12} {'best (max)':>12}"
    print("\n" + header + "\n" + "-" * len(header))
    for task in tasks:
        medians = {}
        for system in ("evoforge", "openevolve"):
            mine = [r for r in results if r.task == task.key and r.system == system]
            if not mine:
                continue
            ok = [r for r in mine if r.ok]
            rate = _median([r.rate for r in ok])
            best = _median([r.best for r in ok])
            medians[system] = (rate, best)
            row = dict(task=task.key, system=system, runs=f"{len(ok)}/{len(mine)}",
                       children=_median([r.children for r in ok]), wall_s=_median([r.wall_s for r in ok]),
                       children_per_s=rate, best_median=best,
                       best_min=min((r.best for r in ok if r.best is not None), default=None),
                       best_max=max((r.best for r in ok if r.best is not None), default=None))
            rows.append(row)
            print(f"{task.key:8} {system:11} {row['runs']:>4} {_fmt(row['children'], '.0f'):>8} "
                  f"{_fmt(row['wall_s'], '.1f'):>7} {_fmt(rate, '.1f'):>10} {_fmt(best, '.7g'):>14} "
                  f"{_fmt(row['best_min'], '.7g'):>12} {_fmt(row['best_max'], '.7g'):>12}")
            for r in mine:
                if not r.ok:
                    print(f"{'':8} {system:11} seed {r.seed} FAILED: {r.note}")
        if len(medians) == 2 and all(v[0] for v in medians.values()):
            (ef_rate, ef_best), (oe_rate, oe_best) = medians["evoforge"], medians["openevolve"]
            verdict = "n/a" if ef_best is None or oe_best is None else \
                ("equal or better" if ef_best >= oe_best else "worse")
            print(f"{task.key:8} {'ratio':11} children/s evoforge / OpenEvolve = {ef_rate / oe_rate:.1f}x; "
                  f"best score evoforge {verdict} (median {_fmt(ef_best, '.7g')} vs {_fmt(oe_best, '.7g')})")
            rows.append(dict(task=task.key, system="ratio", children_per_s=ef_rate / oe_rate,
                             best_verdict=verdict))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", nargs="+", choices=["trivial", "cp"], default=["trivial", "cp"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--trivial-budget", type=int, default=1000, help="evaluations per trivial run")
    p.add_argument("--cp-budget", type=int, default=300, help="evaluations per circle-packing run")
    p.add_argument("--workers", type=int, default=2, help="parallel evaluations, both systems")
    p.add_argument("--latency", type=float, default=0.0, help="stand-in server seconds per answer")
    p.add_argument("--openevolve-python", default=None, help=f"[default: {DEFAULT_OE_PYTHON}, or this python]")
    p.add_argument("--skip-openevolve", action="store_true")
    p.add_argument("--skip-evoforge", action="store_true")
    p.add_argument("--evoforge-args", default="", help="extra `evoforge run` arguments, quoted")
    p.add_argument("--openevolve-args", default="",
                   help="extra run_openevolve.py arguments, quoted (--archive-size N, --num-islands N)")
    p.add_argument("--run-timeout", type=float, default=900.0, help="seconds before one run is abandoned")
    p.add_argument("--sandbox-ceiling", action="store_true",
                   help="also time evoforge's sandbox alone on each task (the upper bound of its rate)")
    p.add_argument("--keep", type=Path, default=None, help="keep run directories here")
    p.add_argument("--json", type=Path, default=None, help="write every run and the table here")
    args = p.parse_args(argv)

    from evoforge.llm.standin_server import StandinServer

    tasks = [t for t in (
        BenchTask("trivial", str(OE_TASKS / "trivial"), OE_TASKS / "trivial", args.trivial_budget),
        BenchTask("cp", "circle-packing-26-t", OE_TASKS / "circle_packing", args.cp_budget),
    ) if t.key in args.tasks]
    oe_python, oe_note = (None, "skipped (--skip-openevolve)") if args.skip_openevolve \
        else find_openevolve(args.openevolve_python)
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}; workers {args.workers} each; "
          f"stand-in latency {args.latency} s")
    print(f"OpenEvolve: {oe_note}")
    print(f"load average before: {_load()} (other work on the machine skews every figure)")
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-vs-oe-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: list[RunResult] = []
    extra = args.evoforge_args.split()
    try:
        with StandinServer(latency_s=args.latency, seed=0) as server:
            print(f"stand-in server: {server.url}")
            for task in tasks:
                for i, seed in enumerate(args.seeds):
                    order = ["evoforge", "openevolve"] if i % 2 == 0 else ["openevolve", "evoforge"]
                    for system in order:
                        if system == "evoforge" and not args.skip_evoforge:
                            r = run_evoforge(task, seed, server.url, args.workers, workdir, args.run_timeout, extra)
                        elif system == "openevolve" and oe_python is not None:
                            r = run_openevolve(oe_python, task, seed, server.url, args.workers, workdir,
                                               args.run_timeout, args.openevolve_args.split())
                        else:
                            continue
                        results.append(r)
                        print(f"  {task.key:8} {system:11} seed {seed}: "
                              + (f"{r.children} children in {r.wall_s:.1f} s = {r.rate:.1f}/s, best {r.best:.7g}"
                                 if r.ok and r.rate is not None and r.best is not None
                                 else f"FAILED after {r.wall_s:.1f} s: {r.note}"), flush=True)
            requests = server.requests
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    rows = report(tasks, results)
    if args.sandbox_ceiling and not args.skip_evoforge:
        for task in tasks:
            print(f"evoforge sandbox alone on {task.key}: {sandbox_ceiling(task, args.workers):.0f} evaluations/s "
                  f"({args.workers} workers, initial program)")
    for task in tasks:
        inside = [r.children / r.extra["run_s"] for r in results if r.system == "openevolve" and r.task == task.key
                  and r.ok and r.children and r.extra.get("run_s")]
        if inside:
            print(f"OpenEvolve on {task.key}, children/s inside controller.run() only (no interpreter start, "
                  f"imports, pool start): median {statistics.median(inside):.1f}")
    print(f"stand-in server answered {requests} requests; load average after: {_load()}")
    if args.json:
        args.json.write_text(json.dumps({"runs": [asdict(r) | {"rate": r.rate} for r in results],
                                         "table": rows, "openevolve": oe_note}, indent=1))
    return 0 if results and all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
