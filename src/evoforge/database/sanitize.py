"""Everything that crosses into the run store is made storable and bounded here.

A generated program (or a model server) chooses what reaches the host: text with lone
surrogates (not encodable as UTF-8, so SQLite refuses it), integers with a million digits
(Python refuses to print them), floats beyond range, dicts of 50 MB, cycles, odd types. None of
that may make the host raise, and none of it may grow run.db without bound. Each function here
turns any value into one that stores; over a cap the value is cut and marked, never rejected.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

CUT_MARK = "[... {n} characters cut by evoforge ...]"
_MAX_DEPTH = 24
_MAX_INT_BITS = 4096  # ~1233 digits: printed at once; larger ints become their float (or inf)
_MAX_ITEMS = 100_000  # list items / dict keys kept while cleaning a value
METRIC_INT_BITS = 63  # a metric is a number the host computes with: wider ints become floats
_MAX_NODES = 250_000  # values visited in all by clean(): a shared sub-list cannot make the copy explode


@dataclass(frozen=True)
class StoreLimits:
    """Caps on what one child may put into run.db (characters of text, bytes of JSON)."""

    response_chars: int = 1 << 20  # a model response (and the code taken from it)
    feedback_chars: int = 16 << 10  # reason + output tails shown to the model next time
    error_chars: int = 4 << 10  # the backend's error line
    metrics_bytes: int = 64 << 10  # the evaluator's metrics dict, as JSON
    object_bytes: int = 64 << 20  # a new best's object (the construction itself)


DEFAULT_LIMITS = StoreLimits()


def store_limits(overrides: dict[str, Any] | None) -> StoreLimits:
    """StoreLimits from a run config's ``store_limits`` (unknown keys and non-positive caps: ValueError)."""
    fields = StoreLimits.__dataclass_fields__
    bad = sorted(set(overrides or {}) - set(fields))
    if bad:
        raise ValueError(f"store_limits: unknown key(s) {', '.join(bad)} (known: {', '.join(fields)})")
    values = {k: int(v) for k, v in (overrides or {}).items()}
    if any(v <= 0 for v in values.values()):
        raise ValueError(f"store_limits: caps must be positive, got {values}")
    return StoreLimits(**values)


def text(value: Any, cap: int | None = None) -> str | None:
    """A str SQLite accepts (lone surrogates escaped), at most ~cap characters (cut marked)."""
    if value is None:
        return None
    if not isinstance(value, str):
        value = _safe_str(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    if cap is not None and len(value) > cap:
        value = value[:cap] + "\n" + CUT_MARK.format(n=len(value) - cap)
    return value


def number(value: Any) -> float | None:
    """A float for a REAL column (ints of any size, bools, numpy scalars); None if not a number."""
    if value is None or isinstance(value, str):
        return None
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    try:
        f = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if math.isnan(f) else f  # SQLite stores NaN as NULL anyway: say so explicitly


def clean(value: Any, depth: int = 0, string_cap: int | None = 1 << 16, _budget: list[int] | None = None,
          int_bits: int = _MAX_INT_BITS, max_depth: int = _MAX_DEPTH) -> Any:
    """A JSON-encodable copy of `value`: plain types only, no cycles, bounded depth, width and size.

    Ints wider than `int_bits` become floats (inf beyond float range).
    """
    budget = _budget if _budget is not None else [_MAX_NODES]
    budget[0] -= 1
    if budget[0] < 0:
        return "<cut>"
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        if value.bit_length() > int_bits:
            return number(value)
        return int(value)
    if isinstance(value, str):
        return text(value, string_cap)
    if depth >= max_depth:
        return "<nested too deep>"
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for i, (k, v) in enumerate(value.items()):
            if i >= _MAX_ITEMS:
                out["_evoforge_cut"] = len(value) - i
                break
            key = k if isinstance(k, str) else _safe_str(k)
            out[text(key, 256) or ""] = clean(v, depth + 1, string_cap, budget, int_bits, max_depth)
        return out
    if isinstance(value, (list, tuple)):
        items = [clean(v, depth + 1, string_cap, budget, int_bits, max_depth) for v in value[:_MAX_ITEMS]]
        if len(value) > _MAX_ITEMS:
            items.append(f"<{len(value) - _MAX_ITEMS} more items cut>")
        return items
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist) and type(value).__module__.startswith("numpy"):
        try:
            return clean(tolist(), depth + 1, string_cap, budget, int_bits, max_depth)
        except Exception:
            pass
    return text(_safe_str(value), 256)


def dumps(value: Any, cap: int | None = None, int_bits: int = _MAX_INT_BITS, exact: bool = True) -> str:
    """JSON text of `value` (NaN/inf allowed) that never raises; over `cap` bytes a marked stand-in.

    exact (snapshots, objects, meta): plain json.dumps first, at C speed and keeping the value as
    it is; clean() only when that raises (an int too large to print, an odd type, a cycle).
    Otherwise (metrics) always through clean(), so wide ints become floats. A dict over the cap
    keeps its numeric entries (what scores are made of) while they fit.
    """
    data = None
    if exact:
        try:
            data = json.dumps(value, allow_nan=True, separators=(",", ":"), default=_numpy_default)
        except (TypeError, ValueError, RecursionError, OverflowError):
            pass  # lone surrogates need no fallback: json escapes them (ensure_ascii)
    if data is None:
        wide = {"string_cap": None, "max_depth": 200} if exact else {}  # exact values rarely get here
        data = json.dumps(clean(value, int_bits=int_bits, **wide), allow_nan=True, separators=(",", ":"))
    if cap is None or len(data) <= cap:
        return data
    stand_in: dict[str, Any] = {"_evoforge_cut": f"{len(data)} bytes of JSON over the {cap}-byte cap"}
    if isinstance(value, dict):
        size = len(json.dumps(stand_in))
        for k, v in value.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                entry = {text(k if isinstance(k, str) else _safe_str(k), 256): clean(v, int_bits=int_bits)}
                size += len(json.dumps(entry, allow_nan=True)) + 1
                if size > cap:
                    break
                stand_in.update(entry)
    return json.dumps(stand_in, allow_nan=True, separators=(",", ":"))


def _numpy_default(o: Any) -> Any:
    tolist = getattr(o, "tolist", None)
    if callable(tolist) and type(o).__module__.startswith("numpy"):
        return tolist()
    raise TypeError(type(o).__name__)


def bound_metrics(metrics: Any, cap: int = DEFAULT_LIMITS.metrics_bytes) -> dict[str, Any]:
    """The metrics dict the host keeps in memory and in run.db (same cut as `dumps`)."""
    if not isinstance(metrics, dict):
        return {}
    out = json.loads(dumps(metrics, cap, METRIC_INT_BITS, exact=False))
    return out if isinstance(out, dict) else {}


def _safe_str(value: Any) -> str:
    try:
        s = repr(value) if not isinstance(value, str) else value
    except Exception as exc:  # a hostile __repr__, or an int too large to print
        s = f"<{type(value).__name__} ({type(exc).__name__})>"
    return s[:4096]
