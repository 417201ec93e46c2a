"""The stages of one synthesis step, on the engine's stage contract (engine/stages/base.py).

held-out (step 1: before) -> generator -> admission (L1-L5, reviews, pass rate, novelty,
rewards) -> pool (admit, retire) -> solver -> learn (role-conditioned GRPO) -> held-out (last
step: after) -> commit. Model outputs go through ``SynthContext.model`` (stored before use,
reused after a kill); each stage's results are stored in its table before the next uses them.
"""
from __future__ import annotations

import json
import shutil
from collections import Counter
from typing import Any

import numpy as np

from evoforge.engine.stages.base import Stage, StepState
from evoforge.envs.admission import check_sources
from evoforge.envs.novelty import gamma, max_similarity, redundancy
from evoforge.envs.pool import PoolEnv
from evoforge.envs.prompts import extract_code, generator_prompt, review_verdict, reviewer_prompt, solver_prompt
from evoforge.envs.rewards import generator_reward, role_advantages
from evoforge.envs.seeds import SEED_NAMES, seed_source

HELDOUT_SEED = 10**6  # instance seeds of the held-out set: the solver never trains on seed environments


class GeneratorStage(Stage):
    name = "envs_generator"

    def run(self, s: StepState) -> None:
        ctx, cfg = self.engine, self.engine.cfg
        rng = ctx.rng(s.k, "few-shot")
        originals = [seed_source(n) for n in SEED_NAMES]
        prompts = [generator_prompt(ctx.pool.few_shot(rng, cfg.shots, originals)) for _ in range(cfg.generator_prompts)]
        s.extra["generator"] = (prompts, ctx.model(s.k, "generator", prompts, cfg.generator_n, cfg.max_tokens_generator))

    def replay(self, s: StepState) -> None:
        pass


class AdmissionStage(Stage):
    """L1-L5 in the sandbox, then K_rev reviews, the pass rate a_m, dual-view novelty, R_gen."""

    name = "envs_admission"

    def run(self, s: StepState) -> None:
        ctx = self.engine
        _, responses = s.extra["generator"]
        flat = [(g, j, extract_code(r.text)) for g, row in enumerate(responses) for j, r in enumerate(row)]
        stored = ctx.store.candidates(s.k)
        if len(stored) == len(flat) and all(r["verdict"] is not None for r in stored):
            rows = stored  # this step was cut short after admission: reuse it
        else:
            rows = self.admit(s.k, flat)
        s.extra["candidates"] = rows
        layers = Counter(r["layer"] for r in rows)
        s.metrics.update(candidates=len(rows), layers={str(i): layers.get(i, 0) for i in range(6)},
                         admitted=sum(r["admitted"] for r in rows),
                         pass_rates=[r["pass_rate"] for r in rows if r["pass_rate"] is not None],
                         gen_reward_mean=float(np.mean([r["reward"] for r in rows])) if rows else 0.0)

    def replay(self, s: StepState) -> None:
        pass

    def admit(self, k: int, flat: list[tuple[int, int, str]]) -> list[dict[str, Any]]:
        ctx, cfg = self.engine, self.engine.cfg
        checks = check_sources([c for _, _, c in flat], ctx.executor, cfg.check())
        rows = [dict(step=k, grp=g, idx=j, code=code, layer=a.layer, reason=a.reason, name=a.name, reviews=None,
                     pass_rate=None, sim_prompt=None, sim_code=None, gamma=None, reward=a.layer / 5.0,
                     admitted=0, verdict=a.reason, env_id=None, view=None)
                 for (g, j, code), a in zip(flat, checks)]
        top = {i: int(a.stats.get("max_difficulty", 5)) for i, a in enumerate(checks) if a.passed}
        ok = list(top)
        cases = {i: [[k * 1000 + t, 1 + t % top[i]] for t in range(cfg.m)] for i in ok}
        samples = ctx.sandbox("sample", [(rows[i]["code"], {"cases": cases[i]}) for i in ok])
        good = [i for i, smp in zip(ok, samples) if smp and all("prompt" in c for c in smp)]
        for i in set(ok) - set(good):
            rows[i].update(verdict="sampling instances failed in the sandbox", pass_rate=0.0)
        sample = dict(zip(ok, samples))
        # K_rev self-reviews: admission only, never part of R_gen
        reviews = ctx.model(k, "review", [reviewer_prompt(rows[i]["code"], sample[i][0]["prompt"], sample[i][0]["answer"])
                                          for i in good], cfg.k_rev, cfg.max_tokens_review) if cfg.k_rev else []
        # the solver's pass rate a_m on m instances
        asks = [solver_prompt(c["prompt"]) for i in good for c in sample[i]]
        answers = ctx.model(k, "passrate", asks, 1, cfg.max_tokens_solver)
        jobs = [(rows[i]["code"], {"answers": [[*cases[i][t], answers[n * cfg.m + t][0].text] for t in range(cfg.m)]})
                for n, i in enumerate(good)]
        grades = ctx.sandbox("grade", jobs)
        # dual-view novelty against the pool (and what this step admitted before)
        members = ctx.pool.members
        pool_p = np.array([e.prompt_vec for e in members]) if members else np.zeros((0, 1))
        pool_c = np.array([e.code_vec for e in members]) if members else np.zeros((0, 1))
        g_t = gamma(redundancy(pool_p, pool_c), cfg.novelty())
        vp = ctx.embedder.embed([sample[i][0]["prompt"] for i in good]) if good else []
        vc = ctx.embedder.embed([rows[i]["code"] for i in good]) if good else []
        for n, i in enumerate(good):
            row = rows[i]
            verdicts = [review_verdict(r.text, cfg.review_unclear_accepts) for r in (reviews[n] if cfg.k_rev else [])]
            scores = grades[n] if isinstance(grades[n], list) else [0.0] * cfg.m
            a = float(np.mean(scores))
            sp, sc = (max_similarity(vp[n], pool_p), max_similarity(vc[n], pool_c)) if len(pool_p) else (0.0, 0.0)
            row.update(reviews=verdicts, pass_rate=a, sim_prompt=sp, sim_code=sc, gamma=g_t,
                       reward=generator_reward(5, a, 1.0 - (sp + sc) / 2.0, g_t, cfg.a_star, cfg.sigma_a))
            if not all(verdicts):
                row["verdict"] = f"rejected by {verdicts.count(False)} of {len(verdicts)} self-reviews"
            elif not 0.0 < a < 1.0:
                row["verdict"] = f"pass rate {a:.2f} not strictly inside (0, 1)"
            elif max(sp, sc) >= cfg.max_similarity:
                row["verdict"] = f"duplicate of a pool member (similarity {max(sp, sc):.3f})"
            else:
                row.update(admitted=1, verdict="admitted", env_id=k * 10000 + row["grp"] * 100 + row["idx"])
                pool_p = np.vstack([pool_p, vp[n]]) if len(pool_p) else vp[n][None, :]
                pool_c = np.vstack([pool_c, vc[n]]) if len(pool_c) else vc[n][None, :]
            row["view"] = json.dumps({"prompt": sample[i][0]["prompt"], "answer": sample[i][0]["answer"],
                                      "max_difficulty": top[i], "pv": list(map(float, vp[n])), "cv": list(map(float, vc[n]))})
        with ctx.store.tx():
            for row in rows:
                ctx.store.put_candidate(row)
        return ctx.store.candidates(k)


class PoolStage(Stage):
    """Admitted environments join the active pool; members retire after ``retire_after`` steps."""

    name = "envs_pool"

    def run(self, s: StepState) -> None:
        ctx = self.engine
        have = {e.env_id for e in ctx.pool.members}
        for row in s.extra["candidates"]:
            if row["admitted"] and row["env_id"] not in have:
                view = json.loads(row["view"])
                env = PoolEnv(row["env_id"], row["name"], row["code"], s.k, row["pass_rate"], view["max_difficulty"],
                              prompt_vec=view["pv"], code_vec=view["cv"])
                ctx.pool.add(env)
                ctx.store.put_pool(env.__dict__)
        for env in ctx.pool.retire_due(s.k):
            ctx.store.put_pool(env.__dict__)
        s.metrics.update(active=len(ctx.pool.active), retired=len(ctx.pool.retired))

    def replay(self, s: StepState) -> None:
        ctx = self.engine
        for data in ctx.store.pool():
            if data["step_added"] == s.k:
                ctx.pool.add(PoolEnv(**dict(data, retired_step=None)))
        for env in ctx.pool.members:
            if any(d["env_id"] == env.env_id and d["retired_step"] == s.k for d in ctx.store.pool()):
                env.retired_step = s.k

    def state_dict(self) -> dict[str, Any] | None:
        return self.engine.pool.state_dict()

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        self.engine.pool.load_state_dict(state)


class SolverStage(Stage):
    """The solver answers instances of active pool environments; the frozen S_e scores them."""

    name = "envs_solver"

    def run(self, s: StepState) -> None:
        ctx, cfg = self.engine, self.engine.cfg
        rng = ctx.rng(s.k, "solver")
        envs = ctx.pool.sample_active(rng, cfg.solver_envs)
        cases = [(e, rng.randrange(10**6), rng.randint(1, e.max_difficulty)) for e in envs]
        samples = ctx.sandbox("sample", [(e.code, {"cases": [[seed, d]]}) for e, seed, d in cases])
        kept = [(c, smp[0]) for c, smp in zip(cases, samples) if smp and "prompt" in smp[0]]
        prompts = [solver_prompt(smp["prompt"]) for _, smp in kept]
        responses = ctx.model(s.k, "solver", prompts, cfg.solver_n, cfg.max_tokens_solver)
        stored = ctx.store.solver(s.k)
        if len(stored) == sum(len(r) for r in responses) and stored:
            scores = [[row[7] for row in stored if row[1] == g] for g in range(len(kept))]
        else:
            grades = ctx.sandbox("grade", [(e.code, {"answers": [[seed, d, r.text] for r in row]})
                                           for ((e, seed, d), _), row in zip(kept, responses)])
            scores = [g if isinstance(g, list) else [0.0] * len(row) for g, row in zip(grades, responses)]
            ctx.store.put_solver([(s.k, g, j, e.env_id, seed, d, smp["answer"], float(v))
                                  for g, (((e, seed, d), smp), sc) in enumerate(zip(kept, scores)) for j, v in enumerate(sc)])
        s.extra["solver"] = (prompts, responses, scores)
        flat = [v for sc in scores for v in sc]
        s.metrics.update(solver_answers=len(flat), solver_mean=float(np.mean(flat)) if flat else 0.0)

    def replay(self, s: StepState) -> None:
        pass


class LearnStage(Stage):
    """Role-conditioned GRPO: advantages normalised within each role's groups, one shared update."""

    name = "envs_learn"

    def bind(self, engine: Any) -> None:
        super().bind(engine)
        self.resume_from = None

    def run(self, s: StepState) -> None:
        from evoforge.rl import Rollout

        ctx = self.engine
        if self.resume_from is not None:
            ctx.learner.load(self.resume_from)  # the learner as it was after the last finished step
            self.resume_from = None
        prompts, responses = s.extra["generator"]
        reward = {(r["grp"], r["idx"]): r["reward"] for r in s.extra["candidates"]}
        gen = [[reward[(g, j)] for j in range(len(row))] for g, row in enumerate(responses)]
        s_prompts, s_responses, s_scores = s.extra.get("solver", ([], [], []))
        groups, signal = [], {}
        for role, ps, rs, rewards in (("generator", prompts, responses, gen), ("solver", s_prompts, s_responses, s_scores)):
            advs = role_advantages(rewards)
            signal[role] = sum(any(a != 0 for a in adv) for adv in advs)
            groups += [[Rollout(p, r, a) for r, a in zip(row, adv)] for p, row, adv in zip(ps, rs, advs) if len(row) >= 2]
        metrics = ctx.learner.update(groups)
        s.metrics.update(train={k: v for k, v in metrics.items() if isinstance(v, (int, float))},
                         generator_groups_with_signal=signal["generator"], solver_groups_with_signal=signal["solver"])
        ckpt = ctx.run_dir / "checkpoints"
        ctx.learner.save(ckpt / f"step_{s.k}")
        for old in ckpt.glob("step_*"):
            if old.name.split("_")[-1].isdigit() and int(old.name.split("_")[-1]) < s.k - 1:
                shutil.rmtree(old, ignore_errors=True)

    def replay(self, s: StepState) -> None:
        path = self.engine.run_dir / "checkpoints" / f"step_{s.k}"
        self.resume_from = path if path.is_dir() else self.resume_from


class HeldoutStage(Stage):
    """Solver accuracy on held-out instances of the seed environments: before step 1, after the last."""

    def __init__(self, when: str) -> None:
        self.when = when
        self.name = f"envs_heldout_{when}"  # type: ignore[misc]

    def run(self, s: StepState) -> None:
        ctx, cfg = self.engine, self.engine.cfg
        step = 0 if self.when == "before" else s.k
        if (self.when == "before" and s.k != 1) or (self.when == "after" and s.k != cfg.steps) or not cfg.heldout_per_env:
            return
        if step not in ctx.store.heldout():
            cases = [(n, HELDOUT_SEED + i, 1 + i % 2) for n in SEED_NAMES for i in range(cfg.heldout_per_env)]
            samples = ctx.sandbox("sample", [(seed_source(n), {"cases": [[seed, d]]}) for n, seed, d in cases])
            prompts = [solver_prompt(smp[0]["prompt"]) for smp in samples]
            answers = ctx.model(step, "heldout", prompts, 1, cfg.max_tokens_solver)
            grades = ctx.sandbox("grade", [(seed_source(n), {"answers": [[seed, d, a[0].text]]})
                                           for (n, seed, d), a in zip(cases, answers)])
            ctx.store.put_heldout(step, [(n, seed, d, float(g[0]) if g else 0.0) for (n, seed, d), g in zip(cases, grades)])
        rows = ctx.store.heldout()[step]
        s.metrics[f"heldout_{self.when}"] = float(np.mean([r[3] for r in rows]))

    def replay(self, s: StepState) -> None:
        pass


class CommitStage(Stage):
    name = "envs_commit"

    def run(self, s: StepState) -> None:
        self.engine.store.finish_step(s.k, s.metrics)

    def replay(self, s: StepState) -> None:
        pass
