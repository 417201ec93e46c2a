"""Performance kernels: reward = 1 / runtime, on CPU (numpy, or PyTorch if installed).

``trimul-cpu``: AlphaFold's triangle multiplicative update ("outgoing" edges, GPUMode's TriMul):
    x = LayerNorm(x);  left = (x Wl) * mask * sigmoid(x Gl);  right = (x Wr) * mask * sigmoid(x Gr)
    out = einsum('bikh,bjkh->bijh', left, right);  out = LayerNorm_h(out) * sigmoid(x Go);  return out Wo
with x (B, N, N, C), mask (B, N, N), hidden size H. The initial program is the naive reference
(np.einsum without path optimisation).

Verifier contract:
* sandbox child (``evaluate_kernel``): fresh random inputs each evaluation (seed from
  os.urandom), correctness of every shape against a float64 reference bound before the
  program is loaded: |out - ref| <= ATOL + RTOL |ref| elementwise; then per benchmark shape
  2 warm-up calls and 5..25 timed calls (stop once the relative IQR is below 5 % or after
  3 s), the median kept. Interference is measured: a fixed calibration workload is timed
  before and after, and the load average is read; both are reported.
* host (``verify``): re-derives the small check case from the seed, recomputes the reference
  and compares the program's output sent back; score = 1 / geometric mean of the medians (s).
The timing harness runs in the program's own process: a deliberately adversarial program
could tamper with it (the sandbox contains it, it does not make in-process timing honest).
"""
from __future__ import annotations

import base64
import math
import os
import time
from typing import Any

import numpy as np

from evoforge.tasks.base import Direction, Task, Verdict

ATOL = RTOL = 2e-2  # loose enough for reduced precision (fp16/bf16 on a GPU), as TTT-Discover's kernels used
CHECK = (1, 16, 16, 8, 8)  # (B, N, C, H) + ... : small case re-verified in the host
SHAPES = ((1, 64, 64, 64), (1, 96, 32, 32))  # (B, N, C, H) timed
WARMUP, MIN_REPEATS, MAX_REPEATS, TIME_BUDGET_S, IQR_TARGET = 2, 5, 25, 3.0, 0.05
# Measured on the 2-core development machine under load 11-18 (benchmarks/RESULTS.md): one fixed
# program's reward varies with CV 12-19 % over 20 evaluations (max/min 1.6-2.0); the median was the
# steadiest summary (min and calibration-paired ratios varied more), so it is the reward.
NOISE_CV, NOISY_IQR = 0.15, 0.25
# ... and a search keeps the luckiest of those timings: a candidate for a new best is timed this many
# more times beside the initial program and scores the median ratio (engine/stages/remeasure.py)
REMEASURE = 2


def make_inputs(seed: int, B: int, N: int, C: int, H: int) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng([17, seed, N, C])
    x = rng.standard_normal((B, N, N, C)).astype(np.float32)
    mask = (rng.random((B, N, N)) < 0.9).astype(np.float32)
    lin = lambda i, o: (rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32)  # noqa: E731
    w = {"norm_w": (1 + 0.1 * rng.standard_normal(C)).astype(np.float32), "norm_b": (0.1 * rng.standard_normal(C)).astype(np.float32),
         "left_proj": lin(C, H), "right_proj": lin(C, H), "left_gate": lin(C, H), "right_gate": lin(C, H), "out_gate": lin(C, H),
         "out_norm_w": (1 + 0.1 * rng.standard_normal(H)).astype(np.float32), "out_norm_b": (0.1 * rng.standard_normal(H)).astype(np.float32),
         "to_out": lin(H, C)}
    return x, mask, w


def reference(x: np.ndarray, mask: np.ndarray, w: dict[str, np.ndarray]) -> np.ndarray:
    """float64, path-optimised: the ground truth (not the program to beat)."""
    def ln(a, g, b):
        mu = a.mean(-1, keepdims=True)
        return (a - mu) / np.sqrt(a.var(-1, keepdims=True) + 1e-5) * g + b
    sig = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
    x = ln(x.astype(np.float64), w["norm_w"], w["norm_b"])
    m = mask[..., None].astype(np.float64)
    left = (x @ w["left_proj"]) * m * sig(x @ w["left_gate"])
    right = (x @ w["right_proj"]) * m * sig(x @ w["right_gate"])
    out = np.einsum("bikh,bjkh->bijh", left, right, optimize=True)
    out = ln(out, w["out_norm_w"], w["out_norm_b"]) * sig(x @ w["out_gate"])
    return out @ w["to_out"]


def _close(out: Any, ref: np.ndarray) -> tuple[bool, float, str]:
    try:
        out = np.asarray(out.detach().cpu().numpy() if hasattr(out, "detach") else out, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        return False, math.inf, f"output is not an array: {exc}"
    if out.shape != ref.shape:
        return False, math.inf, f"output shape {out.shape}, expected {ref.shape}"
    if not np.all(np.isfinite(out)):
        return False, math.inf, "output has NaN or inf"
    err = np.abs(out - ref)
    ok = bool(np.all(err <= ATOL + RTOL * np.abs(ref)))
    return ok, float(err.max()), "" if ok else f"max |out - ref| = {err.max():.3g} exceeds {ATOL:g} + {RTOL:g} |ref|"


_CAL = np.random.default_rng(0).standard_normal((160, 160))


def _calib_once(clock) -> float:
    t0 = clock()
    for _ in range(8):
        _CAL @ _CAL
    return clock() - t0


def _calibrate(clock) -> float:
    """Median time of a fixed workload: how fast this machine is *right now*."""
    return float(np.median([_calib_once(clock) for _ in range(7)]))


def evaluate_kernel(program_path: str) -> dict[str, Any]:
    """Runs in the sandbox child. The clock and the reference are bound before the program loads."""
    import importlib.util

    clock = time.perf_counter
    seed = int.from_bytes(os.urandom(4), "big")
    calib_before = _calibrate(clock)
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    fn = getattr(mod, "trimul", None)
    if not callable(fn):
        return {"error": "the program defines no function trimul(x, mask, weights)"}
    x, mask, w = make_inputs(seed, *CHECK[:4])
    check_out = np.asarray(fn(x.copy(), mask.copy(), dict(w)), dtype=np.float32)
    medians, mins, paired, spreads, repeats, errs = [], [], [], [], [], []
    for shape in SHAPES:
        x, mask, w = make_inputs(seed, *shape)
        ok, err, why = _close(fn(x.copy(), mask.copy(), dict(w)), reference(x, mask, w))
        if not ok:
            return {"error": f"wrong result on shape (B, N, C, H) = {shape}: {why}"}
        errs.append(err)
        for _ in range(WARMUP):
            fn(x, mask, w)
        ts: list[float] = []
        ratios: list[float] = []  # each call over the calibration workload timed just before it
        start = clock()
        while len(ts) < MAX_REPEATS:
            cal = _calib_once(clock)
            t0 = clock()
            fn(x, mask, w)
            ts.append(clock() - t0)
            ratios.append(ts[-1] / cal)
            if len(ts) >= MIN_REPEATS:
                q1, q3 = np.percentile(ts, [25, 75])
                if (q3 - q1) / np.median(ts) < IQR_TARGET or clock() - start > TIME_BUDGET_S:
                    break
        medians.append(float(np.median(ts)))
        mins.append(float(min(ts)))
        paired.append(float(np.median(ratios)))
        q1, q3 = np.percentile(ts, [25, 75])
        spreads.append(float((q3 - q1) / np.median(ts)))
        repeats.append(len(ts))
    return {"seed": seed, "check": base64.b64encode(check_out.tobytes()).decode(), "medians_s": medians,
            "mins_s": mins, "paired_ratio": paired, "iqr_rel": spreads, "repeats": repeats, "max_err": max(errs), "calib_before_s": calib_before,
            "calib_after_s": _calibrate(clock), "loadavg_1m": os.getloadavg()[0]}


def verify(value: Any) -> Verdict:
    if not isinstance(value, dict):
        return Verdict.reject("evaluator result malformed")
    if value.get("error"):
        return Verdict.reject(str(value["error"])[:500])
    try:
        x, mask, w = make_inputs(int(value["seed"]), *CHECK[:4])
        ref = reference(x, mask, w)
        out = np.frombuffer(base64.b64decode(value["check"]), dtype=np.float32).reshape(ref.shape)
        med = [float(t) for t in value["medians_s"]]
    except (KeyError, TypeError, ValueError) as exc:
        return Verdict.reject(f"evaluator result malformed: {exc}")
    ok, err, why = _close(out, ref)
    if not ok:
        return Verdict.reject(f"wrong result on the host-checked case: {why}")
    if len(med) != len(SHAPES) or not all(t > 0 and math.isfinite(t) for t in med):
        return Verdict.reject("timings malformed")
    geo = _geomean(med)
    cb, ca = float(value.get("calib_before_s", 0)), float(value.get("calib_after_s", 0))
    iqr = max(value.get("iqr_rel", [0]))
    note = ""  # the score stands, but the feedback says when it is not to be trusted much
    if iqr > NOISY_IQR or (cb > 0 and not 0.8 <= ca / cb <= 1.25):
        note = (f"timing was noisy (relative IQR {iqr:.0%}, calibration after/before {ca / cb if cb else 0:.2f}, "
                f"load {float(value.get('loadavg_1m', 0)):.1f}): differences under ~{NOISE_CV:.0%} are not meaningful here")
    verdict = Verdict.accept(1.0 / geo, runtime_ms=geo * 1e3, **{f"median_ms_{i}": t * 1e3 for i, t in enumerate(med)},
                          iqr_rel_max=max(value.get("iqr_rel", [0])), repeats=sum(value.get("repeats", [])),
                          max_err=float(value.get("max_err", err)), interference=ca / cb if cb > 0 else 0.0,
                          calib_ms=cb * 1e3, loadavg_1m=float(value.get("loadavg_1m", 0)),
                          # the same calls summarised otherwise, reported for noise studies (not the reward):
                          reward_min=1.0 / _geomean(value.get("mins_s") or med),
                          reward_paired=1.0 / _geomean(value.get("paired_ratio") or [1.0]))
    return Verdict(True, verdict.score, note, verdict.metrics) if note and verdict.valid else verdict


def _geomean(xs: list[float]) -> float:
    xs = [float(t) for t in xs]
    if not xs or not all(t > 0 and math.isfinite(t) for t in xs):
        return math.inf
    return math.exp(sum(math.log(t) for t in xs) / len(xs))


def description() -> str:
    shapes = ", ".join(f"(B, N, C, H) = {s}" for s in SHAPES)
    return "\n".join([
        "Performance kernel: AlphaFold's triangle multiplicative update (outgoing), TriMul as in the GPUMode competition, on CPU. "
        "Goal: maximise the score. Score = 1 / runtime (seconds, geometric mean over the benchmark shapes).",
        "Your program defines `trimul(x, mask, weights)`: x float32 (B, N, N, C), mask float32 (B, N, N), weights a dict of float32 "
        "arrays norm_w, norm_b (C), left_proj, right_proj, left_gate, right_gate, out_gate (C, H), out_norm_w, out_norm_b (H), "
        "to_out (H, C). It returns (B, N, N, C): LayerNorm over C (eps 1e-5, weight/bias), left = (x@left_proj)*mask*sigmoid(x@left_gate), "
        "right likewise, out = einsum('bikh,bjkh->bijh', left, right), LayerNorm over H, times sigmoid(x@out_gate), @ to_out.",
        f"Correctness: fresh random inputs every evaluation; |out - ref| <= {ATOL:g} + {RTOL:g} |ref| elementwise against a float64 reference. "
        f"Timing: benchmark shapes {shapes}; {WARMUP} warm-up calls, then {MIN_REPEATS}..{MAX_REPEATS} timed calls, median. "
        "numpy is available (PyTorch too where installed; the evaluation is single-threaded). Only code between the EVOLVE-BLOCK markers may change.",
        "Hints: the O(N^3 H) contraction dominates: express it as batched matrix products (per h: L_h @ R_h^T), avoid "
        "repeated passes over memory (fuse the gates), keep float32.",
    ])


def build(name: str) -> Task:
    from pathlib import Path

    from evoforge.tasks.catalog import load_program

    return Task(
        name=name, description=description(), initial_program=load_program("trimul.py"), direction=Direction.MAX,
        verify=verify, object_kind="generic", family="performance-kernels", best_human=None, best_ai=None,
        initial_score=None, time_limit=90.0, memory_mb=4096, evolve_blocks=True, remeasure=REMEASURE,
        evaluator_path=Path(__file__).with_name("evaluators") / "trimul_cpu.py",
        params={"atol": ATOL, "rtol": RTOL, "shapes": [list(s) for s in SHAPES]},
    )
