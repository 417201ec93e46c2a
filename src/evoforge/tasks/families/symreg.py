"""Symbolic regression: LLM-SR's nonlinear-oscillator setting, with data we generate ourselves.

The program proposes an equation *skeleton* ``equation(x, v, params)`` (oscillator1) or
``equation(t, x, v, params)`` (oscillator2) for the acceleration; its free constants
``params`` (MAX_NPARAMS = 10) are fitted inside the evaluation with scipy's BFGS from all-ones
on the training data, as in LLM-SR. Verifier contract:
* sandbox child (``evaluate_fit``): generate the data, fit, predict on the in-domain test
  inputs and the out-of-domain inputs, send back params and predictions (not the targets);
* host (``verify``): regenerate the targets, NMSE = mean((y - yhat)^2) / var(y) on both sets.
  The in-domain NMSE is the reward (minimise); the out-of-domain NMSE is reported.

Data (ours, seeded): x' = v, v' = f(t, x, v) integrated with RK4 (dt = 0.01), sampled every
0.05 on t in [0, 20]. In-domain: 4 trajectories from (x0, v0) ~ U[-1, 1]^2, 80/20 random
split into train and in-domain test. Out-of-domain: the points of 4 larger-amplitude
trajectories (|x0| in [2, 2.5]) that lie outside the training data's (x, v) bounding box. Gaussian noise of 1 % of std(a) on the training targets only; test targets
are exact. The equation forms follow our reading of LLM-SR's Oscillation 1 / 2 (driven,
damped, nonlinear); the constants and the data are ours, not LLM-SR's released CSV files.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from evoforge.tasks.base import Direction, KnownValue, Task, Verdict

MAX_NPARAMS = 10
NOISE = 0.01
SPECS: dict[str, dict[str, Any]] = {
    "oscillator1": {
        "args": ("x", "v"),
        "truth": lambda t, x, v: 0.8 * np.sin(1.5 * x) - 0.5 * v**3 - 0.2 * x**3 - 0.5 * x * v - x * np.cos(x),
        "text": "acceleration in a damped nonlinear oscillator, given position x and velocity v",
    },
    "oscillator2": {
        "args": ("t", "x", "v"),
        "truth": lambda t, x, v: 0.7 * np.sin(1.2 * t) - 0.4 * v**3 - 0.3 * x * v - x * np.exp(-0.2 * x * x) - 0.1 * x**3,
        "text": "acceleration in a damped nonlinear oscillator with a driving force, given time t, position x and velocity v",
    },
}


def _simulate(f: Callable, x0: np.ndarray, v0: np.ndarray, t_end: float = 20.0, dt: float = 0.01, every: int = 5):
    """RK4 on all trajectories at once; returns (t, x, v, a) flattened over the trajectories."""
    steps = int(round(t_end / dt))
    x, v, t = x0.astype(float).copy(), v0.astype(float).copy(), 0.0
    rows = []
    for k in range(steps + 1):
        if k % every == 0:
            rows.append((np.full_like(x, t), x.copy(), v.copy(), f(t, x, v)))
        k1x, k1v = v, f(t, x, v)
        k2x, k2v = v + 0.5 * dt * k1v, f(t + 0.5 * dt, x + 0.5 * dt * k1x, v + 0.5 * dt * k1v)
        k3x, k3v = v + 0.5 * dt * k2v, f(t + 0.5 * dt, x + 0.5 * dt * k2x, v + 0.5 * dt * k2v)
        k4x, k4v = v + dt * k3v, f(t + dt, x + dt * k3x, v + dt * k3v)
        x = x + dt / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
        v = v + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        t += dt
    return tuple(np.stack([r[i] for r in rows]).ravel() for i in range(4))


@functools.lru_cache(maxsize=4)
def dataset(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """train_X/train_y (noisy), id_X/id_y and ood_X/ood_y (exact); X columns are t, x, v."""
    f = SPECS[name]["truth"]
    rng = np.random.default_rng([16, seed, len(name), ord(name[-1])])
    t, x, v, a = _simulate(f, rng.uniform(-1.0, 1.0, 4), rng.uniform(-1.0, 1.0, 4))
    X = np.stack([t, x, v], axis=1)
    perm = rng.permutation(len(a))
    cut = int(0.8 * len(a))
    tr, te = perm[:cut], perm[cut:]
    noisy = a[tr] + rng.normal(0.0, NOISE * a.std(), size=len(tr))
    sign = rng.choice([-1.0, 1.0], 4)
    t2, x2, v2, a2 = _simulate(f, sign * rng.uniform(2.0, 2.5, 4), rng.uniform(-1.0, 1.0, 4))
    # out of domain = the larger-amplitude points outside the training data's (x, v) box
    box = X[tr][:, 1:]
    out = (x2 < box[:, 0].min()) | (x2 > box[:, 0].max()) | (v2 < box[:, 1].min()) | (v2 > box[:, 1].max())
    return {"train_X": X[tr], "train_y": noisy, "id_X": X[te], "id_y": a[te],
            "ood_X": np.stack([t2, x2, v2], axis=1)[out], "ood_y": a2[out]}


def _columns(name: str, X: np.ndarray) -> list[np.ndarray]:
    idx = {"t": 0, "x": 1, "v": 2}
    return [X[:, idx[a]] for a in SPECS[name]["args"]]


def evaluate_fit(program_path: str, name: str) -> dict[str, Any]:
    """Runs in the sandbox child: load the skeleton, fit its constants (BFGS from ones), predict."""
    import importlib.util

    from scipy.optimize import minimize

    spec = importlib.util.spec_from_file_location("candidate", program_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    equation = getattr(mod, "equation", None)
    if not callable(equation):
        return {"error": "the program defines no function equation(...)"}
    d = dataset(name)
    cols, y = _columns(name, d["train_X"]), d["train_y"]

    def loss(p: np.ndarray) -> float:
        with np.errstate(all="ignore"):
            r = np.asarray(equation(*cols, p), dtype=float) - y
            val = float(np.mean(r * r))
        return val if np.isfinite(val) else 1e30

    res = minimize(loss, np.ones(MAX_NPARAMS), method="BFGS")
    p = res.x
    with np.errstate(all="ignore"):
        pred_id = np.broadcast_to(np.asarray(equation(*_columns(name, d["id_X"]), p), dtype=float), d["id_y"].shape)
        pred_ood = np.broadcast_to(np.asarray(equation(*_columns(name, d["ood_X"]), p), dtype=float), d["ood_y"].shape)
    return {"params": p.tolist(), "train_mse": float(res.fun), "pred_id": pred_id.tolist(), "pred_ood": pred_ood.tolist()}


def nmse(y: np.ndarray, yhat: np.ndarray) -> float:
    return float(np.mean((y - yhat) ** 2) / np.var(y))


def verify(value: Any, name: str) -> Verdict:
    """Runs in the host: NMSE of the predictions against targets the program never saw."""
    if not isinstance(value, dict):
        return Verdict.reject("evaluator result malformed")
    if value.get("error"):
        return Verdict.reject(str(value["error"])[:500])
    d = dataset(name)
    try:
        pid = np.asarray(value["pred_id"], dtype=float)
        pood = np.asarray(value["pred_ood"], dtype=float)
        params = [float(x) for x in value["params"]]
    except (KeyError, TypeError, ValueError) as exc:
        return Verdict.reject(f"evaluator result malformed: {exc}")
    if pid.shape != d["id_y"].shape or pood.shape != d["ood_y"].shape:
        return Verdict.reject("predictions have the wrong shape")
    if not np.all(np.isfinite(pid)):
        return Verdict.reject("the fitted equation gives non-finite values on the in-domain test inputs")
    n_id = nmse(d["id_y"], pid)
    n_ood = nmse(d["ood_y"], pood) if np.all(np.isfinite(pood)) else float("inf")
    metrics = {"nmse_id": n_id, "nmse_ood": n_ood if np.isfinite(n_ood) else 1e300,
               "log10_nmse_id": float(np.log10(max(n_id, 1e-300))), "train_mse": float(value.get("train_mse", np.nan)),
               "params": [round(x, 6) for x in params]}
    return Verdict.accept(n_id, **metrics)


PROGRAMS = {
    "oscillator1": "dv = params[0] * x + params[1] * v + params[2]",
    "oscillator2": "dv = params[0] * t + params[1] * x + params[2] * v + params[3]",
}


def initial_program(name: str) -> str:
    args = ", ".join(f"{a}: np.ndarray" for a in SPECS[name]["args"])
    docs = {"t": "time", "x": "position", "v": "velocity"}
    arg_doc = "\n".join(f"        {a}: observations of {docs[a]}." for a in SPECS[name]["args"])
    return (
        '"""Equation skeleton for the acceleration (symbolic regression, LLM-SR style)."""\n'
        "import numpy as np\n\n"
        "MAX_NPARAMS = 10\n\n\n"
        "# EVOLVE-BLOCK-START\n"
        f"def equation({args}, params: np.ndarray) -> np.ndarray:\n"
        f'    """Mathematical function for {SPECS[name]["text"]}.\n\n    Args:\n{arg_doc}\n'
        "        params: numeric constants fitted by the evaluator (BFGS from all-ones, at most 10 used).\n"
        '    Returns: the acceleration, same shape as the inputs.\n    """\n'
        f"    {PROGRAMS[name]}\n"
        "    return dv\n"
        "# EVOLVE-BLOCK-END\n"
    )


def description(name: str) -> str:
    args = ", ".join(SPECS[name]["args"])
    return "\n".join([
        f"Symbolic regression ({name}): find the equation skeleton for the {SPECS[name]['text']}. Goal: minimise the score.",
        f"Your program defines `equation({args}, params)` using numpy; params is an array of {MAX_NPARAMS} free constants "
        "that the evaluator fits to the training data with scipy.optimize.minimize(method='BFGS') from all-ones.",
        "Score (minimise): NMSE = mean((a - a_hat)^2) / var(a) on held-out in-domain points; the out-of-domain NMSE "
        "(larger oscillation amplitudes) is reported as the metric nmse_ood. Training targets carry 1 % Gaussian noise.",
        "Data: trajectories of a damped, nonlinear (driven, for oscillator2) oscillator x' = v, v' = f, generated by evoforge "
        "(synthetic; not LLM-SR's released files). Only code between the EVOLVE-BLOCK markers may change.",
        "Hints: think of restoring forces (x, x^3, sin, x cos x), damping (v, v^3, x v), driving terms (sin of t) and "
        "exponential stiffness; keep the number of constants small so the fit is well posed.",
    ])


_EVAL = {n: f"{n}.py" for n in SPECS}


def build(name: str) -> Task:
    from pathlib import Path

    return Task(
        name=name, description=description(name), initial_program=initial_program(name), direction=Direction.MIN,
        verify=functools.partial(verify, name=name), object_kind="generic", family="symbolic-regression",
        best_human=KnownValue(0.0, "the generating equation"), best_ai=None,
        initial_score=INITIAL.get(name), time_limit=60.0, memory_mb=2048, evolve_blocks=True,
        evaluator_path=Path(__file__).with_name("evaluators") / _EVAL[name],
        params={"max_nparams": MAX_NPARAMS, "noise": NOISE},
    )


INITIAL = {"oscillator1": 0.7630375997012682, "oscillator2": 0.06484302511465305}  # LLM-SR's linear skeletons, fitted
