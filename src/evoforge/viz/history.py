"""The search picture: best score against evaluations, all valid scores, the target."""
from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from evoforge.viz._canvas import VizError, new_figure, save, text_card

log = logging.getLogger(__name__)


def _finite(values: list[float | None]) -> np.ndarray:
    return np.array([v if v is not None and math.isfinite(v) else np.nan for v in values], dtype=float)


def plot_history(evaluations: list[int], best_scores: list[float], path: Path, title: str = "",
                 direction: str = "max", target: float | None = None,
                 scores: list[float | None] | None = None) -> None:
    """Write a PNG of the best score so far (step line) against the evaluation count.

    ``scores`` (optional, same length as ``evaluations``) are each evaluation's own score;
    ``None``/NaN marks an invalid one, which is not drawn. Scores of another length cannot be
    placed on the axis: they are left out (logged), the rest is still drawn. ``target`` is
    drawn dashed.
    """
    if direction not in ("max", "min"):
        raise VizError(f"direction must be 'max' or 'min', not {direction!r}")
    if len(evaluations) != len(best_scores):
        raise VizError(f"{len(evaluations)} evaluations but {len(best_scores)} best scores")
    if scores is not None and len(scores) != len(evaluations):
        log.warning("scatter left out: %d scores for %d evaluations (pass None for invalid ones)",
                    len(scores), len(evaluations))
        scores = None
    fig = new_figure(7.0, 4.5)
    xs = np.asarray(evaluations, dtype=float)
    best = _finite(list(best_scores))
    if not np.any(np.isfinite(best)):
        text_card(fig, title or "search history", "no valid evaluation yet")
        save(fig, path)
        return
    ax = fig.add_subplot(1, 1, 1)
    focus = [best[np.isfinite(best)]]
    if scores is not None:
        each = _finite(list(scores))
        ok = np.isfinite(each)
        ax.scatter(xs[ok], each[ok], s=6, color="tab:gray", alpha=0.4, label="valid scores", zorder=1)
        if ok.any():  # show the bulk of the cloud without letting a few outliers flatten the best line
            bulk = np.percentile(each[ok], 10 if direction == "max" else 90)
            focus.append(np.array([bulk]))
    ax.step(xs, best, where="post", color="tab:blue", lw=2, label="best so far", zorder=3)
    if target is not None and math.isfinite(target):
        ax.axhline(target, color="tab:red", ls="--", lw=1.2, label=f"target {target:.10g}")
        focus.append(np.array([target]))
    lo, hi = float(min(f.min() for f in focus)), float(max(f.max() for f in focus))
    pad = 0.05 * (hi - lo) if hi > lo else 0.05 * max(abs(hi), 1.0)
    ax.set_ylim(lo - pad, hi + pad)
    final = best[np.isfinite(best)][-1]
    better = "higher" if direction == "max" else "lower"
    ax.set_title(f"{title}\nbest {final:.10g} after {int(xs[-1])} evaluations ({better} is better)"
                 if title else f"best {final:.10g} after {int(xs[-1])} evaluations ({better} is better)",
                 fontsize=9)
    ax.set_xlabel("evaluations")
    ax.set_ylabel("score")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right" if direction == "max" else "upper right", fontsize=8)
    save(fig, path)
