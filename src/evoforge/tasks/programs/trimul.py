"""TriMul (AlphaFold triangle multiplicative update, outgoing): the naive numpy reference."""
import numpy as np


# EVOLVE-BLOCK-START
def layer_norm(a, weight, bias, eps=1e-5):
    mu = a.mean(axis=-1, keepdims=True)
    var = ((a - mu) ** 2).mean(axis=-1, keepdims=True)
    return (a - mu) / np.sqrt(var + eps) * weight + bias


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def trimul(x, mask, w):
    x = layer_norm(x, w["norm_w"], w["norm_b"])
    m = mask[..., None]
    left = np.einsum("bijc,ch->bijh", x, w["left_proj"]) * m
    right = np.einsum("bijc,ch->bijh", x, w["right_proj"]) * m
    left = left * sigmoid(np.einsum("bijc,ch->bijh", x, w["left_gate"]))
    right = right * sigmoid(np.einsum("bijc,ch->bijh", x, w["right_gate"]))
    out = np.einsum("bikh,bjkh->bijh", left, right)  # the O(N^3 H) contraction, unoptimised
    out = layer_norm(out, w["out_norm_w"], w["out_norm_b"])
    out = out * sigmoid(np.einsum("bijc,ch->bijh", x, w["out_gate"]))
    return np.einsum("bijh,hc->bijc", out, w["to_out"])
# EVOLVE-BLOCK-END
