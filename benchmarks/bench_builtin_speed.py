"""CPU per response of the builtin (model-free) mutation operator, with and without its parse cache.

    python3 benchmarks/bench_builtin_speed.py [--task circle-packing-26] [--steps 20]

Each step asks for B=8 prompts x n=4 responses of the task's initial program, as the engine's
default builtin batch does; "uncached" re-tokenises the parent for every response (the
operator before the cache). Both produce the same responses (checked).
"""
from __future__ import annotations

import argparse
import hashlib
import time

from evoforge.llm import builtin
from evoforge.llm import mutations as M
from evoforge.llm.base import GenerationConfig, Prompt
from evoforge.tasks import get_task


def per_response(steps: int, prompts: list[Prompt]) -> tuple[float, str]:
    mutator = builtin.BuiltinMutator()
    digest = hashlib.md5()
    t0 = time.process_time()
    for k in range(steps):
        for group in mutator.generate(prompts, GenerationConfig(n=4, seed=k)):
            for r in group:
                digest.update(r.text.encode())
    return (time.process_time() - t0) / (steps * len(prompts) * 4), digest.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="circle-packing-26")
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    prompts = [Prompt(text="", parent_code=get_task(args.task).initial_program)] * 8
    cached_fn = builtin._source
    runs: dict[str, list[float]] = {"uncached": [], "cached": []}
    digests = set()
    for _ in range(3):  # alternate, keep the best of three: the machine may be shared
        builtin._source = M.Source  # the operator before the cache
        t, d = per_response(args.steps, prompts)
        runs["uncached"].append(t)
        digests.add(d)
        builtin._source = cached_fn
        cached_fn.cache_clear()
        t, d = per_response(args.steps, prompts)
        runs["cached"].append(t)
        digests.add(d)
    assert len(digests) == 1, "the cache changed the responses"
    uncached, cached = min(runs["uncached"]), min(runs["cached"])
    print(f"{args.task}: uncached {1000 * uncached:.2f} ms, cached {1000 * cached:.2f} ms per response "
          f"({uncached / cached:.2f}x)")


if __name__ == "__main__":
    main()
