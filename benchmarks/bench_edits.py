"""Speed of the per-child work (CPU microseconds per call): canonical_hash, parse_edits +
apply_edits, one builtin mutation.

    python3 benchmarks/bench_edits.py [--repeat 2000]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from evoforge.edits import apply_edits, canonical_hash, parse_edits
from evoforge.llm.builtin import BuiltinMutator

ROOT = Path(__file__).resolve().parents[1]


def per_call_us(fn, repeat: int) -> float:
    # CPU time of this process: the figure holds even when the machine is busy with other work.
    t0 = time.process_time()
    for i in range(repeat):
        fn(i)
    return (time.process_time() - t0) / repeat * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2000)
    args = ap.parse_args()
    programs = {"circle_packing (45 lines)": (ROOT / "src/evoforge/tasks/programs/circle_packing.py").read_text()}
    try:
        from evoforge.tasks import get_task

        programs["ac1 initial (large data literal)"] = get_task("ac1").initial_program
    except Exception:  # noqa: BLE001 - the tasks package may be absent
        pass
    m = BuiltinMutator(seed=0)
    for name, code in programs.items():
        texts = [m.mutate(code, np.random.default_rng(s)).text for s in range(64)]
        variants = [code + f"\nX_{i} = {i}\n" for i in range(64)]  # defeat any caching
        r = args.repeat
        print(f"{name}: {len(code)} chars")
        print(f"  canonical_hash          {per_call_us(lambda i: canonical_hash(variants[i % 64]), r):8.1f} us/call")
        print(f"  canonical_hash broken   {per_call_us(lambda i: canonical_hash(variants[i % 64] + 'def ('), r):8.1f} us/call")
        print(f"  parse+apply (1-4 blocks){per_call_us(lambda i: apply_edits(code, parse_edits(texts[i % 64]) if 'SEARCH' in texts[i % 64] else []), r):8.1f} us/call")
        print(f"  builtin mutate          {per_call_us(lambda i: m.mutate(code, np.random.default_rng(i)), max(1, r // 10)):8.1f} us/call")


if __name__ == "__main__":
    main()
