"""Local sandbox pool vs the Ray executor on this machine, and what bounds one driver.

    python benchmarks/bench_ray.py [--trivial 300] [--cp 40] [--workers 2]

1. Per-evaluation overhead and children/s of the local pool and of Ray (same slot count, one run):
   a trivial program (the fixed cost) and circle packing's initial program (a real evaluation).
2. The driver's own work per child, which no cluster parallelises: a SQLite commit per child
   (RunStore.classify), the selector's sample + add + observe at 10 000 programs (map-elites large),
   and the host-side verification of circle packing / AC1 objects.
3. The arithmetic: children/s one driver can absorb vs children/s one node produces, for
   circle packing and AC1 evaluation times -> how many nodes one driver can feed.
Needs `pip install 'evoforge[ray]'`.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evoforge.sandbox import EvalRequest, SandboxPool  # noqa: E402
from evoforge.tasks import get_task  # noqa: E402
from evoforge.tasks.evaluate import request_for, score_result  # noqa: E402

TRIVIAL = "def solve():\n    return [1.0]\n"


def throughput(executor, requests) -> tuple[float, list]:
    t0 = time.perf_counter()
    results = [r for _, r in executor.run_iter(requests)]
    return time.perf_counter() - t0, results


def bench_executors(args) -> dict:
    from evoforge.cluster import RayExecutor

    cp = get_task("circle-packing-26")
    trivial = [EvalRequest(code=TRIVIAL, timeout=10) for _ in range(args.trivial)]
    cp_reqs = [request_for(cp, cp.initial_program) for _ in range(args.cp)]
    out = {}
    t0 = time.perf_counter()
    local = SandboxPool(workers=args.workers)
    out["local start s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ray_ex = RayExecutor(num_cpus=args.workers, workers=args.workers)
    out["ray start s"] = time.perf_counter() - t0
    try:
        for name, ex in (("local", local), ("ray", ray_ex)):
            throughput(ex, trivial[: 2 * args.workers])  # warm the zygotes
            for label, reqs in (("trivial", trivial), ("cp26", cp_reqs)):
                wall, res = throughput(ex, reqs)
                inside = statistics.mean(r.wall_time for r in res)
                out[f"{name} {label} children/s"] = len(reqs) / wall
                # slot-seconds per evaluation not spent inside the program: the fixed cost
                out[f"{name} {label} overhead ms"] = 1e3 * (wall * args.workers / len(reqs) - inside)
                out[f"{label} eval s"] = inside
    finally:
        local.close()
        ray_ex.close()
    return out


def bench_driver(args) -> dict:
    """Seconds of driver CPU per child for the parts a cluster does not parallelise."""
    import evoforge.selectors  # noqa: F401
    from evoforge.database.base import SELECTORS
    from evoforge.database.simulate import World, run_steps, seed_program
    from evoforge.database.store import RunStore

    out = {}
    with tempfile.TemporaryDirectory() as d:
        store = RunStore(Path(d) / "run.db")
        n = 2000
        ids = store.add_responses(1, [dict(pick=i // 16, resp=i % 16, parent_id=1, response="x" * 400)
                                      for i in range(n)])
        t0 = time.perf_counter()
        for cid in ids:
            store.classify(cid, code="y" * 2000, canon_hash=f"{cid:032x}", child_class="evaluated",
                           status="ok", score=1.0, fitness=1.0, reward=1.0, metrics={"a": 1.0}, wall_time=0.1,
                           feedback="")
        out["store s/child"] = (time.perf_counter() - t0) / n
        store.close()
    sel = SELECTORS.get("map-elites")(rng=np.random.default_rng(0), target=None, size="large",
                                       population_size=10_000)
    sel.add(seed_program())
    world = World(np.random.default_rng(1))
    run_steps(sel, world, steps=10_000 // 64, batch=8, children=8)  # fill to ~10k programs
    world.seconds_in_selector, world.children = 0.0, 0
    run_steps(sel, world, steps=50, batch=8, children=8, clock=time.process_time)
    out["selector s/child"] = world.seconds_in_selector / max(1, world.children)
    from evoforge.engine.checks import early_check
    from evoforge.llm.base import GenerationConfig
    from evoforge.llm.builtin import BuiltinMutator
    from evoforge.prompts import PromptBuilder

    cp = get_task("circle-packing-26")
    prompt = PromptBuilder(cp).build(_pick(cp))
    responses = BuiltinMutator(seed=0).generate([prompt], GenerationConfig(n=200))[0]
    t0 = time.perf_counter()
    for r in responses:  # parse, apply, canonical hash, lazy check: once per child in the driver
        early_check(r.text, "", cp.initial_program, "", set(), mode="diff", evolve_blocks=cp.evolve_blocks)
    out["early check s/child"] = (time.perf_counter() - t0) / len(responses)
    for name in ("circle-packing-26", "ac1"):
        task = get_task(name)
        with SandboxPool(workers=1) as pool:
            res = pool.run_many([request_for(task, task.initial_program)] * 3)
        t0 = time.perf_counter()
        for r in res:
            score_result(task, r)
        out[f"{name} verify s"] = (time.perf_counter() - t0) / len(res)
        out[f"{name} eval s"] = statistics.median(r.wall_time for r in res)
    return out


def _pick(task):
    from evoforge.database.base import Pick
    from evoforge.database.simulate import seed_program

    return Pick(parent=seed_program(code=task.initial_program))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trivial", type=int, default=300)
    ap.add_argument("--cp", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cores-per-node", type=int, default=16)
    ap.add_argument("--eval-times", type=float, nargs="*", default=[0.1, 1.0, 10.0, 60.0])
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    ex = bench_executors(args)
    for k, v in ex.items():
        print(f"  {k:32s} {v:10.3f}")
    for label in ("trivial", "cp26"):
        print(f"  ray/local children/s ({label}): {ex[f'ray {label} children/s'] / ex[f'local {label} children/s']:.2f}")
    dr = bench_driver(args)
    for k, v in dr.items():
        print(f"  {k:32s} {v * 1e3:10.3f} ms")
    c = args.cores_per_node
    for name in ("circle-packing-26", "ac1"):
        per_child = dr["store s/child"] + dr["selector s/child"] + dr["early check s/child"] + dr[f"{name} verify s"]
        driver_rate = 1.0 / per_child
        node_rate = c / max(dr[f"{name} eval s"], 1e-9)
        print(f"  {name}: driver absorbs {driver_rate:,.0f} children/s ({per_child * 1e3:.2f} ms/child: "
              f"store {dr['store s/child'] * 1e3:.2f} + selector {dr['selector s/child'] * 1e3:.2f} + "
              f"early check {dr['early check s/child'] * 1e3:.2f} + "
              f"verify {dr[f'{name} verify s'] * 1e3:.2f}); a {c}-core node evaluates {node_rate:,.0f}/s "
              f"(eval {dr[f'{name} eval s']:.3f} s) -> one driver feeds ~{driver_rate / node_rate:,.1f} nodes")
    per_child = dr["store s/child"] + dr["selector s/child"] + dr["early check s/child"] + dr["ac1 verify s"]
    for t_eval in args.eval_times:  # evolved programs run optimisers: seconds, not milliseconds
        print(f"  eval {t_eval:6.1f} s/program: one driver feeds ~{(1 / per_child) / (c / t_eval):,.0f} {c}-core nodes")


if __name__ == "__main__":
    main()
