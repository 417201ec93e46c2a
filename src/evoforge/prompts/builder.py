"""Build the prompt for one pick: task meta information + parent (+ partner / inspirations) + instruction.

Templates are plain files read with ``string.Template`` ($name placeholders); a user overrides
any of them by putting a file of the same name in ``template_dir``. The parent program is always
the LAST ```python block of the text (the stand-in server and other tools read it from there).
"""
from __future__ import annotations

import json
import math
import string
from pathlib import Path
from typing import Any

from evoforge.database.base import Pick, Program
from evoforge.llm.base import Prompt
from evoforge.tasks.base import Direction, Task

TEMPLATE_NAMES = (
    "system.txt",
    "user.txt",
    "parent.txt",
    "partner.txt",
    "inspiration.txt",
    "instruction_diff.txt",
    "instruction_full.txt",
    "instruction_block.txt",
    "instruction_crossover.txt",
)
_DEFAULT_DIR = Path(__file__).parent / "templates"


class TemplateError(ValueError):
    """A prompt template is missing or uses a placeholder the builder does not provide."""


class PromptBuilder:
    def __init__(
        self,
        task: Task,
        mode: str = "diff",
        show_inspirations: bool = False,
        template_dir: str | Path | None = None,
        max_feedback_chars: int = 1500,
        grammar: bool = False,
    ):
        if mode not in ("diff", "full", "block"):
            raise ValueError(f"unknown prompt mode {mode!r} (expected 'diff', 'full' or 'block')")
        self.grammar = grammar  # attach the edit format's GBNF grammar (for constrained decoding)
        self.task = task
        self.mode = mode
        self.show_inspirations = show_inspirations
        self.max_feedback_chars = max_feedback_chars
        self.templates = load_templates(template_dir)

    def build(self, pick: Pick, context: str = "") -> Prompt:
        """``context``: text a front stage wants this prompt to carry (the idea to test), put
        right before the instruction."""
        task, parent = self.task, pick.parent
        inspirations = [p.code for p in pick.inspirations] if self.show_inspirations else []
        instruction = self._fill(f"instruction_{self.mode}.txt", {
            "entry": task.entry,
            "evolve_note": "Only change code between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END markers."
            if task.evolve_blocks
            else "",
        })
        if pick.partner is not None:
            instruction = self._fill("instruction_crossover.txt", {}) + "\n" + instruction
        target = task.target
        text = self._fill("user.txt", {
            "task_name": task.name,
            "description": task.description.strip(),
            "direction_word": "maximise" if task.direction is Direction.MAX else "minimise",
            "target": _fmt(target) if target is not None else "unknown",
            "inspirations": "".join(
                self._fill("inspiration.txt", {"index": i + 1, "score": _fmt(p.score), "code": p.code.rstrip()})
                for i, p in enumerate(pick.inspirations if self.show_inspirations else [])
            ),
            "partner": self._program("partner.txt", pick.partner) if pick.partner is not None else "",
            "parent": self._program("parent.txt", parent),
            "instruction": (f"{context.strip()}\n\n" if context.strip() else "") + instruction.strip(),
        })
        meta: dict[str, Any] = {}
        if self.grammar:
            from evoforge.edits.grammar import grammar_for

            meta["grammar"] = grammar_for(self.mode, parent.code, task.evolve_blocks)
        return Prompt(
            text=text,
            system=self._fill("system.txt", {}).strip(),
            parent_code=parent.code,
            inspirations=inspirations,
            partner_code=pick.partner.code if pick.partner is not None else None,
            meta={
                "task": task.name,
                "direction": task.direction.value,
                "parent_id": parent.id,
                "parent_score": parent.score,
                "target": target,
                "mode": self.mode,
                "evolve_blocks": task.evolve_blocks,
                **meta,
            },
        )

    def _program(self, name: str, program: Program) -> str:
        feedback = program.feedback.strip()[-self.max_feedback_chars :]
        return self._fill(name, {
            "score": _fmt(program.score),
            "metrics": _metrics(program.metrics),
            "feedback": f"Output of the last run:\n{feedback}\n" if feedback else "",
            "code": program.code.rstrip(),
        })

    def _fill(self, name: str, values: dict[str, Any]) -> str:
        try:
            return string.Template(self.templates[name]).substitute(values)
        except KeyError as exc:
            raise TemplateError(f"template {name} uses ${exc.args[0]}, which is not provided "
                                f"(available: {', '.join(sorted(values)) or 'none'})") from None
        except ValueError as exc:
            raise TemplateError(f"template {name} is malformed: {exc}") from None


def load_templates(template_dir: str | Path | None = None) -> dict[str, str]:
    """The default templates, each replaced by the file of the same name in ``template_dir``."""
    out = {name: (_DEFAULT_DIR / name).read_text(encoding="utf-8") for name in TEMPLATE_NAMES}
    if template_dir is not None:
        d = Path(template_dir)
        if not d.is_dir():
            raise TemplateError(f"template directory not found: {d}")
        for name in TEMPLATE_NAMES:
            if (d / name).is_file():
                out[name] = (d / name).read_text(encoding="utf-8")
    return out


def _fmt(x: float | None) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float) and math.isfinite(x):
        return f"{x:.10g}"
    return str(x)


def _metrics(metrics: dict[str, Any]) -> str:
    simple = {k: v for k, v in metrics.items() if isinstance(v, (int, float, str, bool)) and len(str(v)) < 80}
    if not simple:
        return ""
    return "Metrics: " + json.dumps(simple, default=str) + "\n"
