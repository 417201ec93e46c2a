"""The environment pool: active members (solver training), retirement after E steps, retired
members back as few-shot seeds of the generator (at least rho_min of them original seeds)."""
from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class PoolEnv:
    env_id: int
    name: str
    code: str
    step_added: int
    pass_rate: float
    max_difficulty: int = 5
    retired_step: int | None = None
    prompt_vec: list[float] = field(default_factory=list, repr=False)
    code_vec: list[float] = field(default_factory=list, repr=False)


class EnvPool:
    def __init__(self, retire_after: int = 5, rho_min: float = 0.2) -> None:
        self.retire_after = retire_after
        self.rho_min = rho_min
        self.members: list[PoolEnv] = []

    @property
    def active(self) -> list[PoolEnv]:
        return [e for e in self.members if e.retired_step is None]

    @property
    def retired(self) -> list[PoolEnv]:
        return [e for e in self.members if e.retired_step is not None]

    def add(self, env: PoolEnv) -> None:
        self.members.append(env)

    def retire_due(self, step: int) -> list[PoolEnv]:
        """Members whose time is up after ``step`` (retired here)."""
        due = [e for e in self.active if step - e.step_added >= self.retire_after]
        for e in due:
            e.retired_step = step
        return due

    def few_shot(self, rng: random.Random, n: int, originals: list[str]) -> list[str]:
        """n example codes: at least ceil(rho_min * n) original seeds, the rest from seeds + retired."""
        n_orig = min(n, max(1, math.ceil(self.rho_min * n)))
        chosen = rng.sample(originals, n_orig)
        rest = [c for c in originals if c not in chosen] + [e.code for e in self.retired]
        chosen += rng.sample(rest, min(n - n_orig, len(rest)))
        rng.shuffle(chosen)
        return chosen

    def sample_active(self, rng: random.Random, k: int) -> list[PoolEnv]:
        active = self.active
        return [active[rng.randrange(len(active))] for _ in range(k)] if active else []

    def state_dict(self) -> dict[str, Any]:
        return {"members": [asdict(e) for e in self.members]}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        self.members = [PoolEnv(**m) for m in (state or {}).get("members", [])]
