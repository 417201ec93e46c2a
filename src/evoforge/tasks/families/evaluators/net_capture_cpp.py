"""Sandboxed evaluator of net-capture-cpp (issue 16): compile/run per case; the host scores.
(numpy: named here so the sandbox worker imports it once, not every evaluation.)"""
from evoforge.tasks.families.algo import evaluate_cases


def evaluate(program_path):
    return evaluate_cases(program_path, "cpp")
