"""OpenEvolve-format evaluator of the trivial task: import the program, score 1 / (1 + |solve() - 42|).

Runs in the evaluating process (no fresh interpreter): the point is the framework's overhead.
"""
import importlib.util
import math

TARGET = 42.0


def evaluate(program_path):
    try:
        spec = importlib.util.spec_from_file_location("candidate", program_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        value = float(module.solve())
    except Exception as exc:  # a broken child scores 0, as OpenEvolve's examples do
        return {"combined_score": 0.0, "validity": 0.0, "error": str(exc)}
    if not math.isfinite(value):
        return {"combined_score": 0.0, "validity": 0.0, "error": "solve() is not finite"}
    return {"combined_score": 1.0 / (1.0 + abs(value - TARGET)), "value": value, "validity": 1.0}
