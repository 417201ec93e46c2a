"""Tune / measure the model-free builtin mutation operator without the engine.

A small evolution loop: tournament selection over a population, B parents x n responses per
step, every child goes through the real pipeline (PromptBuilder -> BuiltinMutator ->
parse_edits -> apply_edits -> canonical_hash dedup) and is run in a worker process with a
timeout, then verified strictly in this process. Prints the curve evals -> best per seed.

    python3 benchmarks/tune_builtin_mutator.py --evals 300 --seeds 0 1 2
    python3 benchmarks/tune_builtin_mutator.py --evals 3000 --seeds 0 --task heilbronn-triangle-11
    python3 benchmarks/tune_builtin_mutator.py --engine --evals 300 --seeds 0 1 2 3 4 5 6 7 8 9
"""
from __future__ import annotations

import argparse
import json
import resource
import signal
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from evoforge.database.base import Pick, Program
from evoforge.edits import NoEditFound, apply_edits, canonical_hash, parse_edits
from evoforge.llm.base import GenerationConfig
from evoforge.llm.builtin import BuiltinMutator
from evoforge.prompts import PromptBuilder
from evoforge.tasks.base import Direction, Task, Verdict

ROOT = Path(__file__).resolve().parents[1]
CP_PROGRAM = ROOT / "src/evoforge/tasks/programs/circle_packing.py"


def verify_circles(obj: Any, n: int = 26, tol: float = 1e-6) -> Verdict:
    """Circle packing in the unit square, every inequality relaxed by ``tol`` (1e-6: the "-T"
    variant of OpenEvolve/ThetaEvolve, under which the naive seed scores 0.9598; 0: strict,
    under which the seed itself overlaps by 3e-17). Score = sum of radii."""
    a = np.asarray(obj, dtype=float)
    if a.shape != (n, 3):
        return Verdict.reject(f"expected {n} rows [x, y, r], got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        return Verdict.reject("non-finite value")
    x, y, r = a.T
    if np.any(r < -tol):
        return Verdict.reject("negative radius")
    if np.any(x - r < -tol) or np.any(x + r > 1 + tol) or np.any(y - r < -tol) or np.any(y + r > 1 + tol):
        return Verdict.reject("circle outside the unit square")
    d = np.sqrt((x[:, None] - x[None, :]) ** 2 + (y[:, None] - y[None, :]) ** 2)
    iu = np.triu_indices(n, 1)
    if np.any(d[iu] < (r[:, None] + r[None, :])[iu] - tol):
        return Verdict.reject("circles overlap")
    return Verdict.accept(float(r.sum()))


def _worker_init(memory_mb: int) -> None:
    warnings.simplefilter("ignore")  # children divide by zero often; the verdict says enough
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))


def _plain(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (set, frozenset, tuple)):
        return list(x)
    raise TypeError(f"{type(x).__name__} is not JSON-able")


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError("time limit")


def run_program(code: str, entry: str, timeout: float) -> tuple[bool, Any]:
    """Exec the program in this worker with an alarm guard; (ok, object or error text)."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        env: dict[str, Any] = {"__name__": "evolved"}
        exec(compile(code, "<child>", "exec"), env)
        value = env[entry]()
        return True, json.loads(json.dumps(value, default=_plain))
    except BaseException as exc:  # noqa: BLE001 - any failure of a child is a no-solution
        return False, f"{type(exc).__name__}: {exc}"[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


@dataclass
class Stats:
    evals: int = 0
    no_diff: int = 0
    unchanged: int = 0
    no_solution: int = 0
    invalid: int = 0
    valid: int = 0


def evolve(task: Task, verify: Callable[[Any], Verdict], seed: int, evals: int, batch: int, n: int,
           pool: ProcessPoolExecutor, report: list[int], p_partner: float = 0.2,
           pop_size: int = 40, mutator: dict[str, Any] | None = None) -> tuple[list[tuple[int, float]], Stats, Program]:
    rng = np.random.default_rng(seed)
    backend = BuiltinMutator(seed=seed, **(mutator or {}))
    builder = PromptBuilder(task)
    ok, obj = pool.submit(run_program, task.initial_program, task.entry, task.time_limit).result()
    v = verify(obj) if ok else Verdict.reject(str(obj))
    assert v.valid, f"initial program invalid: {v.reason}"
    seed_prog = Program(0, task.initial_program, v.score, task.fitness(v.score), canon_hash=canonical_hash(task.initial_program))
    pop = [seed_prog]
    seen = {seed_prog.canon_hash}
    best = seed_prog
    curve: list[tuple[int, float]] = []
    stats = Stats()
    next_id, step = 1, 0
    marks = sorted(report)

    def tournament() -> Program:
        k = min(3, len(pop))
        idx = rng.choice(len(pop), size=k, replace=False)
        return max((pop[i] for i in idx), key=lambda p: p.fitness)

    while stats.evals < evals:
        picks = []
        for _ in range(batch):
            parent = tournament()
            partner = tournament() if len(pop) > 1 and rng.random() < p_partner else None
            picks.append(Pick(parent, partner=partner if partner is not parent else None))
        prompts = [builder.build(p) for p in picks]
        responses = backend.generate(prompts, GenerationConfig(n=n, seed=seed * 100003 + step))
        jobs = []
        for pick, row in zip(picks, responses):
            for r in row:
                try:
                    res = apply_edits(pick.parent.code, parse_edits(r.text), evolve_blocks=task.evolve_blocks)
                except NoEditFound:
                    stats.no_diff += 1
                    continue
                if res.applied == 0:
                    stats.no_diff += 1
                    continue
                h = canonical_hash(res.code)
                if h in seen:
                    stats.unchanged += 1
                    continue
                seen.add(h)
                jobs.append((pick, res.code, h, pool.submit(run_program, res.code, task.entry, task.time_limit)))
        for pick, code, h, fut in jobs:
            stats.evals += 1
            ok, obj = fut.result()
            if not ok:
                stats.no_solution += 1
                continue
            v = verify(obj)
            if not v.valid:
                stats.invalid += 1
                continue
            stats.valid += 1
            prog = Program(next_id, code, v.score, task.fitness(v.score), pick.parent.id, step, canon_hash=h)
            next_id += 1
            pop.append(prog)
            if prog.fitness > best.fitness:
                best = prog
            while marks and stats.evals >= marks[0]:
                curve.append((marks.pop(0), best.score))
        pop.sort(key=lambda p: -p.fitness)
        del pop[pop_size:]
        step += 1
    while marks and stats.evals >= marks[0]:
        curve.append((marks.pop(0), best.score))
    return curve, stats, best


def cp_task(n: int = 26, tol: float = 1e-6) -> tuple[Task, Callable[[Any], Verdict]]:
    code = CP_PROGRAM.read_text()
    task = Task(name=f"circle-packing-{n}", description=f"Pack {n} disjoint circles in the unit square; maximise the sum of radii.",
                initial_program=code, direction=Direction.MAX, time_limit=5.0, evolve_blocks=True)
    return task, lambda obj: verify_circles(obj, n, tol)


def registry_task(name: str) -> tuple[Task, Callable[[Any], Verdict]]:
    """A task from evoforge's task registry (when the tasks package provides one)."""
    from evoforge import tasks as T

    getter = getattr(T, "get_task", None) or getattr(T, "load_task", None)
    if getter is None:
        raise SystemExit("evoforge.tasks has no get_task(); only --task cp26-local works here")
    task = getter(name)
    task.time_limit = min(task.time_limit, 10.0)  # tuning runs: keep slow children short
    if task.verify is None:
        raise SystemExit(f"task {name} has no in-host verifier")
    return task, task.verify


def run_engine(task: str, evals: int, seeds: list[int], workers: int) -> int:
    """The acceptance measurement: ``evoforge run TASK --budget EVALS`` with the default config."""
    import logging
    import tempfile

    from evoforge.engine import Engine, build_config
    from evoforge.sandbox import SandboxPool

    logging.disable(logging.WARNING)
    print(f"engine: task={task} budget={evals} default config")
    print("seed  best        classes   time")
    with SandboxPool(workers=workers) as pool:
        for seed in seeds:
            t0 = time.time()
            with tempfile.TemporaryDirectory() as d:
                cfg = build_config(task=task, budget=evals, seed=seed, picture_interval=1e9)
                s = Engine(cfg, d, executor=pool).run()
            print(f"{seed:4d}  {s['best_score']:.6g}  {s['classes']}  {time.time() - t0:.1f}s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="cp26-local",
                    help="cp26-local (this file's own CP-26 verifier) or a name for evoforge.tasks.get_task")
    ap.add_argument("--evals", type=int, default=300)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tol", type=float, default=1e-6, help="circle packing tolerance (0 = strict)")
    ap.add_argument("--weight", action="append", default=[], metavar="OP=W", help="operator weight override")
    # Mutator options: unset ones keep BuiltinMutator's defaults.
    ap.add_argument("--p-careless", type=float)
    ap.add_argument("--max-blocks", type=int)
    ap.add_argument("--p-large", type=float)
    ap.add_argument("--p-coupled", type=float)
    ap.add_argument("--show-best", action="store_true")
    ap.add_argument("--engine", action="store_true",
                    help="run the real Engine with the default config (selector, batch) on a registry task "
                         "instead of this file's loop; mutator options do not apply")
    args = ap.parse_args(argv)
    if args.engine:
        return run_engine(args.task if args.task != "cp26-local" else "circle-packing-26", args.evals, args.seeds, args.workers)
    task, verify = cp_task(tol=args.tol) if args.task == "cp26-local" else registry_task(args.task)
    marks = sorted({m for m in (50, 100, 200, 300, 500, 1000, 2000, 3000, 5000, 10000) if m <= args.evals} | {args.evals})
    print(f"task={task.name} tol={args.tol:g} evals={args.evals} B={args.batch} n={args.n} workers={args.workers}")
    print(f"initial score {task.initial_score if task.initial_score is not None else 'see below'}")
    print("seed  " + "  ".join(f"{m:>9d}" for m in marks) + "   valid/no_sol/invalid/unchanged/no_diff   time")
    with ProcessPoolExecutor(args.workers, initializer=_worker_init, initargs=(2048,)) as pool:
        for seed in args.seeds:
            t0 = time.time()
            opts = {k: v for k, v in (("p_careless", args.p_careless), ("max_blocks", args.max_blocks),
                                      ("p_large", args.p_large), ("p_coupled", args.p_coupled)) if v is not None}
            opts["weights"] = {k: float(v) for k, v in (w.split("=", 1) for w in args.weight)}
            curve, st, best = evolve(task, verify, seed, args.evals, args.batch, args.n, pool, marks, mutator=opts)
            vals = "  ".join(f"{v:9.6g}" for _, v in curve)
            print(f"{seed:4d}  {vals}   {st.valid}/{st.no_solution}/{st.invalid}/{st.unchanged}/{st.no_diff}"
                  f"   {time.time() - t0:.1f}s", flush=True)
            if args.show_best:
                print(best.code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
