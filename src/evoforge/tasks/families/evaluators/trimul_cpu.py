"""Sandboxed evaluator of trimul-cpu (issue 16): check and time the kernel; the host re-checks and scores.
(numpy: named here so the sandbox worker imports it once, not every evaluation.)"""
from evoforge.tasks.families.kernels import evaluate_kernel


def evaluate(program_path):
    return evaluate_kernel(program_path)
