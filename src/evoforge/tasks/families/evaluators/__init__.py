"""Evaluator stubs of the family tasks: each runs in the sandbox child and calls its family module."""
