"""evoforge's stand-in for OpenEvolve, for evaluators only: ``openevolve.evaluation_result``.

Only the evaluator-facing part of OpenEvolve (its EvaluationResult) is provided; it is on the
evaluator's path when the real ``openevolve`` package is absent. See docs/MIGRATING.md.
"""
__version__ = "0.0.0+evoforge-shim"
