"""Figure plumbing shared by the drawers: Agg-only figures, saving, and the text card.

We build ``matplotlib.figure.Figure`` objects directly on an Agg canvas instead of using
pyplot, so nothing ever needs a display and no global figure state leaks between the many
pictures a run regenerates (pyplot keeps every figure alive until closed).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 100


class VizError(ValueError):
    """Bad arguments to a plotting function (not a bad object: those get a card)."""


def new_figure(width: float = 6.0, height: float = 6.0) -> Figure:
    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    # fixed margins instead of tight_layout, which costs ~0.1 s per call
    fig.subplots_adjust(left=0.12, right=0.95, bottom=0.09, top=0.85)
    return fig


def save(fig: Figure, path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=DPI)


def text_card(fig: Figure, heading: str, body: str = "") -> None:
    """Replace whatever is on ``fig`` with a plain card of text."""
    fig.clear()
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_axis_off()
    ax.text(0.5, 0.62, "\n".join(textwrap.wrap(heading, 60)[:4]), ha="center", va="center",
            fontsize=12, weight="bold")
    if body:
        lines = [ln for part in body.splitlines() for ln in (textwrap.wrap(part, 80) or [""])]
        ax.text(0.5, 0.45, "\n".join(lines[:12]), ha="center", va="top", fontsize=8,
                family="monospace")
