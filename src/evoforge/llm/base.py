"""The model contract: B prompts in, n responses per prompt out.

A backend is anything that writes text for a prompt: the model-free builtin mutation
operator, an OpenAI-compatible server, a local Hugging Face model, or a scripted replay.
"""
from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from evoforge.registry import Registry


@dataclass
class Prompt:
    text: str  # the user message
    system: str = ""
    # Structured view of what the text shows, for operators that read code, not prose
    # (the builtin mutator), and for the learner (which needs nothing but the text).
    parent_code: str = ""
    inspirations: list[str] = field(default_factory=list)
    partner_code: str | None = None  # crossover partner (PACEvolve collaborative evolution)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Response:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    token_ids: list[int] | None = None  # completion token ids (for RL)
    logprobs: list[float] | None = None  # sampler log-probs of token_ids (for RL)
    prompt_token_ids: list[int] | None = None
    error: str = ""  # set when the backend failed to produce this response
    latency: float = 0.0


@dataclass(frozen=True)
class GenerationConfig:
    n: int = 16
    temperature: float = 1.0
    max_tokens: int = 16384
    seed: int | None = None


class Backend(ABC):
    """Generates ``cfg.n`` responses for each prompt; result[i][j] is response j of prompt i."""

    name: str = "backend"

    @abstractmethod
    def generate(self, prompts: list[Prompt], cfg: GenerationConfig) -> list[list[Response]]: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


def sample_seed(cfg: GenerationConfig, backend_seed: int | None, calls: int, i: int) -> int:
    """The sampling seed of prompt ``i`` of a call, for backends that sample themselves (hf,
    llamacpp). The engine's per-step ``cfg.seed`` alone decides the draw, so a resumed run samples
    what the uninterrupted one did; without it the backend's own seed counts its calls; with
    neither, a fresh random seed."""
    if cfg.seed is not None:
        return cfg.seed * 1_000_003 + i
    if backend_seed is not None:
        return backend_seed * 1_000_003 + calls * 7919 + i
    return random.randrange(2**62)


BACKENDS: Registry[Backend] = Registry("backend")


class BackendError(RuntimeError):
    """A backend cannot work at all (server unreachable, bad configuration): one printable line."""
