"""Sandboxed evaluator of oscillator1 (issue 16): fit the skeleton's constants (scipy), predict; the host scores.
(numpy, scipy: named here so the sandbox worker imports them once, not every evaluation.)"""
from evoforge.tasks.families.symreg import evaluate_fit


def evaluate(program_path):
    return evaluate_fit(program_path, "oscillator1")
