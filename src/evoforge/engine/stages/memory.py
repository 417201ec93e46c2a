"""The idea memory as two stages of the step pipeline (engine/stages/base.py's contract).

``memory`` (front, after select): propose, filter against the failure memory, classify, select
an idea per prompt; the chosen idea and its findings go into each prompt.
``memory-update`` (tail, before learn/commit, when the backend is idle): record the step's
children as hypotheses, summarise, prune.

Store before use, twice over: every model answer is written to ``memory_calls`` the moment it
arrives (a rerun of a step cut short reads it back instead of calling the model again), and the
ops a phase derives from the answers go to ``memory_steps`` before they are applied. Replay
applies the stored ops, so a resumed run reaches the same pool without a model call, whatever
the similarity model would say now. ``memory_ideas`` / ``memory_hypotheses`` are a readable view
of the pool for ``evoforge show`` and the dashboard, rewritten with each phase.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from evoforge.engine.errors import EngineError
from evoforge.engine.stages.base import Stage, StepState
from evoforge.llm.base import GenerationConfig, Prompt
from evoforge.memory import planner
from evoforge.memory.config import MemoryConfig
from evoforge.memory.pool import IdeaPool
from evoforge.memory.protocol import load_templates

log = logging.getLogger("evoforge")

TABLES = """
CREATE TABLE IF NOT EXISTS memory_calls (step INTEGER, kind TEXT, prompt TEXT, answer TEXT, error TEXT,
                                         PRIMARY KEY (step, kind));
CREATE TABLE IF NOT EXISTS memory_steps (step INTEGER, phase TEXT, ops TEXT, PRIMARY KEY (step, phase));
CREATE TABLE IF NOT EXISTS memory_ideas (id INTEGER PRIMARY KEY, text TEXT, status TEXT, step INTEGER,
                                         tested INTEGER, best REAL, merged INTEGER, findings TEXT,
                                         prune_reason TEXT, pruned_step INTEGER);
CREATE TABLE IF NOT EXISTS memory_hypotheses (child_id INTEGER PRIMARY KEY, idea_id INTEGER, step INTEGER,
                                              child_class TEXT, score REAL, finding TEXT);
"""
SYSTEM = "You are a concise research assistant. Answer exactly in the format asked for."


class IdeaMemory:
    """The pool plus what both stages need to talk to the model and the store."""

    def __init__(self, engine: Any, cfg: MemoryConfig):
        from evoforge.embeddings import get_embedder

        if engine.backend.name == "builtin":
            raise EngineError("--memory needs a language model backend (openai, hf, llamacpp, ...): the builtin "
                              "mutation operator has no language to propose or judge ideas with")
        self.engine, self.cfg = engine, cfg
        self.pool = IdeaPool(maximise=engine.task.direction.value == "max")
        self.front_done = self.tail_done = 0  # last step whose ops are in self.pool
        self.templates = load_templates(engine.cfg.prompt.template_dir)
        self.embedder = get_embedder(cfg.similarity)
        self.calls = 0  # model calls made by this process (a resumed run makes none for stored steps)

    def context(self) -> planner.Context:
        e = self.engine
        best = e.best.score if e.best is not None else None
        return planner.Context(e.task.description.strip(), "larger" if self.pool.maximise else "smaller", best,
                               self.templates, self.cfg, self.embedder)

    def asker(self, k: int) -> planner.Ask:
        store = self.engine.store

        def ask(kind: str, text: str, grammar: str) -> str:
            row = store.db.execute("SELECT answer FROM memory_calls WHERE step = ? AND kind = ?", (k, kind)).fetchone()
            if row is not None:
                return row[0] or ""
            gen = GenerationConfig(n=1, temperature=self.cfg.temperature, max_tokens=self.cfg.max_tokens,
                                   seed=self.engine.cfg.seed * 1_000_003 + k * 7 + len(kind))
            try:
                meta = {"memory": kind, "step": k, **({"grammar": grammar} if self.cfg.grammar else {})}
                prompt = Prompt(text=text, system=SYSTEM, meta=meta)
                [[resp]] = self.engine.backend.generate([prompt], gen)
                answer, error = resp.text or "", resp.error or ""
            except Exception as exc:  # a dead server: the fallbacks keep the run going
                answer, error = "", f"{type(exc).__name__}: {exc}"[:500]
            self.calls += 1
            with store.transaction():
                store.db.execute("INSERT OR REPLACE INTO memory_calls VALUES (?,?,?,?,?)", (k, kind, text, answer, error))
            return answer

        return ask

    def stored_ops(self, k: int, phase: str) -> Any:
        row = self.engine.store.db.execute("SELECT ops FROM memory_steps WHERE step = ? AND phase = ?",
                                           (k, phase)).fetchone()
        return json.loads(row[0]) if row else None

    def commit(self, k: int, phase: str, record: dict[str, Any]) -> None:
        """Store a phase's ops, then apply them, then refresh the readable view."""
        store = self.engine.store
        with store.transaction():
            store.db.execute("INSERT OR REPLACE INTO memory_steps VALUES (?,?,?)", (k, phase, json.dumps(record)))
        self.apply(record, k, phase)
        self._write_view(record["ops"])
        kinds: dict[str, int] = {}
        for op in record["ops"]:
            kinds[op["op"]] = kinds.get(op["op"], 0) + 1
        log.info("idea memory, step %d %s: %s; %d active ideas, %d in the failure memory", k, phase,
                 ", ".join(f"{v} {key}" for key, v in sorted(kinds.items())) or "no change",
                 len(self.pool.active()), len(self.pool.failures()))

    def apply(self, record: dict[str, Any], k: int, phase: str) -> None:
        for op in record["ops"]:
            self.pool.apply(op)
        if phase == "front":
            self.front_done = k
        else:
            self.tail_done = k

    def _write_view(self, ops: list[dict[str, Any]]) -> None:
        """Every idea as it stands now; every hypothesis ever recorded (summarised ones too)."""
        store = self.engine.store
        with store.transaction():
            for i in self.pool.ideas.values():
                store.db.execute("INSERT OR REPLACE INTO memory_ideas VALUES (?,?,?,?,?,?,?,?,?,?)",
                                 (i.id, i.text, i.status, i.step, i.tested, i.best, i.merged, json.dumps(i.findings),
                                  i.prune_reason, i.pruned_step))
            for op in ops:
                if op["op"] == "record":
                    store.db.execute("INSERT OR REPLACE INTO memory_hypotheses VALUES (?,?,?,?,?,?)",
                                     (op["child"], op["idea"], op["step"], op["class"], op.get("score"), op["finding"]))


class MemoryStage(Stage):
    name = "memory"
    tables = TABLES

    def __init__(self, cfg: MemoryConfig):
        self.cfg = cfg

    def bind(self, engine: Any) -> None:
        super().bind(engine)
        self.memory = IdeaMemory(engine, self.cfg)

    def run(self, s: StepState) -> None:
        m = self.memory
        record = m.stored_ops(s.k, "front")
        if record is None:
            plan = planner.plan_front(m.pool, m.context(), m.asker(s.k), s.k, s.n_picks)
            record = {"ops": plan.ops, "ideas": plan.ideas, "contexts": plan.contexts}
            m.commit(s.k, "front", record)
        elif m.front_done < s.k:
            m.apply(record, s.k, "front")
        self._publish(s, record)

    def replay(self, s: StepState) -> None:
        m = self.memory
        record = m.stored_ops(s.k, "front")
        if record is None:
            raise EngineError(f"resume: the idea memory stored nothing for finished step {s.k}")
        if m.front_done < s.k:  # a snapshot taken after an overlapped front holds it already
            m.apply(record, s.k, "front")
        self._publish(s, record)

    @staticmethod
    def _publish(s: StepState, record: dict[str, Any]) -> None:
        s.extra["memory"] = {"ideas": record["ideas"]}
        s.extra["prompt_context"] = list(record["contexts"])  # one text per pick, read by the prompt stage

    def state_dict(self) -> dict[str, Any]:
        m = self.memory
        return {"pool": m.pool.state_dict(), "front_done": m.front_done, "tail_done": m.tail_done}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        m = self.memory
        m.pool.load_state_dict(state["pool"] if state else None)
        m.front_done = int(state["front_done"]) if state else 0
        m.tail_done = int(state["tail_done"]) if state else 0


class MemoryUpdateStage(Stage):
    """Shares the front stage's IdeaMemory (which owns and snapshots the pool)."""

    name = "memory-update"

    def __init__(self, front: MemoryStage):
        self.front = front

    def run(self, s: StepState) -> None:
        m = self.front.memory
        record = m.stored_ops(s.k, "tail")
        if record is None:
            front = m.stored_ops(s.k, "front") or {"ideas": []}
            ops = planner.plan_tail(m.pool, m.context(), m.asker(s.k), s.k, front["ideas"], self._children(s))
            m.commit(s.k, "tail", {"ops": ops})
        elif m.tail_done < s.k:
            m.apply(record, s.k, "tail")

    def replay(self, s: StepState) -> None:
        m = self.front.memory
        record = m.stored_ops(s.k, "tail")
        if record is None:
            raise EngineError(f"resume: the idea memory stored no update for finished step {s.k}")
        if m.tail_done < s.k:
            m.apply(record, s.k, "tail")

    def _children(self, s: StepState) -> list[list[dict[str, Any]]]:
        """Each pick's children as hypotheses: class, score and a one-line finding."""
        ids = [r.id for r in s.rows]
        info: dict[int, tuple] = {}
        if ids:
            marks = ",".join("?" * len(ids))
            for cid, cls, score, feedback in self.engine.store.db.execute(
                    f"SELECT id, child_class, score, feedback FROM children WHERE id IN ({marks})", ids):
                info[cid] = (cls, score, feedback or "")
        out = []
        for i in range(len(s.picks)):
            group = []
            parent = s.picks[i].parent
            for r in s.by_pick.get(i, []):
                cls, score, feedback = info.get(r.id, ("unknown", None, ""))
                if score is not None and cls == "evaluated":
                    finding = f"child {r.id}: score {score:.6g} (parent {parent.score:.6g})"
                else:
                    reason = " ".join(feedback.split())[:120]
                    finding = f"child {r.id}: {cls}" + (f" ({reason})" if reason else "")
                group.append({"child": r.id, "class": cls, "score": score if cls == "evaluated" else None,
                              "finding": finding})
            out.append(group)
        return out


def add_memory_stages(pipeline: Any, cfg: MemoryConfig) -> None:
    """Insert both stages: the front one after ``select``, the update before ``learn``/``commit``."""
    front = MemoryStage(cfg)
    pipeline.insert(front, after="select")
    tail_anchor = "learn" if any(st.name == "learn" for st in pipeline.tail) else "commit"
    pipeline.insert(MemoryUpdateStage(front), before=tail_anchor)
