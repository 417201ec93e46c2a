"""One step of PACEvolve's hierarchical context management, as ops on the idea pool.

``plan_front`` (before the prompts): propose -> check against the failure memory -> classify
(merge or add) -> select one idea per prompt. ``plan_tail`` (after the children are scored):
record each child as a hypothesis -> summarise ideas with more than K_hyp hypotheses -> prune
ideas beyond K_idea into the failure memory. The model is reached only through ``ask(kind,
text, grammar) -> answer`` (at most one call per kind per step: five calls a step, whatever B and n);
the planners work on a copy of the pool and return the ops, which the stage stores before it
applies them. A malformed answer is counted and replaced by the documented fallback.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from evoforge.embeddings import Embedder, cosine
from evoforge.memory import grammars as G
from evoforge.memory import protocol as P
from evoforge.memory.config import MemoryConfig
from evoforge.memory.pool import Idea, IdeaPool

Ask = Callable[[str, str, str], str]  # (kind, prompt text, GBNF grammar of the answer) -> answer


@dataclass
class Context:
    task: str  # the task's description, as the model should read it
    direction: str  # "larger" or "smaller"
    best: float | None
    templates: dict[str, Any]
    cfg: MemoryConfig
    embedder: Embedder


@dataclass
class FrontPlan:
    ops: list[dict[str, Any]] = field(default_factory=list)
    ideas: list[int | None] = field(default_factory=list)  # idea per pick
    contexts: list[str] = field(default_factory=list)  # the text each prompt carries


def _copy(pool: IdeaPool) -> IdeaPool:
    scratch = IdeaPool(pool.maximise)
    scratch.load_state_dict(pool.state_dict())
    return scratch


def _do(pool: IdeaPool, ops: list[dict[str, Any]], op: dict[str, Any]) -> None:
    pool.apply(op)
    ops.append(op)


def _malformed(pool: IdeaPool, ops: list[dict[str, Any]], kind: str) -> None:
    _do(pool, ops, {"op": "malformed", "kind": kind})


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.6g}"


def plan_front(pool: IdeaPool, ctx: Context, ask: Ask, k: int, n_picks: int) -> FrontPlan:
    cfg, t = ctx.cfg, ctx.templates
    work, plan = _copy(pool), FrontPlan()
    # 1. propose
    failures = "\n".join(f"- {i.text} (dropped: {i.prune_reason})" for i in work.failures()[-10:]) or "(none)"
    rejected = "\n".join(f"- {r['text']} ({r['reason']})" for r in work.rejected) or "(none)"
    answer = ask("propose", P.render(t["propose"], task=ctx.task, best=_fmt(ctx.best), direction=ctx.direction,
                                     pool=P.describe_pool(work), failures=failures, rejected=rejected,
                                     count=cfg.propose, max_chars=cfg.max_idea_chars), G.propose(cfg.propose))
    proposals, bad = P.parse_propose(answer, cfg.propose, cfg.max_idea_chars)
    if bad:
        _malformed(work, plan.ops, "propose")
    floor, fail_at = cfg.thresholds(ctx.embedder.name)
    # 2. the failure memory: a proposal close to a pruned idea is refused, with the reason
    kept: list[str] = []
    dead = work.failures()
    if proposals and dead:
        sims = cosine(ctx.embedder.embed(proposals), ctx.embedder.embed([i.text for i in dead]))
        for row, text in enumerate(proposals):
            j = int(sims[row].argmax())
            if sims[row, j] >= fail_at:
                _do(work, plan.ops, {"op": "reject", "text": text, "step": k,
                                     "reason": f"repeats dropped idea #{dead[j].id} ({dead[j].prune_reason})"})
            else:
                kept.append(text)
    else:
        kept = list(proposals)
    # 3. classify: a verbatim repeat is folded at once; for the rest embeddings pick the
    # candidates and the model decides merge or new
    kept = _fold_repeats(work, kept, plan.ops)
    _classify(work, ctx, ask, kept, k, floor, plan.ops)
    # 4. select one idea per prompt
    plan.ideas = _select(work, ctx, ask, n_picks, plan.ops)
    plan.contexts = [idea_context(work, i, t) for i in plan.ideas]
    return plan


def _norm(text: str) -> str:
    return " ".join("".join(c.lower() if c.isalnum() else " " for c in text).split())


def _fold_repeats(work: IdeaPool, kept: list[str], ops: list[dict[str, Any]]) -> list[str]:
    """Proposals that repeat an active idea word for word count as a merge into it (its text
    kept); repeats within the proposals are dropped."""
    active = {_norm(i.text): i for i in work.active()}
    out, seen = [], set()
    for text in kept:
        key = _norm(text)
        if key in active:
            _do(work, ops, {"op": "merge", "idea": active[key].id, "text": active[key].text})
        elif key and key not in seen:
            seen.add(key)
            out.append(text)
    return out


def _classify(work: IdeaPool, ctx: Context, ask: Ask, kept: list[str], k: int, floor: float,
              ops: list[dict[str, Any]]) -> None:
    cfg = ctx.cfg
    active = work.active()
    candidates: dict[int, list[int]] = {}
    if kept and active:
        sims = cosine(ctx.embedder.embed(kept), ctx.embedder.embed([i.text for i in active]))
        for row in range(len(kept)):
            order = [int(j) for j in sims[row].argsort()[::-1][: cfg.merge_candidates] if sims[row, j] >= floor]
            if order:
                candidates[row] = [active[j].id for j in order]
    decisions: dict[int, P.Decision] = {}
    if candidates:
        items = []
        for row, ids in candidates.items():
            items.append(f"N{row + 1}: {kept[row]}")
            items += [f"    candidate #{i}: {work.ideas[i].text}" for i in ids]
        answer = ask("classify", P.render(ctx.templates["classify"], items="\n".join(items)), G.classify(candidates))
        decisions, bad = P.parse_classify(answer, candidates, cfg.max_idea_chars)
        if bad:
            _malformed(work, ops, "classify")
    for row, text in enumerate(kept):
        d = decisions.get(row)
        if d is not None and d.merge_into is not None:
            _do(work, ops, {"op": "merge", "idea": d.merge_into, "text": d.text})
        else:  # no similar idea, the model said new, or its answer was unusable: keep the idea
            _do(work, ops, {"op": "add", "text": text, "step": k})


def _select(work: IdeaPool, ctx: Context, ask: Ask, n_picks: int, ops: list[dict[str, Any]]) -> list[int | None]:
    active = work.active()
    if not active:
        return [None] * n_picks
    answer = ask("select", P.render(ctx.templates["select"], task=ctx.task, pool=P.describe_pool(work),
                                    count=n_picks), G.select(n_picks, [i.id for i in active]))
    chosen, bad = P.parse_select(answer, n_picks, {i.id for i in active})
    if bad:
        _malformed(work, ops, "select")
    planned: dict[int, int] = {}
    for c in chosen:
        if c is not None:
            planned[c] = planned.get(c, 0) + 1
    out: list[int | None] = []
    for c in chosen:  # fallback: the least-tested idea, counting this step's picks
        if c is None:
            c = min(active, key=lambda i: (i.tested + planned.get(i.id, 0), i.id)).id
            planned[c] = planned.get(c, 0) + 1
        out.append(c)
    return out


def idea_context(pool: IdeaPool, idea_id: int | None, templates: dict[str, Any]) -> str:
    if idea_id is None:
        return ""
    idea = pool.ideas[idea_id]
    lines = [f"- {f}" for f in idea.findings[-3:]] + [f"- attempt: {h.finding}" for h in idea.hypotheses[-3:]]
    findings = ("What earlier attempts of this idea found:\n" + "\n".join(lines)) if lines else ""
    return P.render(templates["idea"], id=idea.id, text=idea.text, findings=findings).strip()


def plan_tail(pool: IdeaPool, ctx: Context, ask: Ask, k: int, ideas: Sequence[int | None],
              children: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """``children[i]``: the scored children of pick i (child, class, score, finding)."""
    cfg, work, ops = ctx.cfg, _copy(pool), []
    for idea, group in zip(ideas, children):
        if idea is None or idea not in work.ideas:
            continue
        for c in group:
            _do(work, ops, {"op": "record", "idea": idea, "step": k, **c})
    # hypothesis pruning
    full = [i for i in work.active() if len(i.hypotheses) > cfg.k_hyp]
    if full:
        items = "\n".join(f"#{i.id} {i.text}\n" + "\n".join(f"    {h.finding}" for h in i.hypotheses) for i in full)
        answer = ask("summarise", P.render(ctx.templates["summarise"], items=items, max_findings=3,
                                           max_chars=cfg.max_finding_chars), G.summarise([i.id for i in full], 3))
        found, bad = P.parse_summarise(answer, {i.id for i in full}, 3, cfg.max_finding_chars)
        if bad:
            _malformed(work, ops, "summarise")
        for i in full:
            _do(work, ops, {"op": "summarise", "idea": i.id, "findings": found.get(i.id) or [_fallback_finding(i, work.maximise)]})
    # idea pruning
    active = work.active()
    excess = len(active) - cfg.k_idea
    if excess > 0:
        answer = ask("prune", P.render(ctx.templates["prune"], task=ctx.task, count=excess,
                                       pool=P.describe_pool(work)), G.prune(excess, [i.id for i in active]))
        drops, bad = P.parse_prune(answer, excess, {i.id for i in active}, cfg.max_finding_chars)
        if bad:
            _malformed(work, ops, "prune")
        for idea in _fallback_drops(work, excess - len(drops), set(drops)):
            drops[idea.id] = f"fallback: {idea.tested} attempts, best {_fmt(idea.best)}"
        for idea_id, reason in drops.items():
            _do(work, ops, {"op": "prune", "idea": idea_id, "reason": reason, "step": k})
    return ops


def _fallback_finding(idea: Idea, maximise: bool) -> str:
    scores = [h.score for h in idea.hypotheses if h.score is not None]
    classes: dict[str, int] = {}
    for h in idea.hypotheses:
        classes[h.child_class] = classes.get(h.child_class, 0) + 1
    best = "no valid program" if not scores else f"best {_fmt(max(scores) if maximise else min(scores))}"
    return f"{len(idea.hypotheses)} attempts ({', '.join(f'{v} {k}' for k, v in sorted(classes.items()))}): {best}"


def _fallback_drops(pool: IdeaPool, count: int, taken: set[int]) -> list[Idea]:
    """The least promising by the numbers: tested ideas with the worst best score, most tried first."""
    if count <= 0:
        return []
    sign = -1.0 if pool.maximise else 1.0

    def badness(i: Idea) -> tuple:
        never_valid = i.best is None and i.tested > 0
        return (not never_valid, sign * -(i.best if i.best is not None else 0.0), -i.tested, i.id)

    tested = [i for i in pool.active() if i.id not in taken and i.tested > 0]
    rest = [i for i in pool.active() if i.id not in taken and i.tested == 0]
    return (sorted(tested, key=badness) + sorted(rest, key=lambda i: i.id))[:count]
