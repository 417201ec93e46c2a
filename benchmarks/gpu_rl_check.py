"""One short RL run on a GPU with a randomly initialised model of a real architecture (Qwen2
or Llama config, a few hundred million parameters, random weights: nothing is downloaded).
Reports generation tokens/s, learner tokens/s and seconds per RL step (B prompts x n samples
+ one LoRA update), plus peak GPU memory, as JSON on stdout and in --out.

    python3 benchmarks/gpu_rl_check.py                   # on a CUDA machine (bf16)
    python3 benchmarks/gpu_rl_check.py --dry-run         # tiny config on CPU: checks the script works

Import-safe: nothing heavy happens at import time.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

# ~0.36B parameters with vocab 32000 (embeddings tied)
PRESETS = {
    "qwen2-350m": dict(arch="qwen2", hidden=1024, layers=24, heads=16, vocab=32000),
    "llama-350m": dict(arch="llama", hidden=1024, layers=24, heads=16, vocab=32000),
    "tiny": dict(arch="qwen2", hidden=64, layers=2, heads=4, vocab=512),
}


def build(preset: dict, device: str, dtype: str, seed: int):
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    from evoforge.rl.toy import build_tiny_tokenizer

    tok = build_tiny_tokenizer()  # only eos/pad ids are used: prompts are random token ids
    cls = {"qwen2": Qwen2Config, "llama": LlamaConfig}[preset["arch"]]
    cfg = cls(
        vocab_size=preset["vocab"], hidden_size=preset["hidden"], intermediate_size=int(preset["hidden"] * 2.75),
        num_hidden_layers=preset["layers"], num_attention_heads=preset["heads"],
        num_key_value_heads=max(1, preset["heads"] // 4), max_position_embeddings=8192, tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(seed)
    torch_dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}[dtype]
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch_dtype).to(device).eval()
    return model, tok


def run(args: argparse.Namespace) -> dict:
    import numpy as np
    import torch

    from evoforge.llm.hf import HFBackend
    from evoforge.rl import TrainConfig, make_learner
    from evoforge.rl.bench import summarise, time_rl_steps

    if args.dry_run:
        device, dtype, preset_name = "cpu", "float32", "tiny"
        torch.set_num_threads(1)
    else:
        if not torch.cuda.is_available():
            raise SystemExit("gpu_rl_check: no CUDA device visible (use --dry-run to check the script on CPU)")
        device, dtype, preset_name = "cuda", args.dtype, args.preset
    preset = PRESETS[preset_name]
    t0 = time.perf_counter()
    model, tok = build(preset, device, dtype, args.seed)
    build_s = time.perf_counter() - t0
    params = sum(p.numel() for p in model.parameters())
    backend = HFBackend(model, tok, seed=args.seed)
    cfg = TrainConfig(model="unused", device=device, dtype=dtype, lora_rank=args.lora_rank, lr=1e-6,
                      micro_batch_size=args.micro_batch, estimator=args.estimator,
                      gradient_checkpointing=args.gradient_checkpointing)
    learner = make_learner(cfg, backend)
    rng = np.random.default_rng(args.seed)
    # random prompt ids away from the special tokens, so sampling is not cut short by an EOS prompt
    prompts = [rng.integers(4, preset["vocab"], size=args.prompt_len).tolist() for _ in range(args.batch)]
    sync = torch.cuda.synchronize if device == "cuda" else None
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    timings = time_rl_steps(backend, learner, prompts, args.n, args.max_tokens, args.steps, sync=sync)
    extra = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (dry run)",
        "preset": preset_name, "params": params, "dtype": dtype, "B": args.batch, "n": args.n,
        "prompt_len": args.prompt_len, "max_tokens": args.max_tokens, "lora_rank": args.lora_rank,
        "model_build_seconds": build_s, "torch": torch.__version__,
    }
    if device == "cuda":
        extra["peak_gpu_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
    return summarise(f"{preset_name} random init", timings, extra)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="RL step timing on a GPU with a random-weight model")
    ap.add_argument("--dry-run", action="store_true", help="tiny config on CPU, to check the script")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="qwen2-350m")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4, help="B prompts per step")
    ap.add_argument("--n", type=int, default=8, help="samples per prompt")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--lora-rank", type=int, default=32)
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--estimator", default="entropic-adaptive", choices=["grpo", "entropic", "entropic-adaptive"])
    ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args(argv)
    if args.dry_run:  # keep the dry run to seconds
        args.steps, args.batch, args.n = min(args.steps, 2), min(args.batch, 2), min(args.n, 2)
        args.prompt_len, args.max_tokens = min(args.prompt_len, 16), min(args.max_tokens, 8)
    result = run(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(f"# {result['name']}: {result['seconds_per_rl_step']:.2f} s/RL step, "
          f"{result['generation_tokens_per_s']:.0f} gen tok/s, {result['update_tokens_per_s']:.0f} update tok/s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
