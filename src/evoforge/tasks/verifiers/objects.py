"""Reading the objects programs return: shapes, types and finiteness, with one clear reason.

Readers raise :class:`ObjectError`; the :func:`verifier` decorator turns that (and any other
exception) into ``Verdict.reject`` so a verifier never takes the host down.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from evoforge.tasks.base import Verdict

MAX_ELEMENTS = 5_000_000  # no built-in object is anywhere near this; guards the host's memory


class ObjectError(ValueError):
    """The object does not have the form the task asks for."""


def verifier(fn: Callable[..., Verdict]) -> Callable[..., Verdict]:
    @functools.wraps(fn)
    def wrapped(obj: Any, *args: Any, **kwargs: Any) -> Verdict:
        try:
            return fn(obj, *args, **kwargs)
        except ObjectError as exc:
            return Verdict.reject(str(exc))
        except (MemoryError, RecursionError) as exc:
            return Verdict.reject(f"object too large to verify ({type(exc).__name__})")
        except Exception as exc:  # a verifier must never crash the host
            return Verdict.reject(f"cannot read the object: {type(exc).__name__}: {exc}")

    return wrapped


def _describe(obj: Any) -> str:
    if isinstance(obj, np.ndarray):
        return f"array of shape {obj.shape} and dtype {obj.dtype}"
    if isinstance(obj, (list, tuple)):
        return f"{type(obj).__name__} of length {len(obj)}"
    return type(obj).__name__


def unwrap(obj: Any) -> Any:
    """Accept the reference-file form ``{"data": ...}`` as well as the bare object."""
    if isinstance(obj, dict) and "data" in obj:
        return obj["data"]
    return obj


def real_array(obj: Any, what: str, ndim: int | None = None) -> np.ndarray:
    """A finite float64 array; rejects strings, booleans, complex numbers, ragged lists, NaN/inf."""
    if obj is None:
        raise ObjectError(f"{what}: got None (did solve() return its result?)")
    if isinstance(obj, (str, bytes, dict)):
        raise ObjectError(f"{what}: expected numbers, got {type(obj).__name__}")
    try:
        raw = np.asarray(obj)
    except (ValueError, TypeError) as exc:
        raise ObjectError(f"{what}: not a rectangular array of numbers ({exc})") from None
    if raw.dtype == object:
        raise ObjectError(f"{what}: not a rectangular array of numbers (ragged or mixed types)")
    if raw.dtype.kind == "b":
        raise ObjectError(f"{what}: booleans are not numbers here")
    if raw.dtype.kind == "c":
        raise ObjectError(f"{what}: complex numbers are not allowed")
    if raw.dtype.kind not in "iuf":
        raise ObjectError(f"{what}: expected numbers, got {raw.dtype} values")
    if raw.size > MAX_ELEMENTS:
        raise ObjectError(f"{what}: {raw.size} numbers is more than the limit {MAX_ELEMENTS}")
    if ndim is not None and raw.ndim != ndim:
        raise ObjectError(f"{what}: expected a {ndim}-d array, got {_describe(obj)}")
    arr = raw.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        spot = idx[0] if len(idx) == 1 else idx
        raise ObjectError(f"{what}: entry {spot} is {arr[idx]} (NaN/inf are rejected)")
    return arr


def vector(obj: Any, what: str, min_len: int = 1) -> np.ndarray:
    arr = real_array(unwrap(obj), what)
    if arr.ndim == 2 and 1 in arr.shape:  # a (1,n) or (n,1) array is a vector too
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise ObjectError(f"{what}: expected a flat list of numbers, got {_describe(np.asarray(obj))}")
    if arr.size < min_len:
        raise ObjectError(f"{what}: needs at least {min_len} values, got {arr.size}")
    return arr


def points(obj: Any, n: int, d: int, what: str = "points") -> np.ndarray:
    arr = real_array(unwrap(obj), what)
    if arr.shape != (n, d):
        raise ObjectError(f"{what}: expected {n} points of dimension {d} (shape ({n}, {d})), got shape {arr.shape}")
    return arr
