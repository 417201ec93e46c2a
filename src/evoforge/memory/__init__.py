"""PACEvolve's hierarchical idea memory: the pool (pool.py), the model's prompts and answer parsers
(protocol.py, templates/), one step's operations (planner.py) and its options (config.py).

It knows nothing of the engine; the two stages that run it in a step live in
engine/stages/memory.py. docs/MEMORY.md describes the method and the defaults.
"""
from __future__ import annotations

from evoforge.memory.config import MemoryConfig
from evoforge.memory.pool import Hypothesis, Idea, IdeaPool

__all__ = ["Hypothesis", "Idea", "IdeaPool", "MemoryConfig"]
