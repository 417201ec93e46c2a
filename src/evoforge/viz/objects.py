"""``draw_object``: one PNG of a task's object, chosen by the task's ``object_kind``."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

from matplotlib.figure import Figure

from evoforge.viz import geometry, sequences
from evoforge.viz._canvas import new_figure, save, text_card

log = logging.getLogger(__name__)

Drawer = Callable[[Figure, Any], None]

DRAWERS: dict[str, Drawer] = {
    "circles": geometry.draw_circles,
    "circles_rect": geometry.draw_circles_rect,
    "step_function": sequences.draw_step_function,
    "overlap_step_function": sequences.draw_overlap_step_function,
    "matrix": sequences.draw_matrix,
    "points2d": geometry.draw_points2d,
    "points3d": geometry.draw_points3d,
    "points_triangle": geometry.draw_points_triangle,
    "integer_vectors": geometry.draw_integer_vectors,
    "integer_set": sequences.draw_integer_set,
    "generic": sequences.draw_generic,
}


def _points_by_dimension(fig: Figure, obj: Any) -> None:
    """"points" without a dimension: 3-D axes for rows of 3, a plane otherwise."""
    rows = obj.get("points", obj) if isinstance(obj, dict) else obj
    three = isinstance(rows, list) and bool(rows) and isinstance(rows[0], list) and len(rows[0]) == 3
    (geometry.draw_points3d if three else geometry.draw_points2d)(fig, rows)


DRAWERS["points"] = _points_by_dimension


def draw_object(kind: str, obj: Any, path: Path, title: str = "") -> None:
    """Write a PNG picture of ``obj`` (JSON-decoded) drawn as ``kind`` to ``path``.

    Unknown kinds use the generic drawer; an object that cannot be drawn gets a card
    "cannot draw: <reason>" instead of an exception, since pictures are regenerated while
    a run goes and must never stop it. Only a failure to write ``path`` raises (OSError).
    """
    fig = new_figure()
    drawer = DRAWERS.get(kind, sequences.draw_generic)
    try:
        drawer(fig, obj)
        if title:
            fig.suptitle(title, fontsize=11)
    except Exception as exc:  # noqa: BLE001 - any malformed object becomes a card, by design
        reason = str(exc) or type(exc).__name__
        log.debug("cannot draw %s object: %s", kind, reason)
        text_card(fig, f"cannot draw: {reason}", f"{title}\nkind: {kind}\nobject: {_preview(obj)}")
    save(fig, path)


def _preview(obj: Any, limit: int = 300) -> str:
    try:
        text = repr(obj)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not break the card
        text = f"<{type(obj).__name__}>"
    return text if len(text) <= limit else text[:limit] + " ..."
