"""Does re-measuring a new best keep the search from chasing timing noise? (issue 16)

    python benchmarks/bench_remeasure.py --budget 3000 --retime 20      # ~30 min on 2 cores
    python benchmarks/bench_remeasure.py --budget 200 --retime 5        # a quick look

Runs the model-free operator on a noisy-reward task (default trimul-cpu, reward 1/runtime) once
per ``--remeasure`` setting (default 0 = keep the first measurement, and 2 = the task's
default: median of 3), same seed and budget. Then the seed and every run's best program are
timed again ``--retime`` times each, interleaved round-robin in one sandbox worker (so a drift
of the machine hits all of them alike). Printed per run: the best score the run recorded, the
re-timed median of that program, their ratio (how much the recorded best overstates the
program), and the re-timed speed-up over the seed: the figures that say whether the search
found a faster program or a lucky measurement.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from evoforge.database.store import RunStore
from evoforge.engine import Engine, build_config
from evoforge.sandbox import SandboxPool
from evoforge.tasks import get_task
from evoforge.tasks.evaluate import evaluate_program


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="trimul-cpu")
    ap.add_argument("--budget", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--remeasure", type=int, nargs="+", default=[0, 2])
    ap.add_argument("--retime", type=int, default=20)
    ap.add_argument("--out", default=None, help="keep the run directories here (default: a temp dir)")
    args = ap.parse_args()
    root = Path(args.out or tempfile.mkdtemp(prefix="bench_remeasure_"))
    out: dict = {"task": args.task, "budget": args.budget, "seed": args.seed, "loadavg_start": os.getloadavg(), "runs": {}}
    task = get_task(args.task)  # evaluated plainly below: re-timing is this script's own loop
    programs = {"seed": task.initial_program}
    for r in args.remeasure:
        cfg = build_config(task=args.task, budget=args.budget, seed=args.seed, workers=args.workers,
                           task_options={"remeasure": r})
        t0 = time.perf_counter()
        res = Engine(cfg, root / f"remeasure_{r}").run()
        store = RunStore(root / f"remeasure_{r}" / "run.db", readonly=True)
        best = store.program(res["best_program_id"])
        store.close()
        run = {"wall_s": time.perf_counter() - t0, "recorded_best": res["best_score"], "initial": res["initial_score"],
               "evaluated": res["evaluated"], "remeasured": res.get("remeasured", 0), "best_step": best.step,
               "best_measurements": best.metrics.get("remeasured")}
        programs[f"remeasure_{r}"] = best.code
        out["runs"][f"remeasure_{r}"] = run
        print(f"remeasure {r}: recorded best {run['recorded_best']:.4g} in {run['wall_s']:.0f} s", flush=True)
    timings: dict[str, list[float]] = {k: [] for k in programs}
    with SandboxPool(workers=1) as pool:
        for _ in range(args.retime):
            for label, code in programs.items():
                ev = evaluate_program(task, code, pool)
                timings[label].append(ev.score if ev.valid else float("nan"))
    seed_median = statistics.median(timings["seed"])
    for label, xs in timings.items():
        med = statistics.median(xs)
        row = out["runs"].setdefault(label, {})
        row.update(retimed_median=med, retimed_min=min(xs), retimed_max=max(xs), speedup_over_seed=med / seed_median)
        if "recorded_best" in row:
            row["recorded_over_retimed"] = row["recorded_best"] / med
    out["loadavg_end"] = os.getloadavg()
    out["run_dirs"] = str(root)
    print(json.dumps(out, indent=1))
    print(f"\n| run | recorded best | re-timed median (min-max, {args.retime}x) | recorded / re-timed | re-timed / seed | wall |")
    print("|---|---|---|---|---|---|")
    for label, row in out["runs"].items():
        rec = f"{row['recorded_best']:.4g}" if "recorded_best" in row else "-"
        ratio = f"{row['recorded_over_retimed']:.3f}" if "recorded_over_retimed" in row else "-"
        wall = f"{row['wall_s']:.0f} s" if "wall_s" in row else "-"
        print(f"| {label} | {rec} | {row['retimed_median']:.4g} ({row['retimed_min']:.4g}-{row['retimed_max']:.4g}) "
              f"| {ratio} | {row['speedup_over_seed']:.3f} | {wall} |")


if __name__ == "__main__":
    main()
