"""What a person finds in a run directory: the best program, its object, pictures, a summary."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from evoforge.database.base import Program
from evoforge.database import sanitize
from evoforge.database.store import RunStore
from evoforge.engine.stages import remeasure
from evoforge.tasks.base import Direction, Task

log = logging.getLogger("evoforge")

BEST_PROGRAM = "best_program.py"
BEST_OBJECT = "best_object.json"
BEST_PICTURE = "best.png"
HISTORY_PICTURE = "history.png"


def write_best(run_dir: Path, task: Task, program: Program, obj: Any) -> None:
    """Atomically replace the best program and its object (a reader never sees half a file)."""
    _atomic_write(run_dir / BEST_PROGRAM, program.code)
    payload = {"task": task.name, "score": program.score, "program_id": program.id, "step": program.step,
               "metrics": program.metrics, "data": obj}
    _atomic_write(run_dir / BEST_OBJECT, sanitize.dumps(payload))  # huge ints, surrogates: never raises


def refresh(run_dir: Path, task: Task, store: RunStore) -> None:
    """Redraw the best object and the score curve; a drawing problem never stops a run."""
    try:
        from evoforge.viz import draw_object, plot_history
    except ImportError:  # pragma: no cover - viz is part of the core install
        return
    try:
        best_path = run_dir / BEST_OBJECT
        if best_path.is_file():
            best = json.loads(best_path.read_text())
            if best.get("data") is not None:
                draw_object(task.object_kind, best["data"], run_dir / BEST_PICTURE,
                            title=f"{task.name}: {best['score']:.10g}")
        evals, bests, scores = curve(store, task.direction.value)
        if evals:
            plot_history(evals, bests, run_dir / HISTORY_PICTURE, title=task.name,
                         direction=task.direction.value, target=task.target, scores=scores)
    except Exception as exc:  # noqa: BLE001
        log.warning("could not draw pictures: %s", exc)


def curve(store: RunStore, direction: str) -> tuple[list[int], list[float], list[float | None]]:
    """Per sandbox evaluation: its number, the best score so far, its own score (None if invalid)."""
    evals: list[int] = []
    bests: list[float] = []
    scores: list[float | None] = []
    best = None
    better = Direction(direction).better
    for n, (_, score, cls) in enumerate(store.score_history(), start=1):
        valid = cls == "evaluated" and score is not None
        if valid and (best is None or better(score, best)):
            best = score
        if best is not None:
            evals.append(n)
            bests.append(best)
            scores.append(score if valid else None)
    return evals, bests, scores


def improvements(store: RunStore, direction: str) -> list[tuple[int, float]]:
    """(evaluation number, new best score) at each improvement of the search."""
    evals, bests, _ = curve(store, direction)
    return [(e, b) for k, (e, b) in enumerate(zip(evals, bests)) if k == 0 or b != bests[k - 1]]


def summary(store: RunStore, task: Task | None = None) -> dict[str, Any]:
    last = store.last_step()
    classes = store.class_counts()
    best_id = last["best_id"] if last else None
    best = store.child_detail(best_id) if best_id is not None else None
    seed_id = store.get_meta("seed_id")
    seed = store.child_detail(seed_id) if seed_id is not None else None
    return {
        "task": store.get_meta("task"),
        "direction": store.get_meta("direction"),
        "best_score": best["score"] if best else None,
        "best_program_id": best_id,
        "best_step": best["step"] if best else None,
        "initial_score": seed["score"] if seed else None,
        "target": task.target if task is not None else store.get_meta("target"),
        "evaluated": remeasure.budget_spent(store),
        "remeasured": remeasure.count(store),  # of those, re-measurements of candidates for a new best (noisy rewards)
        "children": store.count_children(),
        "steps": last["step"] if last else 0,
        "batch": _batch(store),
        "classes": classes,
    }


def _batch(store: RunStore) -> str | None:
    """The run's resolved batch shape, as stored when it started (e.g. "8 x 4, lockstep")."""
    r = store.get_meta("resolved")
    return f"{r['batch_size']} x {r['n']}, {r['pipeline']}" if r else None


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8", errors="backslashreplace")  # a model's lone surrogates
    tmp.replace(path)
