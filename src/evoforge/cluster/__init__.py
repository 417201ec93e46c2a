"""Scale-out: evaluations on a Ray cluster (``--executor ray``); see docs/SCALING.md.

Ray is an optional extra (``pip install 'evoforge[ray]'``); this package imports it only when a
Ray executor is made.
"""
from __future__ import annotations

from evoforge.cluster.ray_executor import INSTALL_HINT, RayExecutor, RayUnavailable
from evoforge.sandbox.base import EXECUTORS

EXECUTORS.register("ray")(RayExecutor)

__all__ = ["INSTALL_HINT", "RayExecutor", "RayUnavailable"]
