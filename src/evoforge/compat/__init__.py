"""Compatibility with other frameworks' files (OpenEvolve's config.yaml and evaluators).

Pure dict-to-dict mapping: nothing here runs a model or a program.
"""
