# TriMul with the contraction as batched matrix products: a known faster program (2-2.6x the naive
# start here), for the tests and benchmarks/bench_task_families.py; not an initial program.
import numpy as np
def trimul(x, mask, w):
    mu = x.mean(-1, keepdims=True); x = (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w["norm_w"] + w["norm_b"]
    sig = lambda a: 1 / (1 + np.exp(-a))
    m = mask[..., None]
    left = (x @ w["left_proj"]) * m * sig(x @ w["left_gate"])
    right = (x @ w["right_proj"]) * m * sig(x @ w["right_gate"])
    out = np.matmul(left.transpose(0, 3, 1, 2), right.transpose(0, 3, 2, 1)).transpose(0, 2, 3, 1)
    mu = out.mean(-1, keepdims=True); out = (out - mu) / np.sqrt(out.var(-1, keepdims=True) + 1e-5) * w["out_norm_w"] + w["out_norm_b"]
    return (out * sig(x @ w["out_gate"])) @ w["to_out"]
