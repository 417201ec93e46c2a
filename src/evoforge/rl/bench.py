"""Timing of one RL step (sample B x n completions, then one learner update), shared by
benchmarks/bench_rl_cpu.py and benchmarks/gpu_rl_check.py. Rewards are random: this measures
speed, not learning."""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evoforge.llm.base import Prompt, Response
from evoforge.rl.config import Rollout


@dataclass
class StepTiming:
    step: int
    gen_seconds: float
    gen_tokens: int  # completion tokens sampled
    update_seconds: float
    update_tokens: int  # prompt + completion tokens through forward/backward
    loss: float

    @property
    def seconds(self) -> float:
        return self.gen_seconds + self.update_seconds


def time_rl_steps(
    backend: Any, learner: Any, prompt_ids: list[list[int]], n: int, max_tokens: int, steps: int,
    temperature: float = 1.0, seed: int = 0, sync: Any = None,
) -> list[StepTiming]:
    """``sync`` (e.g. torch.cuda.synchronize) is called before each clock read."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(steps):
        sync and sync()
        t0 = time.perf_counter()
        groups, gen_tokens = [], 0
        for i, ids in enumerate(prompt_ids):
            toks, lps = backend.sample(ids, n, temperature, max_tokens, seed * 1000 + k * 100 + i)
            gen_tokens += sum(len(t) for t in toks)
            groups.append([
                Rollout(Prompt(text=""), Response(text="", token_ids=t, logprobs=lp, prompt_token_ids=list(ids)),
                        float(rng.normal()))
                for t, lp in zip(toks, lps)
            ])
        sync and sync()
        t1 = time.perf_counter()
        metrics = learner.update(groups)
        sync and sync()
        t2 = time.perf_counter()
        upd_tokens = sum(len(r.response.prompt_token_ids) + len(r.response.token_ids) for g in groups for r in g)
        out.append(StepTiming(k, t1 - t0, gen_tokens, t2 - t1, upd_tokens, float(metrics.get("loss", 0.0))))
    return out


def summarise(name: str, timings: list[StepTiming], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Means over the steps after the first (warm-up) when there are several."""
    use = timings[1:] if len(timings) > 1 else timings
    gen_s = sum(t.gen_seconds for t in use)
    upd_s = sum(t.update_seconds for t in use)
    return {
        "name": name,
        "steps_timed": len(use),
        "seconds_per_rl_step": (gen_s + upd_s) / len(use),
        "generation_seconds_per_step": gen_s / len(use),
        "update_seconds_per_step": upd_s / len(use),
        "generation_tokens_per_s": sum(t.gen_tokens for t in use) / gen_s if gen_s else 0.0,
        "update_tokens_per_s": sum(t.update_tokens for t in use) / upd_s if upd_s else 0.0,
        "completion_tokens_per_step": sum(t.gen_tokens for t in use) / len(use),
        **(extra or {}),
        "steps": [asdict(t) for t in timings],
    }
