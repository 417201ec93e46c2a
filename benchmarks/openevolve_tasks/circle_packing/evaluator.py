"""OpenEvolve-format evaluator for circle packing n=26 with the 1e-6 tolerance ("-T").

Like OpenEvolve's examples/circle_packing evaluator, each evaluation runs the program in a
FRESH Python interpreter (subprocess, with a timeout) and validates the returned packing
here; unlike it, there is one stage (no cascade re-running the program) and the validity
check is vectorised. The score is the sum of radii of a valid packing, 0 otherwise.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

N = 26
TOLERANCE = 1e-6  # every inequality relaxed by this much, as circle-packing-26-t
TIMEOUT_S = 60

_RUNNER = r"""
import importlib.util, json, sys
import numpy as np
spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
centers, radii, _ = module.run_packing()
with open(sys.argv[2], "w") as out:
    json.dump({"centers": np.asarray(centers, dtype=float).tolist(),
               "radii": np.asarray(radii, dtype=float).tolist()}, out)
"""


def _fail(reason):
    return {"combined_score": 0.0, "sum_radii": 0.0, "validity": 0.0, "error": reason}


def check_packing(centers, radii):
    """None if valid, else the reason."""
    if centers.shape != (N, 2) or radii.shape != (N,):
        return f"wrong shapes {centers.shape}, {radii.shape}; expected ({N}, 2), ({N},)"
    if not (np.all(np.isfinite(centers)) and np.all(np.isfinite(radii))):
        return "non-finite values"
    if np.any(radii < 0):
        return "negative radius"
    x, y = centers[:, 0], centers[:, 1]
    lo, hi = -TOLERANCE, 1 + TOLERANCE
    if np.any(x - radii < lo) or np.any(x + radii > hi) or np.any(y - radii < lo) or np.any(y + radii > hi):
        return "a circle leaves the unit square"
    dist = np.hypot(x[:, None] - x[None, :], y[:, None] - y[None, :])
    gap = dist - (radii[:, None] + radii[None, :])
    gap[np.diag_indices(N)] = np.inf
    if np.any(gap < -TOLERANCE):
        return "two circles overlap"
    return None


def evaluate(program_path):
    fd, result_path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        proc = subprocess.run([sys.executable, "-c", _RUNNER, program_path, result_path],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        if proc.returncode != 0:
            return _fail(f"program failed: {proc.stderr.strip().splitlines()[-1:]}")
        with open(result_path) as f:
            result = json.load(f)
        centers = np.asarray(result["centers"], dtype=float)
        radii = np.asarray(result["radii"], dtype=float)
    except subprocess.TimeoutExpired:
        return _fail(f"timeout after {TIMEOUT_S} s")
    except Exception as exc:  # unreadable result: a broken child, not a crash of the run
        return _fail(f"no result: {exc}")
    finally:
        os.unlink(result_path)
    reason = check_packing(centers, radii)
    if reason is not None:
        return _fail(reason)
    total = float(np.sum(radii))
    if not math.isfinite(total):
        return _fail("sum of radii is not finite")
    return {"combined_score": total, "sum_radii": total, "validity": 1.0}
