"""A synthesis run: config, the context its stages share, and the step loop (live / replay).

The stages (envs/stages.py) follow the engine's stage contract (engine/stages/base.py): every
model output and evaluation is stored before use, live is idempotent, replay reads back.
``run_synthesis`` replays the finished steps of an existing run directory, then goes on live:
a killed run resumes exactly where it stopped, without repeating a stored model call.
"""
from __future__ import annotations

import hashlib
import logging
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from pydantic import BaseModel, ConfigDict, Field

from evoforge.envs.admission import CheckConfig, request
from evoforge.envs.novelty import NoveltyConfig, make_embedder
from evoforge.envs.pool import EnvPool
from evoforge.envs.store import EnvStore
from evoforge.llm.base import Backend, GenerationConfig, Prompt, Response
from evoforge.sandbox import Executor, Status

log = logging.getLogger("evoforge.envs")


class SynthConfig(BaseModel):
    """EvoEnv's settings (SPEC §4 and seed 002; defaults sized for a small model)."""

    model_config = ConfigDict(extra="forbid")

    steps: int = Field(10, gt=0)
    seed: int = 0
    generator_prompts: int = Field(2, gt=0, description="generator prompts per step (groups)")
    generator_n: int = Field(4, gt=0, description="candidates per generator prompt (M = prompts x n)")
    shots: int = Field(2, gt=0, description="few-shot example environments per generator prompt")
    rho_min: float = Field(0.2, ge=0, le=1, description="least share of original seeds among the examples")
    k_rev: int = Field(3, ge=0, description="independent any-reject self-reviews")
    review_unclear_accepts: bool = Field(False, description="a review with neither ACCEPT nor REJECT accepts")
    m: int = Field(8, gt=0, description="solver attempts for the pass rate a_m")
    solver_envs: int = Field(4, ge=0, description="pool environments the solver trains on per step (groups)")
    solver_n: int = Field(4, gt=0, description="solver answers per instance")
    retire_after: int = Field(5, gt=0, description="steps an environment stays active")
    a_star: float = 0.3
    sigma_a: float = Field(0.2, gt=0)
    gamma_min: float = 0.1
    gamma_max: float = 0.5
    tau_low: float = 0.5
    tau_high: float = 0.9
    max_similarity: float = Field(0.97, description="novelty gate: closer than this to a member in a view is a duplicate")
    embedder: str = Field("auto", description="auto | minilm | lexical")
    temperature: float = Field(1.0, ge=0)
    max_tokens_generator: int = Field(1024, gt=0)
    max_tokens_review: int = Field(64, gt=0)
    max_tokens_solver: int = Field(256, gt=0)
    heldout_per_env: int = Field(2, ge=0, description="held-out instances per seed environment (0: none)")
    check_timeout: float = Field(30.0, gt=0)
    call_timeout: float = Field(2.0, gt=0)

    def novelty(self) -> NoveltyConfig:
        return NoveltyConfig(self.gamma_min, self.gamma_max, self.tau_low, self.tau_high, self.max_similarity)

    def check(self) -> CheckConfig:
        return CheckConfig(call_timeout=self.call_timeout, timeout=self.check_timeout)


@dataclass
class SynthContext:
    """What the stages share (``Stage.bind`` receives it as ``engine``)."""

    cfg: SynthConfig
    run_dir: Path
    store: EnvStore
    backend: Backend
    executor: Executor
    learner: Any = None
    pool: EnvPool = field(default_factory=EnvPool)
    embedder: Any = None
    model_calls: int = 0  # generate() calls made by this process (resume tests count them)
    hook: Optional[Callable[[str, int], None]] = None  # called before each stage (tests: simulated kills)

    def rng(self, k: int, purpose: str) -> random.Random:
        return random.Random(f"{self.cfg.seed}-{k}-{purpose}")

    def model(self, k: int, role: str, prompts: list[Prompt], n: int, max_tokens: int) -> list[list[Response]]:
        """n responses per prompt, from the store when this step stored them (no second call)."""
        stored = self.store.get_calls(k, role)
        if stored is not None and len(stored) == len(prompts) and all(len(r) == n for r in stored):
            return stored
        if not prompts:
            return []
        seed = int.from_bytes(hashlib.sha256(f"{self.cfg.seed}-{k}-{role}".encode()).digest()[:4], "big")
        if hasattr(self.backend, "_calls"):
            self.backend._calls = 0  # hf: its sampling seed counts calls; resume needs it per step, not per process
        out = self.backend.generate(prompts, GenerationConfig(n=n, temperature=self.cfg.temperature,
                                                              max_tokens=max_tokens, seed=seed))
        self.model_calls += 1
        self.store.put_calls(k, role, [p.text for p in prompts], out)  # stored before anything uses it
        return out

    def sandbox(self, entry: str, jobs: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Run probe.py's ``entry`` on (code, plan) jobs; a failed run gives None."""
        reqs = [request(code, entry, dict(plan, call_timeout=self.cfg.call_timeout), self.cfg.check_timeout, 1024)[0]
                for code, plan in jobs]
        out = []
        for res in self.executor.run_many(reqs) if reqs else []:
            out.append(res.value if res.status is Status.OK else None)
        return out


def build_stages(ctx: SynthContext) -> list[Any]:
    from evoforge.envs import stages as st

    return [st.HeldoutStage("before"), st.GeneratorStage(), st.AdmissionStage(), st.PoolStage(), st.SolverStage(),
            *([st.LearnStage()] if ctx.learner is not None else []), st.HeldoutStage("after"), st.CommitStage()]


def run_synthesis(ctx: SynthContext) -> dict[str, Any]:
    """Replay the finished steps (no model call, no sandbox), then run the rest live."""
    from evoforge.engine.stages.base import StepState

    ctx.store.set_meta("config", ctx.cfg.model_dump())
    ctx.pool = EnvPool(ctx.cfg.retire_after, ctx.cfg.rho_min)
    if ctx.embedder is None:
        # a resumed run keeps the embedder it started with: the pool's vectors are in its space
        first = ctx.store.get_meta("embedder")
        kind = {"lexical-3gram": "lexical", "all-MiniLM-L6-v2": "minilm"}.get(first, ctx.cfg.embedder)
        ctx.embedder = make_embedder(kind)
    ctx.store.set_meta("embedder", ctx.embedder.name)
    stages = build_stages(ctx)
    for stage in stages:
        stage.bind(ctx)
    done = ctx.store.last_step()
    for k in range(1, min(done, ctx.cfg.steps) + 1):
        s = StepState(k=k, replay=True)
        for stage in stages:
            stage.replay(s)
    if done:
        log.info("resumed after step %d (%d environments in the pool)", done, len(ctx.pool.members))
    for k in range(done + 1, ctx.cfg.steps + 1):
        s = StepState(k=k, replay=False)
        for stage in stages:
            if ctx.hook is not None:
                ctx.hook(stage.name, k)
            stage.run(s)
        m = s.metrics
        log.info("step %d: %d candidates, layers %s, admitted %d, pool %d active, solver mean %.2f", k,
                 m.get("candidates", 0), m.get("layers"), m.get("admitted", 0), m.get("active", 0),
                 m.get("solver_mean", 0.0))
    for stage in stages:
        stage.finish()
    return {"steps": ctx.store.last_step(), "pool": len(ctx.pool.members), "active": len(ctx.pool.active),
            "model_calls": ctx.model_calls}
