"""Options of PACEvolve's idea memory (``memory:`` in a run config, ``--memory`` on the command line).

PACEvolve gives the operations, not the numbers; the defaults here are ours (docs/MEMORY.md says why).
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class MemoryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="PACEvolve's hierarchical idea memory (needs a language model backend)")
    k_hyp: int = Field(6, gt=1, description="hypotheses under one idea before they are summarised into findings")
    k_idea: int = Field(8, gt=1, description="active ideas before the least promising are pruned to the failure memory")
    propose: int = Field(3, gt=0, description="new ideas the model may propose per step")
    similarity: Literal["auto", "minilm", "lexical"] = Field(
        "auto", description="auto: all-MiniLM-L6-v2 when installed ([embed] extra), else the lexical fallback")
    merge_candidates: int = Field(3, gt=0, description="most similar existing ideas shown to the classifier per new idea")
    merge_floor: float | None = Field(
        None, description="similarity below which a new idea is added without asking (default: 0.45 MiniLM, 0.25 lexical)")
    failure_threshold: float | None = Field(
        None, description="similarity to a pruned idea at which a new one is rejected (default: 0.80 MiniLM, 0.60 lexical)")
    max_idea_chars: int = Field(300, gt=20, description="longest idea text accepted from the model")
    max_finding_chars: int = Field(200, gt=20, description="longest key finding accepted from the model")
    grammar: bool = Field(True, description="constrain the answers with a GBNF grammar where the backend "
                          "supports it (llamacpp; openai servers with structured outputs)")
    temperature: float = Field(0.7, ge=0)
    max_tokens: int = Field(768, gt=0, description="per memory call (they are short answers)")

    def thresholds(self, embedder_name: str) -> tuple[float, float]:
        lexical = embedder_name == "lexical"
        floor = self.merge_floor if self.merge_floor is not None else (0.25 if lexical else 0.45)
        fail = self.failure_threshold if self.failure_threshold is not None else (0.60 if lexical else 0.80)
        return floor, fail
