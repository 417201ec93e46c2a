"""The idea memory as stored in run.db, for ``evoforge show`` and the dashboard (read-only)."""
from __future__ import annotations

import json
import sqlite3
from typing import Any


def read_memory(db: sqlite3.Connection) -> dict[str, Any] | None:
    """None when the run has no idea memory; else counts, the idea tree and the failure memory."""
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "memory_ideas" not in names:
        return None
    ideas = []
    for row in db.execute("SELECT id, text, status, step, tested, best, merged, findings, prune_reason, pruned_step"
                          " FROM memory_ideas ORDER BY id"):
        ideas.append(dict(zip(("id", "text", "status", "step", "tested", "best", "merged", "findings",
                               "prune_reason", "pruned_step"), row)))
        ideas[-1]["findings"] = json.loads(ideas[-1]["findings"] or "[]")
    hyps: dict[int, list[dict[str, Any]]] = {}
    for child, idea, step, cls, score, finding in db.execute(
            "SELECT child_id, idea_id, step, child_class, score, finding FROM memory_hypotheses ORDER BY child_id"):
        hyps.setdefault(idea, []).append({"child": child, "step": step, "class": cls, "score": score,
                                          "finding": finding})
    malformed: dict[str, int] = {}
    rejected = []
    for (ops,) in db.execute("SELECT ops FROM memory_steps"):
        for op in json.loads(ops)["ops"]:
            if op["op"] == "malformed":
                malformed[op["kind"]] = malformed.get(op["kind"], 0) + 1
            elif op["op"] == "reject":
                rejected.append({"text": op["text"], "reason": op["reason"], "step": op["step"]})
    for idea in ideas:
        idea["hypotheses"] = hyps.get(idea["id"], [])
    calls = db.execute("SELECT COUNT(*) FROM memory_calls").fetchone()[0]
    active = [i for i in ideas if i["status"] == "active"]
    return {"ideas": len(active), "hypotheses": sum(len(v) for v in hyps.values()),
            "failures": len(ideas) - len(active), "malformed": malformed, "model_calls": calls,
            "rejected": rejected, "tree": ideas}


def format_tree(view: dict[str, Any]) -> list[str]:
    """Plain text lines: the active ideas with their findings, then the failure memory."""
    lines = [f"idea memory: {view['ideas']} ideas, {view['hypotheses']} hypotheses, {view['failures']} failures, "
             f"{view['model_calls']} model calls, malformed answers {view['malformed'] or 'none'}"]
    for idea in view["tree"]:
        if idea["status"] != "active":
            continue
        best = "-" if idea["best"] is None else f"{idea['best']:.6g}"
        lines.append(f"  #{idea['id']} {idea['text']}  [{len(idea['hypotheses'])} hypotheses, best {best}]")
        lines += [f"      finding: {f}" for f in idea["findings"]]
    failures = [i for i in view["tree"] if i["status"] != "active"]
    if failures:
        lines.append("  failure memory:")
        lines += [f"    #{i['id']} {i['text']}  (dropped at step {i['pruned_step']}: {i['prune_reason']})" for i in failures]
    for r in view["rejected"][-5:]:
        lines.append(f"  rejected at step {r['step']}: {r['text']} ({r['reason']})")
    return lines
