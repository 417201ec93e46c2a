"""The stages of one engine step, in their declared order (see base.py for the contract)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from evoforge.engine.stages.base import Pipeline, Stage, StepState
from evoforge.engine.stages.commit import CommitStage
from evoforge.engine.stages.evaluate import CheckStage, EvaluateStage, FeedStage
from evoforge.engine.stages.front import GenerateStage, PromptStage, SelectStage
from evoforge.engine.stages.learn import LearnStage

if TYPE_CHECKING:
    from evoforge.engine.loop import Engine

__all__ = ["Pipeline", "Stage", "StepState", "default_pipeline"]


def default_pipeline(engine: "Engine") -> Pipeline:
    """select -> (memory) -> prompt -> generate | check -> evaluate -> feed | (memory-update) -> (learn) -> commit."""
    tail: list[Stage] = [LearnStage()] if engine.learner is not None else []
    pipeline = Pipeline(
        front=[SelectStage(), PromptStage(), GenerateStage()],
        back=[CheckStage(), EvaluateStage(), FeedStage()],
        tail=[*tail, CommitStage()],
    )
    if engine.cfg.memory.enabled:  # PACEvolve's idea memory: memory after select, memory-update before learn
        from evoforge.engine.stages.memory import add_memory_stages

        add_memory_stages(pipeline, engine.cfg.memory)
    return pipeline
