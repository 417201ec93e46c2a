"""Test-time learning as a stage: one group per prompt, one learner update, the adapter saved
with the step's commit.

The program database is the RL environment (ThetaEvolve's dynamic environment): each prompt's
n responses form one group, rewarded by the penalty ladder or the (optionally shaped) score.

Nothing trained is lost: after every update the learner is saved to
``checkpoints/step_K`` (written to a temporary directory, then renamed: a kill leaves either
the whole checkpoint or none), before the step's commit. The last two are kept (a kill between
the save and the commit resumes from the one before), and every ``checkpoint_every``-th for
the user; ``RUN/adapter`` always points at the latest (a symlink, replaced atomically). Resume and replay load the
checkpoint of the step they reach, so the next generation already samples from it.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

from evoforge.engine.stages.base import Stage, StepState
from evoforge.llm.base import Response
from evoforge.rewards import ChildClass

log = logging.getLogger("evoforge")

FINAL = "adapter"  # the run directory's final learner checkpoint


def checkpoint_dir(run_dir: Path) -> Path:
    return run_dir / "checkpoints"


class LearnStage(Stage):
    name = "learn"

    def bind(self, engine: Any) -> None:
        super().bind(engine)
        self.root = checkpoint_dir(engine.run_dir)
        self.saved: int | None = None  # the step of the learner's state on disk and in memory

    # -- state -----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"step": self.saved}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        if state is None:  # a run stored before this stage existed: its latest checkpoint, as then
            have = self._checkpoints()
            if have:
                self._load(have[-1])
        elif state.get("step") is not None:
            self._load(state["step"])

    def replay(self, s: StepState) -> None:
        # the checkpoint saved with this step's commit; older ones are pruned (the last finished
        # step's always exists), so a replay through several steps loads only what is there
        if (self.root / f"step_{s.k}").is_dir():
            self._load(s.k)

    # -- live --------------------------------------------------------------------------------
    def run(self, s: StepState) -> None:
        learner = self.engine.learner
        groups = self.groups(s)
        if groups:
            metrics = learner.update(groups)
            s.metrics = {key: float(v) for key, v in metrics.items()}
            s.metrics["policy_lag"] = float(s.lag)  # steps between the sampling and the learning policy
        self._save(s.k)

    def finish(self) -> None:
        if self.saved is not None:
            self._point_final(self.saved)

    def _point_final(self, k: int) -> None:
        """RUN/adapter -> checkpoints/step_K, replaced atomically with every save: a finished,
        stopped or killed run always shows its latest learner there."""
        final = self.engine.run_dir / FINAL
        if final.is_dir() and not final.is_symlink():  # a copy left by an earlier version
            shutil.rmtree(final)
        tmp = final.with_name(final.name + ".tmp")
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        tmp.symlink_to(Path(self.root.name) / f"step_{k}", target_is_directory=True)
        os.replace(tmp, final)

    def _load(self, want: int) -> None:
        if want == self.saved:
            return
        have = self._checkpoints()
        usable = [k for k in have if k <= want]
        if not usable:
            if want > 0 and have:
                log.warning("no learner checkpoint at or before step %d: training restarts from the base model", want)
            return
        k = usable[-1]
        if k != want:
            log.warning("learner checkpoint of step %d missing (a run stored by an older evoforge): "
                        "resuming from step %d, the updates in between are lost", want, k)
        self.engine.learner.load(self.root / f"step_{k}")
        self.saved = k
        log.info("learner resumed from %s", self.root / f"step_{k}")

    def _save(self, k: int) -> None:
        tmp = self.root / f".step_{k}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        self.engine.learner.save(tmp)
        final = self.root / f"step_{k}"
        shutil.rmtree(final, ignore_errors=True)  # a step redone after a kill between save and commit
        tmp.rename(final)
        previous, self.saved = self.saved, k
        self._point_final(k)
        every = int(getattr(getattr(self.engine.learner, "cfg", None), "checkpoint_every", 0) or 0)
        for old in self._checkpoints():
            if old < k and old != previous and not (every and old % every == 0):
                shutil.rmtree(self.root / f"step_{old}", ignore_errors=True)

    def _checkpoints(self) -> list[int]:
        if not self.root.is_dir():
            return []
        return sorted(int(m.group(1)) for p in self.root.iterdir() if (m := re.fullmatch(r"step_(\d+)", p.name)))

    # -- rollouts ------------------------------------------------------------------------------
    def groups(self, s: StepState) -> list[list[Any]]:
        from evoforge.rewards.shaping import reward_for
        from evoforge.rl import Rollout

        e = self.engine
        stored = e.store.rl_tokens(s.k) if s.responses is None else {}
        shaping = getattr(e.learner, "shaping", None)
        groups = []
        for i, prompt in enumerate(s.prompts):
            group = []
            for j, (row, oc) in enumerate(zip(s.by_pick.get(i, []), s.outcomes.get(i, []))):
                resp = s.responses[i][j] if s.responses is not None else _response_from_store(row, stored.get(row.id))
                if resp is None or resp.token_ids is None:
                    continue  # no tokens (backend error, or resumed without them): nothing to learn from
                score = oc.reward if oc.child_class == ChildClass.EVALUATED.value else None
                reward = reward_for(ChildClass(oc.child_class), score, e.task, shaping)
                group.append(Rollout(prompt=prompt, response=resp, reward=reward))
            if len(group) >= 2:
                groups.append(group)
        return groups


def _response_from_store(row: Any, tokens: dict[str, Any] | None) -> Response | None:
    if tokens is None:
        return None
    return Response(text=row.response or "", token_ids=tokens["token_ids"], logprobs=tokens["logprobs"],
                    prompt_token_ids=tokens.get("prompt_token_ids"))
