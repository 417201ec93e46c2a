"""Pictures: the best object of a task (by its ``object_kind``) and the search history.

Matplotlib runs with the Agg backend only (figures are built without pyplot), so this works
on headless machines and inside a running search.
"""
from __future__ import annotations

from evoforge.viz._canvas import VizError
from evoforge.viz.history import plot_history
from evoforge.viz.objects import DRAWERS, draw_object

KINDS: tuple[str, ...] = tuple(DRAWERS)

__all__ = ["DRAWERS", "KINDS", "VizError", "draw_object", "plot_history"]
