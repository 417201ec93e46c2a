"""Glue between the loop and a learner: groups of rollouts in, adapter checkpoints out.

The program database is the RL environment (ThetaEvolve's dynamic environment): each prompt's
n responses form one group, rewarded by the penalty ladder or the (optionally shaped) score.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evoforge.llm.base import Prompt, Response
from evoforge.rewards import ChildClass

if TYPE_CHECKING:
    from evoforge.database.base import ChildOutcome
    from evoforge.database.store import ChildRow
    from evoforge.engine.loop import Engine

log = logging.getLogger("evoforge")


def build_groups(engine: "Engine", k: int, prompts: list[Prompt], by_pick: dict[int, list["ChildRow"]],
                 outcomes: dict[int, list["ChildOutcome"]], fresh: list[list[Response]] | None) -> list[list[Any]]:
    from evoforge.rl import Rollout
    from evoforge.rewards.shaping import reward_for

    stored = engine.store.rl_tokens(k) if fresh is None else {}
    shaping = getattr(engine.learner, "shaping", None)
    groups = []
    for i, prompt in enumerate(prompts):
        group = []
        for j, (row, oc) in enumerate(zip(by_pick[i], outcomes[i])):
            resp = fresh[i][j] if fresh is not None else _response_from_store(row, stored.get(row.id))
            if resp is None or resp.token_ids is None:
                continue  # no tokens (backend error, or resumed without them): nothing to learn from
            score = oc.reward if oc.child_class == ChildClass.EVALUATED.value else None
            reward = reward_for(ChildClass(oc.child_class), score, engine.task, shaping)
            group.append(Rollout(prompt=prompt, response=resp, reward=reward))
        if len(group) >= 2:
            groups.append(group)
    return groups


def _response_from_store(row: "ChildRow", tokens: dict[str, Any] | None) -> Response | None:
    if tokens is None:
        return None
    return Response(text=row.response or "", token_ids=tokens["token_ids"], logprobs=tokens["logprobs"],
                    prompt_token_ids=tokens.get("prompt_token_ids"))


def checkpoint_dir(run_dir: Path) -> Path:
    return run_dir / "checkpoints"


def checkpoint(engine: "Engine", k: int) -> None:
    every = int(getattr(getattr(engine.learner, "cfg", None), "checkpoint_every", 1) or 1)
    if k % every == 0:
        path = checkpoint_dir(engine.run_dir) / f"step_{k}"
        engine.learner.save(path)
        log.info("saved learner checkpoint %s", path)


def resume_learner(engine: "Engine") -> None:
    root = checkpoint_dir(engine.run_dir)
    steps = sorted(
        (int(m.group(1)), p) for p in root.glob("step_*") if (m := re.fullmatch(r"step_(\d+)", p.name))
    ) if root.is_dir() else []
    if steps:
        engine.learner.load(steps[-1][1])
        log.info("learner resumed from %s", steps[-1][1])
