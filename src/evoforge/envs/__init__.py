"""EvoEnv: the policy writes verifiable environments, they are admitted in five layers, and
the policy trains on them as generator and solver (docs/EVOENV.md).

Importing this package is cheap (the contract only): candidate files import it in the sandbox.
"""
from __future__ import annotations

from evoforge.envs.base import VerifiableEnvironment

__all__ = ["VerifiableEnvironment"]
