"""PACEvolve's idea pool: ideas, the hypotheses that tested them, key findings, failure memory.

The pool changes only through ``apply(op)``: every change a step makes is a small JSON op
(``add``, ``merge``, ``reject``, ``record``, ``summarise``, ``prune``). The memory stage stores a
step's ops in run.db before applying them, so a replay applies the same ops and reaches the same
pool, whatever the model, the embedding library or the machine would say the second time.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

MAX_IDEA_CHARS = 400  # an idea is a concept, not a program
MAX_FINDING_CHARS = 300
KEEP_FINDINGS = 6  # key findings kept per idea (oldest dropped first)
KEEP_REJECTED = 8  # recent rejections shown to the model in the next proposal


@dataclass
class Hypothesis:
    child_id: int
    step: int
    child_class: str
    score: float | None
    finding: str


@dataclass
class Idea:
    id: int
    text: str
    step: int  # when it entered the pool
    status: str = "active"  # active | pruned
    hypotheses: list[Hypothesis] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # key findings (summarised hypotheses)
    tested: int = 0  # hypotheses ever recorded, summarised ones included
    best: float | None = None  # best score among its evaluated children
    merged: int = 0  # proposals folded into it
    prune_reason: str = ""
    pruned_step: int | None = None


def clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class IdeaPool:
    def __init__(self, maximise: bool = True):
        self.maximise = maximise
        self.ideas: dict[int, Idea] = {}
        self.next_id = 1
        self.rejected: list[dict[str, Any]] = []  # recent proposals refused by the failure memory
        self.malformed: dict[str, int] = {}  # model answers not in the format asked for, per kind

    # -- views -------------------------------------------------------------------------------
    def active(self) -> list[Idea]:
        return [i for i in self.ideas.values() if i.status == "active"]

    def failures(self) -> list[Idea]:
        """The permanent failure memory: every pruned idea, with the reason."""
        return [i for i in self.ideas.values() if i.status == "pruned"]

    def better(self, a: float, b: float | None) -> bool:
        return b is None or (a > b if self.maximise else a < b)

    def counts(self) -> dict[str, Any]:
        return {"ideas": len(self.active()), "hypotheses": sum(i.tested for i in self.ideas.values()),
                "failures": len(self.failures()), "malformed": dict(self.malformed)}

    # -- the only way to change the pool ------------------------------------------------------
    def apply(self, op: dict[str, Any]) -> None:
        kind = op["op"]
        if kind == "add":
            idea = Idea(self.next_id, clip(op["text"], MAX_IDEA_CHARS), op["step"])
            self.ideas[idea.id] = idea
            self.next_id += 1
        elif kind == "merge":
            idea = self.ideas[op["idea"]]
            idea.text = clip(op["text"], MAX_IDEA_CHARS) or idea.text
            idea.merged += 1
        elif kind == "reject":
            self.rejected = (self.rejected + [{"text": clip(op["text"], MAX_IDEA_CHARS), "reason": op["reason"],
                                               "step": op["step"]}])[-KEEP_REJECTED:]
        elif kind == "record":
            idea = self.ideas[op["idea"]]
            h = Hypothesis(op["child"], op["step"], op["class"], op.get("score"), clip(op["finding"], MAX_FINDING_CHARS))
            idea.hypotheses.append(h)
            idea.tested += 1
            if h.score is not None and self.better(h.score, idea.best):
                idea.best = h.score
        elif kind == "summarise":
            idea = self.ideas[op["idea"]]
            idea.findings = (idea.findings + [clip(f, MAX_FINDING_CHARS) for f in op["findings"]])[-KEEP_FINDINGS:]
            idea.hypotheses = []
        elif kind == "prune":
            idea = self.ideas[op["idea"]]
            idea.status, idea.prune_reason, idea.pruned_step = "pruned", clip(op["reason"], MAX_FINDING_CHARS), op["step"]
        elif kind == "malformed":
            self.malformed[op["kind"]] = self.malformed.get(op["kind"], 0) + 1
        else:
            raise ValueError(f"unknown idea-pool op {kind!r}")

    # -- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"maximise": self.maximise, "next_id": self.next_id, "rejected": list(self.rejected),
                "malformed": dict(self.malformed), "ideas": [asdict(i) for i in self.ideas.values()]}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        self.__init__(self.maximise if state is None else state["maximise"])
        if state is None:
            return
        self.next_id = int(state["next_id"])
        self.rejected = list(state["rejected"])
        self.malformed = dict(state["malformed"])
        for d in state["ideas"]:
            d = dict(d)
            d["hypotheses"] = [Hypothesis(**h) for h in d["hypotheses"]]
            self.ideas[int(d["id"])] = Idea(**d)
