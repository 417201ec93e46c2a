"""The ``scripted`` backend: replays given responses (for tests and demos)."""
from __future__ import annotations

from typing import Callable

from evoforge.llm.base import BACKENDS, Backend, BackendError, GenerationConfig, Prompt, Response


@BACKENDS.register("scripted")
class ScriptedBackend(Backend):
    """Answers from ``responses`` (cycled, in order over all calls) or from ``fn(prompt, i)``,
    where ``i`` counts the responses produced so far over all calls (0, 1, 2, ...)."""

    name = "scripted"

    def __init__(self, responses: list[str] | None = None, fn: Callable[[Prompt, int], str] | None = None, **_: object):
        if (responses is None) == (fn is None):
            raise BackendError("scripted backend needs exactly one of 'responses' (a list of str) or 'fn'")
        if responses is not None and (not responses or not all(isinstance(r, str) for r in responses)):
            raise BackendError("scripted backend: 'responses' must be a non-empty list of strings")
        self.responses = list(responses) if responses is not None else None
        self.fn = fn
        self.count = 0
        self.prompts: list[Prompt] = []  # every prompt seen, for tests to inspect

    def generate(self, prompts: list[Prompt], cfg: GenerationConfig) -> list[list[Response]]:
        out = []
        for prompt in prompts:
            self.prompts.append(prompt)
            row = []
            for _ in range(cfg.n):
                if self.responses is not None:
                    text = self.responses[self.count % len(self.responses)]
                else:
                    text = self.fn(prompt, self.count)  # type: ignore[misc]
                row.append(Response(text, prompt_tokens=len(prompt.text) // 4, completion_tokens=len(text) // 4))
                self.count += 1
            out.append(row)
        return out
