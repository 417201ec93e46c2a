"""A folder put at the END of an evaluator's sys.path, so ``import openevolve`` finds this shim
only when the real OpenEvolve is not installed (an installed package always wins)."""
