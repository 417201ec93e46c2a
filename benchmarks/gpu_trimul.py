"""TriMul on a CUDA GPU: check a candidate kernel against the fp32 reference and time it with CUDA events.

A prepared script for when a GPU is lent (none was in issue 16's session: it has NOT been run).
It is the GPU counterpart of the trimul-cpu task (tasks/families/kernels.py), same formula and
tolerance; it is not wired into `evoforge run` (a GPU executor would be a separate Executor).

    python benchmarks/gpu_trimul.py                       # the built-in fp16-matmul candidate
    python benchmarks/gpu_trimul.py --candidate my_kernel.py   # defines trimul(x, mask, w) on torch tensors

Correctness: fresh random inputs, |out - ref| <= 2e-2 + 2e-2 |ref| (ref in fp32). Timing: 10
warm-up calls, then 50 calls each between two torch.cuda.Event records, median (ms); reward =
1 / geometric mean of the medians. Prints one JSON line.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics

SHAPES = ((2, 256, 128, 128), (1, 512, 128, 128))  # (B, N, C, H): ours, GPUMode-sized
ATOL = RTOL = 2e-2


def reference(x, mask, w):
    import torch.nn.functional as F

    x = F.layer_norm(x, x.shape[-1:], w["norm_w"], w["norm_b"], eps=1e-5)
    m = mask.unsqueeze(-1)
    left = (x @ w["left_proj"]) * m * (x @ w["left_gate"]).sigmoid()
    right = (x @ w["right_proj"]) * m * (x @ w["right_gate"]).sigmoid()
    import torch

    out = torch.einsum("bikh,bjkh->bijh", left, right)
    out = F.layer_norm(out, out.shape[-1:], w["out_norm_w"], w["out_norm_b"], eps=1e-5)
    return (out * (x @ w["out_gate"]).sigmoid()) @ w["to_out"]


def fp16_candidate(x, mask, w):
    """LayerNorm and gates in fp32, the O(N^3 H) contraction as an fp16 batched matmul (tensor cores)."""
    import torch
    import torch.nn.functional as F

    x = F.layer_norm(x, x.shape[-1:], w["norm_w"], w["norm_b"], eps=1e-5)
    m = mask.unsqueeze(-1)
    left = ((x @ w["left_proj"]) * m * (x @ w["left_gate"]).sigmoid()).half()
    right = ((x @ w["right_proj"]) * m * (x @ w["right_gate"]).sigmoid()).half()
    out = torch.matmul(left.permute(0, 3, 1, 2), right.permute(0, 3, 2, 1)).permute(0, 2, 3, 1).float()
    out = F.layer_norm(out, out.shape[-1:], w["out_norm_w"], w["out_norm_b"], eps=1e-5)
    return (out * (x @ w["out_gate"]).sigmoid()) @ w["to_out"]


def inputs(B, N, C, H, seed):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    r = lambda *s: torch.randn(*s, device="cuda", generator=g)  # noqa: E731
    w = {k: r(C, H) / math.sqrt(C) for k in ("left_proj", "right_proj", "left_gate", "right_gate", "out_gate")}
    w.update(norm_w=1 + 0.1 * r(C), norm_b=0.1 * r(C), out_norm_w=1 + 0.1 * r(H), out_norm_b=0.1 * r(H), to_out=r(H, C) / math.sqrt(H))
    return r(B, N, N, C), (torch.rand(B, N, N, device="cuda", generator=g) < 0.9).float(), w


def time_ms(fn, args, warmup=10, repeats=50):
    import torch

    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(*args)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times), (max(times) - min(times)) / statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--candidate", help="a .py file defining trimul(x, mask, w) on CUDA tensors")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("error: no CUDA device (this script is for a lent GPU)")
    fn = fp16_candidate
    if args.candidate:
        spec = importlib.util.spec_from_file_location("candidate", args.candidate)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
        fn = mod.trimul
    rows = []
    with torch.no_grad():
        for shape in SHAPES:
            x, mask, w = inputs(*shape, seed=args.seed)
            ref, out = reference(x, mask, w), fn(x, mask, w)
            err = (out.float() - ref).abs()
            ok = bool((err <= ATOL + RTOL * ref.abs()).all())
            ref_ms, _ = time_ms(reference, (x, mask, w))
            ms, rng = time_ms(fn, (x, mask, w))
            rows.append({"shape": shape, "correct": ok, "max_err": err.max().item(), "median_ms": ms, "range_rel": rng, "reference_ms": ref_ms})
    geo = math.exp(statistics.fmean(math.log(r["median_ms"]) for r in rows))
    print(json.dumps({"device": torch.cuda.get_device_name(), "all_correct": all(r["correct"] for r in rows),
                      "reward_per_ms": 1 / geo, "shapes": rows}))


if __name__ == "__main__":
    main()
