"""The RL contract with the engine: TrainConfig, Rollout, Learner. No torch import here,
so the engine and the CLI can read a train config on a machine without the ``rl`` extra."""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evoforge.llm.base import Prompt, Response
from evoforge.tasks.base import Shaping


class RLError(RuntimeError):
    """A training problem the user can fix (missing extra, bad model path, server refused)."""


class TrainConfig(BaseModel):
    """Test-time RL settings. Defaults: ThetaEvolve (GRPO, lr 1e-6, wd 0.1, eps 0.2/0.28, no
    KL, no entropy bonus) with TTT-Discover's LoRA rank 32."""

    model_config = ConfigDict(extra="forbid")

    estimator: Literal["grpo", "entropic", "entropic-adaptive"] = Field(
        "grpo", description="advantage estimator over each group of n responses"
    )
    model: str = Field("smollm2", description="local HF model dir, a .gguf file, or 'smollm2'")
    adapter: Optional[str] = Field(None, description="LoRA adapter dir to start from (a checkpoint)")
    lora_rank: int = Field(32, gt=0)
    lora_alpha: Optional[float] = Field(None, gt=0, description="LoRA alpha (default: = rank)")
    lora_target: str = Field("all-linear", description="peft target_modules ('all-linear' or a,b,c)")
    full_finetune: bool = Field(False, description="train every weight instead of a LoRA adapter")
    lr: float = Field(1e-6, gt=0)
    weight_decay: float = Field(0.1, ge=0)
    grad_clip: Optional[float] = Field(1.0, gt=0, description="max grad norm (None: no clipping)")
    eps_low: float = Field(0.2, ge=0, description="ratio clip below: 1 - eps_low")
    eps_high: float = Field(0.28, ge=0, description="ratio clip above: 1 + eps_high")
    tis_cap: Optional[float] = Field(
        2.0, gt=0, description="truncated importance sampling cap on pi_learner/pi_sampler (None: off)"
    )
    kl_lambda: float = Field(0.0, ge=0, description="TTT-Discover KL-to-initial-policy weight (0.1 in the paper)")
    beta: float = Field(2.0, ge=0, description="fixed beta of the 'entropic' estimator")
    kl_budget: float = Field(math.log(2), gt=0, description="gamma of 'entropic-adaptive'")
    normalize_std: bool = Field(False, description="grpo: divide by the group std")
    optimizer_steps: int = Field(1, gt=0, description="optimiser steps on each batch")
    micro_batch_size: int = Field(8, gt=0, description="sequences per forward/backward pass")
    checkpoint_every: int = Field(10, gt=0, description="save an adapter checkpoint every K steps")
    shaping_lower: Optional[float] = None
    shaping_upper: Optional[float] = None
    shaping_alpha: Optional[float] = Field(None, gt=0)
    shaping_k: Optional[float] = Field(None, gt=0)
    sampling_temperature: Optional[float] = Field(
        None, gt=0, description="temperature the sampler used (default: the hf backend's last one, else 1)"
    )
    vllm_url: Optional[str] = Field(None, description="vLLM server (http://host:port[/v1]) to load adapters into")
    vllm_sync_dir: Optional[str] = Field(
        None, description="where adapters are written for the server to read (default: a temp dir)"
    )
    vllm_api_key_env: str = Field("OPENAI_API_KEY", description="env var with the vLLM server's key, if any")
    device: str = Field("auto", description="auto | cpu | cuda | cuda:N")
    dtype: str = Field("auto", description="auto (bf16 on GPU, fp32 on CPU) | float32 | bfloat16 | float16")
    gradient_checkpointing: bool = False
    seed: int = 0

    @model_validator(mode="after")
    def _check(self) -> "TrainConfig":
        if self.eps_low >= 1:
            raise ValueError("eps_low must be < 1 (the ratio is clipped below at 1 - eps_low)")
        band = (self.shaping_lower, self.shaping_upper)
        if (band[0] is None) != (band[1] is None):
            raise ValueError("shaping_lower and shaping_upper go together")
        if band[0] is None and (self.shaping_alpha is not None or self.shaping_k is not None):
            raise ValueError("shaping_alpha/shaping_k need the band too (shaping_lower and shaping_upper)")
        if band[0] is not None and band[1] is not None and band[1] <= band[0]:
            raise ValueError(f"shaping_upper must be > shaping_lower, got [{band[0]}, {band[1]}]")
        if self.full_finetune and self.vllm_url:
            raise ValueError("full_finetune with vllm_url is not supported: the vLLM path syncs LoRA adapters")
        return self


    def shaping(self) -> Optional["Shaping"]:
        """The explicit reward band of this config, or None (reward_for then uses the task's)."""
        if self.shaping_lower is None or self.shaping_upper is None:
            return None
        return Shaping(
            lower=self.shaping_lower,
            upper=self.shaping_upper,
            alpha=self.shaping_alpha if self.shaping_alpha is not None else 1.0,
            k=self.shaping_k if self.shaping_k is not None else 3.0,
        )


def train_config(data: dict[str, Any] | TrainConfig | None) -> TrainConfig:
    """A TrainConfig from a run config's ``train`` mapping; one readable line on bad input."""
    if isinstance(data, TrainConfig):
        return data
    try:
        return TrainConfig.model_validate(data or {})
    except ValidationError as exc:
        parts = [f"{'.'.join(str(x) for x in e['loc']) or 'train'}: {e['msg']}" for e in exc.errors()]
        raise RLError("invalid train config: " + "; ".join(parts)) from None


@dataclass
class Rollout:
    """One response to one prompt and the reward the engine gave it (penalties included)."""

    prompt: Prompt
    response: Response
    reward: float


class Learner(ABC):
    """Takes one RL step per engine step: groups[i] are the n rollouts of prompt i.

    ``shaping`` is the reward band the engine passes to ``reward_for`` (None: the task's)."""

    step: int = 0
    shaping: Optional[Shaping] = None

    @abstractmethod
    def update(self, groups: list[list[Rollout]]) -> dict[str, float]: ...

    @abstractmethod
    def save(self, directory: Path) -> None: ...

    @abstractmethod
    def load(self, directory: Path) -> None: ...
