"""Issue 16's task families: evaluation time per program, and the timing noise of the kernel task.

    python benchmarks/bench_task_families.py            # both parts, JSON to stdout
    python benchmarks/bench_task_families.py --noise 20 --repeats 3

Part 1: each family task's initial program evaluated `--repeats` times in the sandbox (one
worker): median wall time per evaluation (compile and every test case included).
Part 2: one fixed kernel program (trimul-cpu's naive initial, and a batched-matmul version)
evaluated `--noise` times: the spread of its reward 1/runtime (min, max, CV), of the
calibration-normalised reward (reward x calibration time, which cancels a machine-wide
slowdown), and the interference figures the verifier reports. Machine load is printed beside.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from evoforge.sandbox import SandboxPool
from evoforge.tasks import get_task
from evoforge.tasks.catalog import load_program
from evoforge.tasks.evaluate import evaluate_program
from evoforge.tasks.families import FAMILIES

FAST = load_program("trimul_batched.py")


def spread(xs: list[float]) -> dict[str, float]:
    mean = statistics.fmean(xs)
    return {"n": len(xs), "min": min(xs), "median": statistics.median(xs), "max": max(xs), "mean": mean,
            "cv": statistics.pstdev(xs) / mean if mean else 0.0, "max_over_min": max(xs) / min(xs)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--noise", type=int, default=20)
    ap.add_argument("--only-noise", action="store_true", help="skip part 1")
    args = ap.parse_args()
    out: dict = {"loadavg_start": os.getloadavg(), "eval_time_s": {}, "noise": {}}
    with SandboxPool(workers=1) as pool:
        for names in ([] if args.only_noise else FAMILIES.values()):
            for name in names:
                task = get_task(name)
                walls, score = [], None
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    ev = evaluate_program(task, task.initial_program, pool)
                    walls.append(time.perf_counter() - t0)
                    score = ev.score
                out["eval_time_s"][name] = {"median": statistics.median(walls), "runs": walls, "score": score}
        task = get_task("trimul-cpu")
        for label, code in (("naive", task.initial_program), ("batched_matmul", FAST)):
            rewards, calibrated, interference, iqr, rmin, rpaired = [], [], [], [], [], []
            for _ in range(args.noise):
                ev = evaluate_program(task, code, pool)
                assert ev.valid, ev.reason
                rewards.append(ev.score)
                calibrated.append(ev.score * ev.metrics["calib_ms"] / 1e3)
                interference.append(ev.metrics["interference"])
                iqr.append(ev.metrics["iqr_rel_max"])
                rmin.append(ev.metrics["reward_min"])
                rpaired.append(ev.metrics["reward_paired"])
            out["noise"][label] = {"reward": spread(rewards), "reward_x_calibration": spread(calibrated),
                                   "reward_min": spread(rmin), "reward_paired": spread(rpaired),
                                   "interference": spread(interference), "iqr_rel_max": spread(iqr)}
    out["loadavg_end"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
