"""The front of a step: parents, prompts, responses. In the ``overlap`` pipeline these run one
step ahead (from the database as it stood before the previous step's children were added)."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from evoforge.database.base import Pick
from evoforge.engine.errors import EngineError
from evoforge.engine.stages.base import Stage, StepState
from evoforge.llm.base import GenerationConfig, Response


class SelectStage(Stage):
    """B parents from the selector. Not stored: the seeded selector draws them again on replay,
    checked against the parents of the stored children. Owns the selector and its rng."""

    name = "select"

    def bind(self, engine: Any) -> None:
        super().bind(engine)
        self.drawn: tuple[int, list[Pick]] | None = None  # the latest step's picks
        self.pending: dict[int, list[Pick]] = {}  # drawn before a snapshot, for a step not yet committed

    def run(self, s: StepState) -> None:
        e = self.engine
        s.picks = self.pending.pop(s.k) if s.k in self.pending else e.selector.sample(s.n_picks)
        self.drawn = (s.k, s.picks)
        rows = e.store.step_children(s.k)
        if rows:  # a stored step (replayed, or cut short by a kill): the same parents, or stop
            by_pick: dict[int, int | None] = {}
            for r in rows:
                by_pick.setdefault(r.pick, r.parent_id)
            if [p.parent.id for p in s.picks] != [by_pick.get(i) for i in range(len(s.picks))]:
                raise EngineError(f"resume: step {s.k} drew other parents than the run did "
                                  "(was the selector or its options changed?)")

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"selector": self.engine.selector.state_dict(),
                                 "rng": self.engine.rng.bit_generator.state}
        if self.drawn is not None and self.drawn[0] > self.engine.snapshot_step:
            # overlap: the next step's parents are drawn before this step commits
            state["pending"] = {"step": self.drawn[0], "picks": [_pick_state(p) for p in self.drawn[1]]}
        return state

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        if state is None:
            raise EngineError(f"{self.engine.store.path} has finished steps but no selector snapshot")
        programs = {p.id: p for p in self.engine.store.programs()}
        self.engine.selector.load_state_dict(state["selector"], programs)
        self.engine.rng.bit_generator.state = state["rng"]
        pending = state.get("pending")
        self.pending = {int(pending["step"]): [_pick_of(d, programs) for d in pending["picks"]]} if pending else {}


class PromptStage(Stage):
    """One prompt per pick (a pure function of the pick: nothing stored)."""

    name = "prompt"

    def run(self, s: StepState) -> None:
        # s.extra["prompt_context"]: one text per pick from an earlier front stage (the idea memory)
        contexts = s.extra.get("prompt_context")
        build = self.engine.prompts.build
        s.prompts = [build(p, context=c) for p, c in zip(s.picks, contexts)] if contexts else [build(p) for p in s.picks]


class GenerateStage(Stage):
    """n responses per prompt in one backend call, stored before anything reads them.

    ``background``: in the overlap pipeline ``start`` runs the call in a thread while the
    previous step evaluates; ``run`` collects it (in the engine's thread, which alone writes)."""

    name = "generate"
    background = True

    def bind(self, engine: Any) -> None:
        super().bind(engine)
        self._pool: ThreadPoolExecutor | None = None
        self._future: tuple[int, Future] | None = None

    def start(self, s: StepState) -> None:
        if self.engine.store.step_children(s.k):
            return  # generated before a kill
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evoforge-generate")
        self._future = (s.k, self._pool.submit(self._generate, s))

    def run(self, s: StepState) -> None:
        store = self.engine.store
        rows = store.step_children(s.k)
        if not rows:
            if self._future is not None and self._future[0] == s.k:
                fresh = self._future[1].result()
                self._future = None
            else:
                fresh = self._generate(s)
            rows = self._store(s, fresh)
            s.responses = fresh
        self._group(s, rows)

    def replay(self, s: StepState) -> None:
        rows = self.engine.store.step_children(s.k)
        if not rows or any(r.child_class is None for r in rows):
            raise EngineError(f"resume: finished step {s.k} has unclassified or no children in the store")
        self._group(s, rows)

    def finish(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)  # a generation running ahead is not left behind
            self._pool = None

    def _generate(self, s: StepState) -> list[list[Response]]:
        e = self.engine
        gen = GenerationConfig(n=s.n, temperature=e.cfg.temperature, max_tokens=e.cfg.max_tokens,
                               seed=e.cfg.seed * 1_000_003 + s.k)
        out = e.backend.generate(s.prompts, gen)
        if len(out) != len(s.prompts) or any(len(g) != s.n for g in out):
            raise EngineError(f"backend {e.backend.name} returned the wrong number of responses")
        return out

    def _store(self, s: StepState, responses: list[list[Response]]) -> list[Any]:
        keep_tokens = self.engine.learner is not None
        rows = []
        for i, (pick, group) in enumerate(zip(s.picks, responses)):
            for j, r in enumerate(group):
                rows.append(dict(
                    pick=i, resp=j, parent_id=pick.parent.id,
                    partner_id=pick.partner.id if pick.partner else None,
                    response=r.text, response_error=r.error, prompt_tokens=r.prompt_tokens,
                    completion_tokens=r.completion_tokens,
                    rl_tokens=_rl_tokens(r) if keep_tokens else None,
                ))
        self.engine.store.add_responses(s.k, rows)
        return self.engine.store.step_children(s.k)

    @staticmethod
    def _group(s: StepState, rows: list[Any]) -> None:
        s.rows = rows
        s.by_pick = {}
        for r in rows:
            s.by_pick.setdefault(r.pick, []).append(r)


def _pick_state(p: Pick) -> dict[str, Any]:
    return {"parent": p.parent.id, "partner": p.partner.id if p.partner else None,
            "inspirations": [q.id for q in p.inspirations], "context": p.context}


def _pick_of(d: dict[str, Any], programs: dict[int, Any]) -> Pick:
    partner = programs[d["partner"]] if d.get("partner") is not None else None
    return Pick(programs[d["parent"]], [programs[i] for i in d.get("inspirations", [])], partner,
                dict(d.get("context") or {}))


def _rl_tokens(r: Response) -> dict[str, Any] | None:
    if r.token_ids is None:
        return None
    return {"token_ids": r.token_ids, "logprobs": r.logprobs, "prompt_token_ids": r.prompt_token_ids}
