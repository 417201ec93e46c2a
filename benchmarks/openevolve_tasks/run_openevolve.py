"""Run OpenEvolve once on an OpenEvolve-format task and write what it did as JSON.

Runs under OpenEvolve's own interpreter (its venv), started by bench_vs_openevolve.py:

    /work/venvs/openevolve/bin/python run_openevolve.py TASK_DIR --api-base URL \
        --iterations 200 --seed 0 --workers 2 --output OUT --result RESULT.json

Only the Python standard library and openevolve are imported here (not evoforge).
"""
import argparse
import asyncio
import json
import logging
import os
import time


def build_config(args):
    from openevolve.config import Config

    population = max(1000, args.iterations + 10)  # large enough that nothing is evicted
    return Config.from_dict({
        "max_iterations": args.iterations,
        "checkpoint_interval": args.iterations + 1,  # no mid-run checkpoints: they only cost time
        "log_level": "WARNING",
        # No global seed: it would be sent as the `seed` of EVERY request, and a server that
        # honours seeds (the stand-in does) would then answer the same parent identically.
        "random_seed": None,
        "diff_based_evolution": True,
        "llm": {
            "api_base": args.api_base,
            "api_key": "standin",
            "models": [{"name": args.model, "weight": 1.0}],
            "temperature": 1.0,
            "max_tokens": 4096,
            "timeout": 60,
            "retries": 1,
            "retry_delay": 1,
        },
        "prompt": {"system_message": "You improve Python programs. Answer with SEARCH/REPLACE blocks."},
        "database": {
            "population_size": population,
            "archive_size": args.archive_size,  # OpenEvolve's defaults: 100 and 5
            "num_islands": args.num_islands,
            "random_seed": args.seed,
        },
        "evaluator": {
            "timeout": args.eval_timeout,
            "parallel_evaluations": args.workers,
            "cascade_evaluation": False,
            "max_retries": 0,
        },
    })


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task_dir")
    parser.add_argument("--api-base", required=True)
    parser.add_argument("--model", default="standin")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--eval-timeout", type=int, default=60)
    parser.add_argument("--archive-size", type=int, default=100)
    parser.add_argument("--num-islands", type=int, default=5)
    parser.add_argument("--output", required=True)
    parser.add_argument("--result", required=True)
    args = parser.parse_args()

    started = time.perf_counter()
    from openevolve import OpenEvolve
    from openevolve.process_parallel import ProcessParallelController

    # OpenEvolve drops its parallel controller at the end of a run; keep its counters.
    counters = {}
    original_stop = ProcessParallelController.stop

    def stop_and_record(self):
        counters["completed_iterations"] = getattr(self, "completed_iterations", None)
        counters["successful_iterations"] = getattr(self, "successful_iterations", None)
        original_stop(self)

    ProcessParallelController.stop = stop_and_record
    logging.basicConfig(level=logging.WARNING)
    os.makedirs(args.output, exist_ok=True)
    controller = OpenEvolve(
        initial_program_path=os.path.join(args.task_dir, "initial_program.py"),
        evaluation_file=os.path.join(args.task_dir, "evaluator.py"),
        config=build_config(args),
        output_dir=args.output,
    )
    run_started = time.perf_counter()
    best = asyncio.run(controller.run(iterations=args.iterations))
    finished = time.perf_counter()
    scores = [p.metrics.get("combined_score") for p in controller.database.programs.values()]
    valid = [s for s in scores if isinstance(s, (int, float)) and s > 0]
    result = {
        "iterations": args.iterations,
        "evaluated_children": counters.get("successful_iterations"),
        "completed_iterations": counters.get("completed_iterations"),
        "programs_in_database": len(scores),
        "best_score": best.metrics.get("combined_score") if best is not None else None,
        "best_valid_in_database": max(valid) if valid else None,
        "run_s": finished - run_started,
        "inside_wall_s": finished - started,
    }
    with open(args.result, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
