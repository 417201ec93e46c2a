"""Score a program's quadratic coefficients: negative mean squared error on fixed data."""
import importlib.util
import math

# y = 1.5 x^2 - 2 x + 0.5, rounded to 3 decimals (so the best fit is not exactly round)
XS = [-2 + 0.2 * k for k in range(21)]
YS = [round(1.5 * x * x - 2.0 * x + 0.5 + 0.05 * math.sin(7 * x), 3) for x in XS]


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    a, b, c = (float(v) for v in module.coefficients())
    if not all(math.isfinite(v) for v in (a, b, c)):
        return {"combined_score": -1e9, "error": "non-finite coefficient"}
    mse = sum((a * x * x + b * x + c - y) ** 2 for x, y in zip(XS, YS)) / len(XS)
    return {"combined_score": -mse, "mse": mse, "a": a, "b": b, "c": c}
