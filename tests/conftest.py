"""Shared fixtures."""
from __future__ import annotations

import pytest

from evoforge.sandbox import SandboxPool


@pytest.fixture(scope="module")
def pool():
    """A two-worker sandbox pool per test module (a module may define its own ``pool``)."""
    with SandboxPool(workers=2) as p:
        yield p
