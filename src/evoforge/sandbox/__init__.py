"""Isolated execution of generated programs: see docs/SANDBOX.md for what it does and does not protect against."""
from __future__ import annotations

from evoforge.sandbox.base import EvalRequest, Executor, SandboxResult, Status
from evoforge.sandbox.pool import SandboxError, SandboxPool, run_one

__all__ = ["EvalRequest", "Executor", "SandboxError", "SandboxPool", "SandboxResult", "Status", "run_one"]
