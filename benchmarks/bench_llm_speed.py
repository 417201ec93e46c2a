"""Tokens/s of the local model engines on a real prompt: model x engine x threads, prefill and decode.

Engines: ``llamacpp`` (in-process backend), ``server`` (llama-cpp-python's server through the openai
backend), ``hf`` (transformers, the GGUF de-quantised to fp32). The prompt is the real CP-26 diff
prompt (~1.2k tokens); decode is timed at n=1 and n=4 (total tokens/s of the 4 samples).

    nice -n 10 python benchmarks/bench_llm_speed.py --models smollm2 gemma3-270m --threads 1 2 \
        --engines llamacpp server hf --new 64

Prints one markdown row per (model, engine, threads) and the load average at the start and end.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time

from evoforge.llm.base import GenerationConfig


def cp26_prompt():
    from evoforge.database.base import Pick, Program
    from evoforge.prompts import PromptBuilder
    from evoforge.tasks import get_task

    task = get_task("circle-packing-26")
    return PromptBuilder(task, mode="diff").build(Pick(parent=Program(1, task.initial_program, 0.96, 0.96)))


def bench_llamacpp(model: str, threads: int, new: int) -> dict:
    from evoforge.llm.llamacpp import LlamaCppBackend

    t0 = time.perf_counter()
    b = LlamaCppBackend(model=model, threads=threads, n_ctx=4096, seed=0, stop_after_edit=False)
    load = time.perf_counter() - t0
    p = cp26_prompt()
    out = {"load_s": load}
    for n in (1, 4):  # the prompt is cold for n=1 (its prefill is measured), cached for n=4
        b.stats = dict.fromkeys(b.stats, 0)
        b.generate([p], GenerationConfig(n=n, temperature=1.0, max_tokens=new, seed=n))
        s = b.stats
        if n == 1:
            out["prompt_tokens"] = s["prefill_tokens"]
            out["prefill"] = s["prefill_tokens"] / s["prefill_s"]
        out[f"decode_n{n}"] = s["decode_tokens"] / s["decode_s"]
    b.close()
    return out


def bench_hf(model: str, threads: int, new: int) -> dict:
    import torch

    from evoforge.llm.hf import HFBackend
    from evoforge.llm.hf_model import encode_prompt

    t0 = time.perf_counter()
    b = HFBackend(model=model if model != "gemma3-270m" else _gemma_path(), device="cpu", threads=threads, seed=0)
    torch.set_num_threads(threads)
    load = time.perf_counter() - t0
    ids = encode_prompt(b.tokenizer, cp26_prompt())
    out = {"load_s": load, "prompt_tokens": len(ids)}
    with torch.no_grad():
        t0 = time.perf_counter()
        b.model(input_ids=torch.tensor([ids]), use_cache=True)
        pre = time.perf_counter() - t0
    out["prefill"] = len(ids) / pre
    for n in (1, 4):  # decode = a sample of `new` tokens minus one of 1 token (both prefill once)
        t0 = time.perf_counter()
        b.sample(ids, n, 1.0, 1, seed=n)
        one = time.perf_counter() - t0
        t0 = time.perf_counter()
        toks, _ = b.sample(ids, n, 1.0, new, seed=n)
        dec = time.perf_counter() - t0 - one
        out[f"decode_n{n}"] = (sum(len(t) for t in toks) - n) / max(dec, 1e-9)
    return out


def _gemma_path() -> str:
    from evoforge.llm.models import resolve_gguf

    return str(resolve_gguf("gemma3-270m"))


def bench_server(model: str, threads: int, new: int) -> dict:
    from evoforge.llm.models import resolve_gguf
    from evoforge.llm.openai_backend import OpenAIBackend

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(resolve_gguf(model)), "--port", str(port),
           "--n_ctx", "4096", "--n_threads", str(threads), "--n_threads_batch", str(threads)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.perf_counter() - t0 > 300:
                    raise RuntimeError("server did not start")
                time.sleep(0.3)
        load = time.perf_counter() - t0
        b = OpenAIBackend(base_url=f"http://127.0.0.1:{port}/v1", model="default", timeout=900)
        p = cp26_prompt()
        out = {"load_s": load}
        t0 = time.perf_counter()  # max_tokens=1: the prefill (a cold cache)
        r = b.generate([p], GenerationConfig(n=1, temperature=1.0, max_tokens=1, seed=0))[0][0]
        pre = time.perf_counter() - t0
        out["prompt_tokens"], out["prefill"] = r.prompt_tokens, r.prompt_tokens / pre
        t0 = time.perf_counter()  # the same prompt again: the server reuses its cache, so this is decode
        r = b.generate([p], GenerationConfig(n=1, temperature=1.0, max_tokens=new, seed=1))[0][0]
        out["decode_n1"] = r.completion_tokens / (time.perf_counter() - t0)
        out["decode_n4"] = float("nan")  # the server ignores n and answers one request at a time
        b.close()
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=20)


ENGINES = {"llamacpp": bench_llamacpp, "server": bench_server, "hf": bench_hf}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="+", default=["smollm2", "gemma3-270m"])
    ap.add_argument("--engines", nargs="+", default=list(ENGINES), choices=list(ENGINES))
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--cells", nargs="*", help="only these MODEL:ENGINE:THREADS cells, in this order")
    ap.add_argument("--new", type=int, default=64, help="new tokens per sample")
    a = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    print("| model | engine | threads | prompt tok | prefill tok/s | decode tok/s n=1 | decode tok/s n=4 (total) | load s | loadavg |")
    print("|---|---|---|---|---|---|---|---|---|")
    cells = [(m, e, t) for m in a.models for e in a.engines for t in a.threads]
    if a.cells:
        cells = [(c.split(":")[0], c.split(":")[1], int(c.split(":")[2])) for c in a.cells]
    for model, engine, t in cells:
        la = os.getloadavg()[0]
        try:
            r = ENGINES[engine](model, t, a.new)
        except Exception as exc:  # noqa: BLE001 - one failed cell must not lose the table
            print(f"| {model} | {engine} | {t} | failed: {str(exc).splitlines()[0][:80]} |||||", flush=True)
            continue
        print(f"| {model} | {engine} | {t} | {r['prompt_tokens']} | {r['prefill']:.1f} | {r['decode_n1']:.1f} | "
              f"{r['decode_n4']:.1f} | {r['load_s']:.1f} | {la:.1f} |", flush=True)
    print(f"load average at end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
