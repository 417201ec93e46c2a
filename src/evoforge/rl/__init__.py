"""Test-time RL: rewards -> advantages -> clipped, importance-corrected policy gradient.

Importing this package needs no torch; ``make_learner`` loads torch/transformers/peft lazily.
"""
from __future__ import annotations

from typing import Any

from evoforge.rl.advantages import entropic, entropic_adaptive, grpo, group_advantages, solve_beta
from evoforge.rl.config import Learner, RLError, Rollout, TrainConfig, train_config

__all__ = [
    "Learner", "RLError", "Rollout", "TrainConfig", "entropic", "entropic_adaptive", "grpo",
    "group_advantages", "make_learner", "solve_beta", "train_config",
]


def make_learner(cfg: TrainConfig, backend: Any) -> Learner:
    """The learner for this backend: the hf backend's own model is trained in place; any other
    backend (OpenAI-compatible, pointed at vLLM) needs ``cfg.vllm_url`` and gets adapters pushed."""
    from evoforge.llm.hf import HFBackend

    if isinstance(backend, HFBackend):
        from evoforge.rl.learner import HFLearner

        if cfg.vllm_url:
            raise RLError("vllm_url is for an openai backend serving through vLLM, not for the hf backend")
        if cfg.adapter and type(backend.model).__name__ != "PeftModel" and not cfg.full_finetune:
            backend.load_adapter(cfg.adapter)
        learner = HFLearner(cfg, backend.model, backend.tokenizer, backend.device, backend)
        backend.model = learner.model  # the sampler samples from the policy being trained
        return learner
    if cfg.vllm_url:
        from evoforge.rl.vllm import VLLMLearner

        return VLLMLearner(cfg, backend)
    raise RLError(
        f"--train needs the hf backend, or an openai backend on a vLLM server with train.vllm_url "
        f"(got backend {getattr(backend, 'name', type(backend).__name__)!r})"
    )
