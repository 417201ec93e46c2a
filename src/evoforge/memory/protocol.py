"""The memory's conversation with the model: prompts from template files, answers parsed strictly.

Every parser returns what it could read and whether the answer was malformed (not the format
asked for, an unknown idea id, a finding longer than allowed). The caller counts malformed
answers per kind and falls back to a defined behaviour; nothing here raises on model text.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path

from evoforge.memory.pool import Idea, IdeaPool, clip

KINDS = ("propose", "classify", "select", "summarise", "prune")  # the model calls of one step
TEMPLATES = (*KINDS, "idea")  # idea: the context one code prompt carries
_DEFAULT_DIR = Path(__file__).parent / "templates"
_ID = r"#?\s*(\d+)"
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)  # reasoning models put their thoughts first


def load_templates(template_dir: str | Path | None = None) -> dict[str, string.Template]:
    """The five templates; a file of the same name in ``template_dir`` overrides the default."""
    out = {}
    for kind in TEMPLATES:
        user = Path(template_dir) / f"memory_{kind}.txt" if template_dir else None
        path = user if user is not None and user.is_file() else _DEFAULT_DIR / f"{kind}.txt"
        out[kind] = string.Template(path.read_text())
    return out


def render(template: string.Template, **values: object) -> str:
    try:
        return template.substitute({k: str(v) for k, v in values.items()})
    except (KeyError, ValueError) as exc:
        raise ValueError(f"memory template uses an unknown placeholder: {exc}") from None


def describe_pool(pool: IdeaPool, ideas: list[Idea] | None = None, *, findings: bool = True) -> str:
    lines = []
    for idea in ideas if ideas is not None else pool.active():
        best = "-" if idea.best is None else f"{idea.best:.6g}"
        lines.append(f"#{idea.id} [{idea.tested} attempts, best {best}] {idea.text}")
        if findings:
            lines += [f"    finding: {f}" for f in idea.findings[-3:]]
            lines += [f"    attempt: {h.finding}" for h in idea.hypotheses[-3:]]
    return "\n".join(lines) or "(none yet)"


def _lines(answer: str) -> list[str]:
    text = _THINK.sub("", answer or "")
    return [ln.strip().strip("*`").strip() for ln in text.splitlines() if ln.strip()]


def parse_propose(answer: str, max_count: int, max_chars: int) -> tuple[list[str], bool]:
    ideas = []
    for ln in _lines(answer):
        m = re.match(r"^(?:[-*\d.)\s]*)IDEA\s*[:\-]\s*(.+)$", ln, re.I)
        if m and m.group(1).strip():
            ideas.append(m.group(1).strip())
    malformed = not ideas or len(ideas) > max_count or any(len(i) > max_chars for i in ideas)
    return [clip(i, max_chars) for i in ideas[:max_count]], malformed


@dataclass
class Decision:
    new_index: int  # 0-based index of the new idea
    merge_into: int | None  # idea id, or None for NEW
    text: str = ""


def parse_classify(answer: str, candidates: dict[int, list[int]], max_chars: int) -> tuple[dict[int, Decision], bool]:
    """``candidates``: new-idea index -> the ids it may merge into. Missing lines or ids outside a
    new idea's candidates are malformed (the caller adds that idea as new)."""
    out: dict[int, Decision] = {}
    malformed = False
    for ln in _lines(answer):
        m = re.match(rf"^N\s*(\d+)\s*[:.)-]\s*(MERGE|NEW)\b\s*(?:{_ID})?\s*[:\-]?\s*(.*)$", ln, re.I)
        if not m:
            continue
        k = int(m.group(1)) - 1
        if k not in candidates and m.group(2).upper() == "NEW":
            continue  # a new idea with no similar one, called new: nothing to decide
        if k not in candidates or k in out:
            malformed = True
            continue
        if m.group(2).upper() == "NEW":
            out[k] = Decision(k, None)
            continue
        target = int(m.group(3)) if m.group(3) else None
        text = m.group(4).strip()
        if target not in candidates[k] or not text or len(text) > max_chars:
            malformed = True
            continue
        out[k] = Decision(k, target, text)
    if set(out) != set(candidates):
        malformed = True
    return out, malformed


def parse_select(answer: str, count: int, known: set[int]) -> tuple[list[int | None], bool]:
    """Idea id per attempt (None where the answer gave none or an unknown id)."""
    chosen: list[int | None] = [None] * count
    malformed = False
    for ln in _lines(answer):
        m = re.match(rf"^(\d+)\s*[:.)-]\s*(?:idea\s*)?{_ID}\b", ln, re.I)
        if not m:
            continue
        slot, idea = int(m.group(1)) - 1, int(m.group(2))
        if not 0 <= slot < count or idea not in known or chosen[slot] is not None:
            malformed = True
            continue
        chosen[slot] = idea
    if any(c is None for c in chosen):
        malformed = True
    return chosen, malformed


def parse_summarise(answer: str, ids: set[int], max_findings: int, max_chars: int) -> tuple[dict[int, list[str]], bool]:
    out: dict[int, list[str]] = {}
    malformed = False
    for ln in _lines(answer):
        m = re.match(rf"^{_ID}\s*[:.)-]\s*(.+)$", ln)
        if not m:
            continue
        idea = int(m.group(1))
        findings = [f.strip() for f in m.group(2).split(";") if f.strip()]
        if idea not in ids or idea in out or not findings or len(findings) > max_findings \
                or any(len(f) > max_chars for f in findings):
            malformed = True
            continue
        out[idea] = findings
    if set(out) != ids:
        malformed = True
    return out, malformed


def parse_prune(answer: str, count: int, known: set[int], max_chars: int) -> tuple[dict[int, str], bool]:
    out: dict[int, str] = {}
    malformed = False
    for ln in _lines(answer):
        m = re.match(rf"^DROP\s*{_ID}\s*[:\-]?\s*(.*)$", ln, re.I)
        if not m:
            continue
        idea, reason = int(m.group(1)), m.group(2).strip()
        if idea not in known or idea in out or not reason:
            malformed = True
            continue
        out[idea] = clip(reason, max_chars)
    if len(out) != count:
        malformed = True
    return dict(list(out.items())[:count]), malformed
