"""The step's commit point: its figures, the rng state and (now and then) every stage's state
in one transaction; then what a person sees (best files, pictures, the display)."""
from __future__ import annotations

import time
from typing import Any

from evoforge.engine import outputs
from evoforge.engine.errors import EngineError
from evoforge.engine.stages.base import Stage, StepState


class CommitStage(Stage):
    """Owns the run's child counts and the snapshot cadence. Replay checks that the redone
    step left the random state where the run left it (a diverging replay stops here)."""

    name = "commit"

    def bind(self, engine: Any) -> None:
        super().bind(engine)
        self.children = 0
        self.class_totals: dict[str, int] = {}
        self.snapshot_step, self._snapshot_at, self._snapshot_cost = -1, time.monotonic(), 0.0
        self._pictures_at, self._pictures_cost = time.monotonic(), 0.0  # the first pictures after one interval

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        store = self.engine.store
        last = store.last_step()
        up_to = last["step"] if last else 0
        self.children = store.count_children(up_to_step=up_to)
        self.class_totals = store.class_counts(children_up_to_step=up_to)
        snap = store.snapshot()
        self.snapshot_step = snap[0] if snap else -1

    def replay(self, s: StepState) -> None:
        e = self.engine
        if e.rng.bit_generator.state != e.store.step_row(s.k)["rng_state"]:
            raise EngineError(f"resume: replaying step {s.k} left the selector's random state elsewhere than the run")

    def run(self, s: StepState) -> None:
        e = self.engine
        cfg = e.cfg
        evaluate = e.pipeline.get("evaluate")
        best = evaluate.best  # type: ignore[attr-defined]
        counts: dict[str, int] = {}
        for ocs in s.outcomes.values():
            for oc in ocs:
                counts[oc.child_class] = counts.get(oc.child_class, 0) + 1
        seconds = time.monotonic() - s.extra.get("started", time.monotonic())
        # At least snapshot_interval apart, and 50x the last snapshot's cost apart (<= 2 % of the
        # run: map-elites at 100 000 programs takes 0.75 s to serialise).
        snapshot = time.monotonic() - self._snapshot_at >= max(cfg.snapshot_interval, 50 * self._snapshot_cost)
        t_snap = time.monotonic()
        info = {"shape": [s.n_picks, s.n], "lag": s.lag, **s.extra.get("pipeline", {})}
        e.store.finish_step(
            s.k, e.rng.bit_generator.state, e.stage_states(s.k) if snapshot else None,
            best_id=best.id if best else None, best_score=best.score if best else None,
            evaluated=evaluate.evaluated, children=len(s.rows), seconds=seconds,  # type: ignore[attr-defined]
            train_metrics=s.metrics, info=info,
        )
        if snapshot:
            self.snapshot_step, self._snapshot_at = s.k, time.monotonic()
            self._snapshot_cost = self._snapshot_at - t_snap
        e.store.drop_rl_tokens(s.k)
        self.children += len(s.rows)
        if s.improved and best is not None:
            outputs.write_best(e.run_dir, e.task, best, e.store.get_object(best.id))
        if time.monotonic() - self._pictures_at >= max(cfg.picture_interval, 20 * self._pictures_cost):
            t_pic = time.monotonic()
            outputs.refresh(e.run_dir, e.task, e.store)
            self._pictures_at = time.monotonic()
            self._pictures_cost = self._pictures_at - t_pic  # pictures take <= 5 % of the loop
        for cls, c in counts.items():
            self.class_totals[cls] = self.class_totals.get(cls, 0) + c
        s.extra["stats"] = dict(counts=counts, seconds=seconds)

    def finish(self) -> None:
        """The last step's state is snapshotted, so a resume of the finished run replays nothing."""
        e = self.engine
        last = e.store.last_step()
        if last is not None and self.snapshot_step != last["step"] and not e.store.readonly:
            e.store.save_snapshot(last["step"], e.stage_states(last["step"]))
            self.snapshot_step = last["step"]
