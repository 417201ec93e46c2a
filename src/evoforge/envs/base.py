"""The contract every environment implements (EvoEnv's G_e, Pi_e, S_e), and nothing else.

Kept free of imports beyond the standard library: candidate files written by a model import it
inside the sandbox, and the seed environments are shown to the model as examples of it.
"""
from __future__ import annotations

import json
from typing import Any


class VerifiableEnvironment:
    """A reusable, verifiable training environment.

    * ``generate(seed, difficulty) -> (instance, answer)``: G_e, deterministic in its arguments;
      both values JSON-serialisable.
    * ``render(instance) -> str``: Pi_e, the prompt a solver sees.
    * ``score(instance, answer: str) -> float``: S_e, 1.0 for a correct answer, 0.0 otherwise;
      it takes the solver's raw text and parses it itself (never raises on garbage).

    ``max_difficulty`` (difficulties are 1..max_difficulty) and ``format_answer`` (the reference
    answer as the text a correct solver would write) are optional; the defaults suit most files.
    """

    name: str = ""
    max_difficulty: int = 5

    def generate(self, seed: int, difficulty: int) -> tuple[Any, Any]:
        raise NotImplementedError

    def render(self, instance: Any) -> str:
        raise NotImplementedError

    def score(self, instance: Any, answer: str) -> float:
        raise NotImplementedError

    def format_answer(self, answer: Any) -> str:
        return answer if isinstance(answer, str) else json.dumps(answer)
