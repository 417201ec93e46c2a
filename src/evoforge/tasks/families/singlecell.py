"""Single-cell RNA-seq denoising on SYNTHETIC counts, scored by molecular cross-validation (MCV).

The OpenProblems datasets (TTT-Discover trains on Pancreas, reports PBMC and Tabula) cannot be
downloaded here, so the shipped task ``denoise-synthetic`` draws count matrices from a known
low-rank expression model (ours, seeded): cell types -> latent programs Z (rank 6), gene
loadings W, gene baselines b; expression shares P = softmax(Z W^T + b) per cell; library
sizes ~ LogNormal(log 1500, 0.35); counts X ~ Poisson(lib * P). MCV (Batson et al. 2019, as in
the seed): split every count binomially, X' ~ Binomial(X, p = 0.9), X'' = X - X'; the program
denoises X' alone; score = mean over entries of (log1p(Y (1-p)/p) - log1p(X''))^2 (minimise).
Negative or non-finite outputs are invalid (the "Poisson constraint"). Because the data are
synthetic, the metrics also report the MSE of the true means (``mse_truth``, the floor) and of
no denoising (``mse_raw``), and ``normalized`` = (mse_raw - mse) / (mse_raw - mse_truth).
Reward = mean MCV-MSE on the training seeds; datasets with other seeds and parameters are
held out and reported (``heldout_*``), never used for the reward.

A real matrix (cells x genes counts; .h5ad via anndata, or .npz/.npy) is scored the same way:
``get_task("denoise-h5ad:/path/data.h5ad")`` (see ``real_task``).
"""
from __future__ import annotations

import base64
import functools
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from evoforge.tasks.base import Direction, KnownValue, Task, Verdict
from evoforge.tasks.errors import TaskError

P_TRAIN = 0.9
TRAIN = ({"seed": 0}, {"seed": 1})  # the reward's datasets
HELDOUT = ({"seed": 100, "types": 8, "depth": 1000.0}, {"seed": 101, "types": 3, "depth": 2500.0})
MAX_ENTRIES = 4_000_000  # a real matrix travels back from the sandbox as float32: keep it bounded


@functools.lru_cache(maxsize=8)
def synthetic(seed: int, cells: int = 250, genes: int = 300, types: int = 5, rank: int = 6, depth: float = 1500.0):
    """(counts X, true means lambda), both (cells, genes). Deterministic in the arguments."""
    rng = np.random.default_rng([7, seed])
    W = rng.normal(0.0, 0.8, (genes, rank))
    centres = rng.normal(0.0, 1.0, (types, rank))
    Z = centres[rng.integers(types, size=cells)] + 0.3 * rng.normal(size=(cells, rank))
    eta = Z @ W.T + rng.normal(-1.0, 1.0, genes)
    P = np.exp(eta - eta.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    lam = rng.lognormal(np.log(depth), 0.35, cells)[:, None] * P
    return rng.poisson(lam).astype(np.int64), lam


def mcv_split(X: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    train = np.random.default_rng([8, seed]).binomial(X, P_TRAIN)
    return train, X - train


def mcv_mse(Y: np.ndarray, heldout: np.ndarray) -> float:
    return float(np.mean((np.log1p(Y * (1 - P_TRAIN) / P_TRAIN) - np.log1p(heldout)) ** 2))


def _pack(Y: np.ndarray) -> dict[str, Any]:
    return {"shape": list(Y.shape), "f32": base64.b64encode(np.ascontiguousarray(Y, dtype=np.float32).tobytes()).decode()}


def _unpack(d: Any, shape: tuple[int, ...]) -> np.ndarray:
    if not isinstance(d, dict) or tuple(d.get("shape", ())) != tuple(shape):
        raise ValueError(f"denoised matrix must have shape {shape}")
    return np.frombuffer(base64.b64decode(d["f32"]), dtype=np.float32).reshape(shape).astype(float)


def _denoise_all(program_path: str, matrices: list[np.ndarray]) -> dict[str, Any]:
    """Sandbox side: run the program's denoise() on every training split, send the results back."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("candidate", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    fn = getattr(mod, "denoise", None)
    if not callable(fn):
        return {"error": "the program defines no function denoise(X)"}
    out = []
    for X in matrices:
        Y = np.asarray(fn(X.copy()), dtype=float)
        if Y.shape != X.shape:
            return {"error": f"denoise returned shape {Y.shape}, expected {X.shape}"}
        out.append(_pack(Y))
    return {"denoised": out}


def _datasets() -> list[dict[str, Any]]:
    return [*TRAIN, *HELDOUT]


def evaluate_synthetic(program_path: str) -> dict[str, Any]:
    mats = [mcv_split(synthetic(**{k: v for k, v in d.items()})[0], d["seed"])[0] for d in _datasets()]
    return _denoise_all(program_path, mats)


def _check(Y: np.ndarray, i: int) -> str:
    if not np.all(np.isfinite(Y)):
        return f"dataset {i}: denoised values are not all finite"
    if Y.min() < 0:
        return f"dataset {i}: negative denoised values (expected counts >= 0)"
    return ""


def verify_synthetic(value: Any) -> Verdict:
    if not isinstance(value, dict):
        return Verdict.reject("evaluator result malformed")
    if value.get("error"):
        return Verdict.reject(str(value["error"])[:500])
    got = value.get("denoised")
    if not isinstance(got, list) or len(got) != len(_datasets()):
        return Verdict.reject("evaluator result malformed (one matrix per dataset expected)")
    rows = []
    for i, (d, packed) in enumerate(zip(_datasets(), got)):
        X, lam = synthetic(**d)
        train, held = mcv_split(X, d["seed"])
        try:
            Y = _unpack(packed, X.shape)
        except (ValueError, KeyError, TypeError) as exc:
            return Verdict.reject(f"dataset {i}: {exc}")
        why = _check(Y, i)
        if why:
            return Verdict.reject(why)
        mse, raw, truth = mcv_mse(Y, held), mcv_mse(train.astype(float), held), mcv_mse(lam * P_TRAIN, held)
        rows.append((mse, raw, truth, (raw - mse) / (raw - truth)))
    tr, ho = rows[: len(TRAIN)], rows[len(TRAIN):]
    m = lambda rs, j: float(np.mean([r[j] for r in rs]))  # noqa: E731
    return Verdict.accept(m(tr, 0), mse=m(tr, 0), mse_raw=m(tr, 1), mse_truth=m(tr, 2), normalized=m(tr, 3),
                          heldout_mse=m(ho, 0), heldout_mse_raw=m(ho, 1), heldout_mse_truth=m(ho, 2), heldout_normalized=m(ho, 3))


# -- a user's real matrix --------------------------------------------------------------------------
def load_matrix(path: str | Path) -> np.ndarray:
    """Counts (cells x genes, non-negative integers) from .h5ad (anndata), .npz (key X) or .npy."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise TaskError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".h5ad":
        try:
            import anndata
        except ImportError:
            raise TaskError("reading .h5ad needs anndata: pip install 'evoforge[singlecell]' (or give a .npz/.npy)") from None
        X = anndata.read_h5ad(path).X
    elif suffix == ".npz":
        with np.load(path) as z:
            if "X" not in z:
                raise TaskError(f"{path}: no array named X in the .npz")
            X = z["X"]
    elif suffix == ".npy":
        X = np.load(path)
    else:
        raise TaskError(f"{path}: expected .h5ad, .npz or .npy, got {suffix or 'no extension'}")
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    if X.ndim != 2 or X.size == 0:
        raise TaskError(f"{path}: expected a 2-d cells x genes matrix, got shape {X.shape}")
    if X.size > MAX_ENTRIES:
        raise TaskError(f"{path}: {X.shape[0]} x {X.shape[1]} is over {MAX_ENTRIES} entries; subsample cells or genes first")
    if not np.all(np.isfinite(X)) or X.min() < 0 or not np.all(X == np.round(X)):
        raise TaskError(f"{path}: MCV needs raw counts (non-negative integers); this matrix is normalised or has NaNs")
    return X.astype(np.int64)


def evaluate_real(program_path: str, data_file: str) -> dict[str, Any]:
    return _denoise_all(program_path, [mcv_split(np.load(data_file), 0)[0]])


def verify_real(value: Any, data_file: str) -> Verdict:
    if not isinstance(value, dict) or value.get("error"):
        return Verdict.reject(str((value or {}).get("error", "evaluator result malformed"))[:500] if isinstance(value, dict) else "evaluator result malformed")
    X = np.load(data_file)
    train, held = mcv_split(X, 0)
    try:
        Y = _unpack((value.get("denoised") or [None])[0], X.shape)
    except (ValueError, KeyError, TypeError) as exc:
        return Verdict.reject(str(exc))
    why = _check(Y, 0)
    if why:
        return Verdict.reject(why)
    mse, raw = mcv_mse(Y, held), mcv_mse(train.astype(float), held)
    return Verdict.accept(mse, mse=mse, mse_raw=raw, improvement=(raw - mse) / raw)


def real_task(path: str) -> Task:
    """The same task and scorer on a user's matrix. The counts and an evaluator stub go to a
    folder the sandbox can read (the pool exposes an evaluator's folder to its dropped uid)."""
    X = load_matrix(path)
    digest = hashlib.blake2b(X.tobytes() + str(X.shape).encode(), digest_size=8).hexdigest()
    folder = Path(tempfile.gettempdir()) / f"evoforge-denoise-{digest}"
    folder.mkdir(mode=0o755, exist_ok=True)
    data = folder / "counts.npy"
    if not data.exists():
        np.save(data, X)
        os.chmod(data, 0o644)
    stub = folder / "evaluator.py"
    stub.write_text("# numpy: warm in the sandbox worker\nfrom evoforge.tasks.families.singlecell import evaluate_real\n\n\n"
                    f"def evaluate(program_path):\n    return evaluate_real(program_path, {str(data)!r})\n")
    os.chmod(stub, 0o644)
    task = build("denoise-synthetic")
    task.name = f"denoise-{Path(path).stem}"
    task.description = task.description.replace("SYNTHETIC counts drawn by evoforge", f"the user's matrix {Path(path).name} ({X.shape[0]} cells x {X.shape[1]} genes)")
    task.verify = functools.partial(verify_real, data_file=str(data))
    task.evaluator_path = stub
    task.initial_score, task.best_human = None, None
    return task


def description() -> str:
    return "\n".join([
        "Single-cell RNA-seq denoising on SYNTHETIC counts drawn by evoforge from a known low-rank expression model with "
        "Poisson sampling (not the OpenProblems data). Goal: minimise the score.",
        "Your program defines `denoise(X)`: X is a (cells x genes) numpy array of raw integer counts; return an array of the "
        "same shape with the denoised expected counts (non-negative, finite). numpy and scipy are available.",
        f"Score (minimise): molecular cross-validation. Each count was split binomially, X' ~ Binomial(X, {P_TRAIN}) "
        "(what denoise receives) and X'' = X - X' (held out); score = mean((log1p(Y*(1-p)/p) - log1p(X''))^2), averaged "
        f"over {len(TRAIN)} training datasets. Metrics: mse_raw (no denoising), mse_truth (the true means: the floor), "
        "normalized = (mse_raw - mse) / (mse_raw - mse_truth), and the same on held-out datasets (other seeds, "
        "other numbers of cell types and depths).",
        "Limits: 120 s, 4096 MB. Only code between the EVOLVE-BLOCK markers may change.",
        "Hints: MAGIC (library-size normalisation, sqrt, PCA, adaptive-kernel kNN graph, diffusion t steps) is the start; "
        "low-rank SVD refinement, gene-adaptive transforms and ensembling helped in TTT-Discover.",
    ])


def build(name: str) -> Task:
    from evoforge.tasks.catalog import load_program

    return Task(
        name=name, description=description(), initial_program=load_program("denoise_magic.py"), direction=Direction.MIN,
        verify=verify_synthetic, object_kind="generic", family="single-cell",
        best_human=None, best_ai=None,  # no published value on these synthetic data; mse_truth is the floor
        initial_score=INITIAL, time_limit=120.0, memory_mb=4096, evolve_blocks=True,
        evaluator_path=Path(__file__).with_name("evaluators") / "denoise_synthetic.py",
        params={"p_train": P_TRAIN, "train_seeds": [d["seed"] for d in TRAIN], "heldout_seeds": [d["seed"] for d in HELDOUT]},
    )


INITIAL = 0.08147001786080321  # MAGIC defaults (knn 5, t 3): worse than no denoising here (normalized < 0)
