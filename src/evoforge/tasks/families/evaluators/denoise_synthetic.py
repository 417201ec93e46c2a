"""Sandboxed evaluator of denoise-synthetic (issue 16): run denoise() on the MCV training splits; the host scores.
(numpy, scipy: named here so the sandbox worker imports them once, not every evaluation.)"""
from evoforge.tasks.families.singlecell import evaluate_synthetic


def evaluate(program_path):
    return evaluate_synthetic(program_path)
