"""Drawers for 1-D and 2-D arrays: step functions, ±1 matrices, integer sets, anything else."""
from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from evoforge.viz.geometry import as_float_array

MAX_DRAWN_POINTS = 1000  # longer series are drawn as a min/max envelope of this many bins (~pixels)
MAX_INDICATOR_CELLS = 4000  # integer sets spanning more than this are drawn as a density


def convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.convolve(a, b)`` by real FFT (O(n log n): fine for 50 000 steps)."""
    size = len(a) + len(b) - 1
    nfft = 1 << (size - 1).bit_length()
    return np.fft.irfft(np.fft.rfft(a, nfft) * np.fft.rfft(b, nfft), nfft)[:size]


def autoconvolution(a: np.ndarray) -> np.ndarray:
    return convolve(a, a)


def envelope(values: np.ndarray, bins: int = MAX_DRAWN_POINTS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin index edges, per-bin min, per-bin max): keeps spikes that plain decimation drops."""
    n = len(values)
    if n <= bins:
        return np.arange(n + 1), values, values
    per = -(-n // bins)
    padded = np.concatenate([values, np.full(per * bins - n, values[-1])]).reshape(bins, per)
    edges = np.minimum(np.arange(bins + 1) * per, n)
    used = edges[1:] > edges[:-1]
    return np.concatenate([edges[:1], edges[1:][used]]), padded.min(axis=1)[used], padded.max(axis=1)[used]


def _stairs(ax: Any, values: np.ndarray, x0: float, x1: float, **style: Any) -> None:
    if len(values) <= MAX_DRAWN_POINTS:
        ax.stairs(values, np.linspace(x0, x1, len(values) + 1), **style)
        return
    idx, lo, hi = envelope(values)
    _fill_envelope(ax, x0 + (x1 - x0) * idx / len(values), lo, hi, **style)


def _fill_envelope(ax: Any, edges: np.ndarray, lo: np.ndarray, hi: np.ndarray, **style: Any) -> None:
    """Shade between per-bin min and max; one polygon, so no seams between bins."""
    xs = np.repeat(edges, 2)[1:-1]
    # the edge line keeps bins where min == max (zero-height fill) visible
    ax.fill_between(xs, np.repeat(lo, 2), np.repeat(hi, 2), lw=0.8, **style)


def _heights(obj: Any) -> np.ndarray:
    if isinstance(obj, dict):
        for key in ("heights", "values", "h", "data"):
            if key in obj:
                obj = obj[key]
                break
    a = as_float_array(obj, "heights")
    if a.ndim != 1:
        raise ValueError(f"expected a flat list of heights, got shape {a.shape}")
    return a


def draw_step_function(fig: Figure, obj: Any) -> None:
    a = _heights(obj)
    n = len(a)
    h = 1.0 / (2 * n)  # step width on [-1/4, 1/4]
    conv = h * autoconvolution(a)  # knot values of f*f at -1/2 + (k+1)h
    top, bottom = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2)
    _stairs(top, a, -0.25, 0.25, color="tab:blue")
    top.axhline(0, color="gray", lw=0.5)
    top.set_xlim(-0.25, 0.25)
    top.set_title(f"step function f: {n} steps on [-1/4, 1/4]", fontsize=9)
    knots = np.concatenate([[0.0], conv, [0.0]])  # f*f is linear between knots, zero at +-1/2
    if len(knots) <= MAX_DRAWN_POINTS:
        bottom.plot(-0.5 + np.arange(len(knots)) * h, knots, color="tab:orange", lw=1)
    else:
        idx, lo, hi = envelope(knots)
        _fill_envelope(bottom, -0.5 + idx * h, lo, hi, color="tab:orange")
    integral = a.sum() * h
    peak = float(np.max(conv))
    label = f"autoconvolution f*f: max = {peak:.6g}"
    if abs(integral) > 1e-300:
        label += f", max(f*f) / (int f)^2 = {peak / integral ** 2:.10g}"
    bottom.axhline(0, color="gray", lw=0.5)
    bottom.set_xlim(-0.5, 0.5)
    bottom.set_title(label, fontsize=9)
    fig.subplots_adjust(hspace=0.35)


def draw_overlap_step_function(fig: Figure, obj: Any) -> None:
    """Erdős minimum overlap: h on n steps of [0, 2] and M(x) = (2/n) * correlate(h, 1 - h)."""
    h = _heights(obj)
    n = len(h)
    corr = convolve(h, (1.0 - h)[::-1]) * 2.0 / n  # == np.correlate(h, 1 - h, "full") * 2 / n
    top, bottom = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2)
    _stairs(top, h, 0.0, 2.0, color="tab:blue")
    top.set_xlim(0.0, 2.0)
    top.set_title(f"h: {n} steps on [0, 2], sum(h) = {h.sum():.10g} (needs n/2 = {n / 2:g}), "
                  f"range [{h.min():.3g}, {h.max():.3g}]", fontsize=9)
    xs = (np.arange(len(corr)) - (n - 1)) * (2.0 / n)  # shift of 1 - h against h
    if len(corr) <= MAX_DRAWN_POINTS:
        bottom.plot(xs, corr, color="tab:orange", lw=1)
    else:
        idx, lo, hi = envelope(corr)
        _fill_envelope(bottom, xs[0] + idx * (2.0 / n), lo, hi, color="tab:orange")
    bottom.set_title(f"overlap M(shift): max = {corr.max():.10g}", fontsize=9)
    bottom.set_xlim(xs[0], xs[-1])
    fig.subplots_adjust(hspace=0.35)


def draw_matrix(fig: Figure, obj: Any) -> None:
    m = as_float_array(obj, "matrix")
    if m.ndim != 2:
        raise ValueError(f"expected a 2-D matrix, got shape {m.shape}")
    ax = fig.add_subplot(1, 1, 1)
    ax.imshow(m, cmap="coolwarm", vmin=-1, vmax=1, interpolation="nearest")
    title = f"{m.shape[0]} x {m.shape[1]} matrix"
    off = int(np.sum(np.abs(m) != 1))
    if off:
        title += f", {off} entries not +-1"
    if m.shape[0] == m.shape[1]:
        sign, logdet = np.linalg.slogdet(m)
        title += f"\nlog10|det| = {logdet / np.log(10):.8g}" if sign != 0 else "\nsingular"
    ax.set_title(title, fontsize=9)


def draw_integer_set(fig: Figure, obj: Any) -> None:
    u = as_float_array(obj, "set")
    if u.ndim != 1:
        raise ValueError(f"expected a flat list of integers, got shape {u.shape}")
    if np.any(u != np.round(u)):
        raise ValueError("set has non-integer members")
    u = np.unique(u.astype(np.int64))
    lo, hi = int(u.min()), int(u.max())
    span = hi - lo + 1
    ax = fig.add_subplot(1, 1, 1)
    if span <= MAX_INDICATOR_CELLS:
        ind = np.zeros(span)
        ind[u - lo] = 1
        ax.stairs(ind, np.arange(lo, hi + 2) - 0.5, fill=True, color="tab:blue")
        ax.set_ylabel("indicator")
    else:  # one cell per integer would be sub-pixel: draw the fraction of each bin in the set
        edges = np.linspace(lo, hi + 1, MAX_DRAWN_POINTS + 1)
        counts, _ = np.histogram(u, bins=edges)
        ax.stairs(counts / np.diff(edges), edges, fill=True, color="tab:blue")
        ax.set_ylabel("fraction of each bin in the set")
    ax.set_xlabel("integer")
    ax.set_title(f"set of {len(u)} integers in [{lo}, {hi}]", fontsize=9)


def draw_generic(fig: Figure, obj: Any) -> None:
    """Anything numeric: the flattened values against their index."""
    values = as_float_array(_flatten(obj), "object").ravel()
    ax = fig.add_subplot(1, 1, 1)
    if len(values) <= MAX_DRAWN_POINTS:
        ax.plot(np.arange(len(values)), values, ".-" if len(values) < 200 else "-", lw=1)
    else:
        idx, lo, hi = envelope(values)
        _fill_envelope(ax, idx.astype(float), lo, hi, color="tab:blue")
    ax.set_xlabel("index (flattened)")
    ax.set_title(f"{len(values)} values: min {values.min():.6g}, max {values.max():.6g}", fontsize=9)


def _flatten(obj: Any) -> list[Any]:
    """Flatten nested lists/dicts of numbers (ragged is fine); other leaves raise."""
    out: list[Any] = []
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, np.ndarray):
            out.extend(item.ravel().tolist())
        elif isinstance(item, bool) or not isinstance(item, (int, float, np.number)):
            raise ValueError(f"not a number: {type(item).__name__}")
        else:
            out.append(item)
    return out
