"""Exact verifiers of the built-in tasks. Each ``verify_*`` takes the JSON-decoded object a
program returned (or a numpy array) and gives a :class:`~evoforge.tasks.base.Verdict`; it never
trusts a reported value and never raises on bad input."""
from __future__ import annotations
