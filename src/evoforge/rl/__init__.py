"""Test-time RL: rewards -> advantages -> clipped, importance-corrected policy gradient.

Importing this package needs no torch; a learner loads torch/transformers/peft lazily.
Learners are picked from LEARNERS by ``learner_name`` (hf: the hf backend's own model trained
in place; vllm: an own copy, adapters pushed to a vLLM server).
"""
from __future__ import annotations

from typing import Any

from evoforge.registry import Registry
from evoforge.rl.advantages import entropic, entropic_adaptive, grpo, group_advantages, solve_beta
from evoforge.rl.config import Learner, RLError, Rollout, TrainConfig, train_config

__all__ = [
    "LEARNERS", "Learner", "RLError", "Rollout", "TrainConfig", "entropic", "entropic_adaptive", "grpo",
    "group_advantages", "learner_name", "make_learner", "solve_beta", "train_config",
]

LEARNERS: Registry[Learner] = Registry("learner")


def learner_name(cfg: TrainConfig, backend: Any) -> str:
    """Which learner serves this backend: the hf backend's model is trained in place; any other
    backend (OpenAI-compatible, pointed at vLLM) needs ``cfg.vllm_url``."""
    if getattr(backend, "name", None) == "hf":
        if cfg.vllm_url:
            raise RLError("vllm_url is for an openai backend serving through vLLM, not for the hf backend")
        return "hf"
    if cfg.vllm_url:
        return "vllm"
    raise RLError(
        f"--train needs the hf backend, or an openai backend on a vLLM server with train.vllm_url "
        f"(got backend {getattr(backend, 'name', type(backend).__name__)!r})"
    )


@LEARNERS.register("hf")
def _hf_learner(cfg: TrainConfig, backend: Any) -> Learner:
    from evoforge.rl.learner import HFLearner

    if cfg.adapter and type(backend.model).__name__ != "PeftModel" and not cfg.full_finetune:
        backend.load_adapter(cfg.adapter)
    learner = HFLearner(cfg, backend.model, backend.tokenizer, backend.device, backend)
    backend.model = learner.model  # the sampler samples from the policy being trained
    return learner


@LEARNERS.register("vllm")
def _vllm_learner(cfg: TrainConfig, backend: Any) -> Learner:
    from evoforge.rl.vllm import VLLMLearner

    if getattr(backend, "logprobs", True) is False:  # without token ids every rollout would be skipped
        backend.logprobs = True
    return VLLMLearner(cfg, backend)


def make_learner(cfg: TrainConfig, backend: Any) -> Learner:
    """The learner for this backend (see ``learner_name``)."""
    return LEARNERS.get(learner_name(cfg, backend))(cfg, backend)
