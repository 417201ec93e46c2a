"""The ``builtin`` backend: a MODEL-FREE mutation operator that writes SEARCH/REPLACE responses.

It is a search operator, not a language model. It reads the parent program (``Prompt.parent_code``)
and, when given, a crossover partner or inspirations, applies one or a few syntax-level mutations
(numeric jitter at several scales, operator swaps, marked alternatives, new constants, statement
duplication/deletion, crossover) and writes them as genuine SEARCH/REPLACE blocks, so parsing,
applying, early checks and penalties run exactly as with a model. Now and then it answers like a
careless model (no block, a misquoted SEARCH, a no-op, a syntax error) so that every penalty is
exercised. It knows Python's syntax, never a task's answer.

Deterministic: response j of prompt i depends only on (cfg.seed, i, j, parent code) when the
engine passes a per-step seed (a resumed run replays exactly), else on (seed, c, i, j, parent
code) for the c-th ``generate`` call.

Defaults tuned on CP-26 at 300 evaluations with the paper's database (where most parents are
the seed program itself, so bold, coupled changes pay) and checked on other tasks; see
benchmarks/tune_builtin_mutator.py.
"""
from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass

import numpy as np

from evoforge.edits.diff import find_matches
from evoforge.llm import crossover as X
from evoforge.llm import mutations as M
from evoforge.llm.base import BACKENDS, Backend, GenerationConfig, Prompt, Response


@functools.lru_cache(maxsize=256)
def _source(code: str) -> M.Source:
    """The parsed view of a program (read-only to the operators): n responses to one parent,
    and parents drawn again and again, tokenize it once."""
    return M.Source(code)


# Relative weights of the operators (renormalised over those that apply to the code at hand).
DEFAULT_WEIGHTS: dict[str, float] = {
    "perturb_number": 0.55,
    "swap_alternative": 0.10,
    "introduce_constant": 0.07,
    "swap_operator": 0.06,
    "edit_list": 0.05,
    "duplicate_statement": 0.07,
    "delete_statement": 0.02,
    "crossover": 0.15,  # only when a partner or inspirations are given
}
_SOLO = {
    "perturb_number": M.perturb_number,
    "swap_alternative": M.swap_alternative,
    "introduce_constant": M.introduce_constant,
    "swap_operator": M.swap_operator,
    "edit_list": M.edit_list,
    "duplicate_statement": M.duplicate_statement,
    "delete_statement": M.delete_statement,
}


@dataclass
class Mutation:
    text: str  # the response, as a model would write it
    code: str  # the program the blocks produce (for tests and tuning)
    steps: list[str]  # what was done, one line per block
    kind: str  # "edit" or the careless kind: "no_block", "misquote", "noop", "syntax"


@BACKENDS.register("builtin")
class BuiltinMutator(Backend):
    """Model-free mutation operator (see module docstring).

    Options: seed, p_careless (share of careless answers), max_blocks (per response),
    p_extra_block (chance of one more block after each),
    weights (operator -> relative weight), p_large (share of numeric jumps vs small steps for a
    round literal; halved for one written with 4+ significant digits), p_coupled (share of
    numeric mutations that change every copy of the literal).
    """

    name = "builtin"
    # Cheap responses: many small steps evolve faster than ThetaEvolve's 32 x 16 batches.
    preferred_batch = (8, 4)

    def __init__(
        self,
        seed: int = 0,
        p_careless: float = 0.03,
        max_blocks: int = 4,
        weights: dict[str, float] | None = None,
        p_large: float = 0.6,
        p_coupled: float = 0.6,
        p_extra_block: float = 0.45,
        **_: object,
    ):
        for name, p in (("p_careless", p_careless), ("p_large", p_large), ("p_coupled", p_coupled),
                        ("p_extra_block", p_extra_block)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {p}")
        self.seed = int(seed)
        self.p_careless = p_careless
        self.p_large = float(p_large)  # share of numeric mutations that jump rather than step
        self.p_coupled = float(p_coupled)  # share that change every copy of the literal at once
        self.max_blocks = max(1, int(max_blocks))
        self.p_extra_block = float(p_extra_block)  # one more block after each: geometric count
        self.weights = {**DEFAULT_WEIGHTS, **(weights or {})}
        unknown = set(self.weights) - set(DEFAULT_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown mutation operator(s) {sorted(unknown)} (known: {sorted(DEFAULT_WEIGHTS)})")
        self._calls = 0

    def generate(self, prompts: list[Prompt], cfg: GenerationConfig) -> list[list[Response]]:
        # The engine passes a per-step seed, which makes a resumed run replay exactly; the call
        # counter only separates calls that come without one.
        seed = self.seed if cfg.seed is None else int(cfg.seed)
        call = self._calls if cfg.seed is None else 0
        self._calls += 1
        out: list[list[Response]] = []
        for i, prompt in enumerate(prompts):
            crc = zlib.crc32(prompt.parent_code.encode())
            row = []
            for j in range(cfg.n):
                rng = np.random.default_rng([abs(seed), call, i, j, crc])
                others = ([prompt.partner_code] if prompt.partner_code else []) + list(prompt.inspirations)
                m = self.mutate(prompt.parent_code, rng, others)
                row.append(Response(m.text, prompt_tokens=len(prompt.text) // 4, completion_tokens=len(m.text) // 4))
            out.append(row)
        return out

    # ---- one response -------------------------------------------------------------------------

    def mutate(self, parent: str, rng: np.random.Generator, others: list[str] | None = None) -> Mutation:
        others = [o for o in (others or []) if o and o != parent]
        if rng.random() < self.p_careless:
            careless = self._careless(parent, rng)
            if careless is not None:
                return careless
        k = 1
        while k < self.max_blocks and rng.random() < self.p_extra_block:
            k += 1
        code, blocks, steps = parent, [], []
        for _ in range(k):
            src = _source(code)
            edit = self._one_edit(src, rng, others)
            if edit is None:
                continue
            block, code = _block_for(src, edit)
            if block:
                blocks.append(block)
                steps.append(edit.what)
        if not blocks:  # nothing applies to this program: say so, as a model would (no block)
            return Mutation("I could not find anything to change in this program.", parent, [], "no_block")
        text = "Changes: " + "; ".join(steps) + ".\n\n" + "\n\n".join(blocks) + "\n"
        return Mutation(text, code, steps, "edit")

    def _one_edit(self, src: M.Source, rng: np.random.Generator, others: list[str]) -> M.Edit | None:
        names = [n for n, w in self.weights.items() if w > 0 and (n != "crossover" or others)]
        # Try operators in weighted random order until one applies.
        while names:
            w = np.array([self.weights[n] for n in names], dtype=float)
            name = names[int(rng.choice(len(names), p=w / w.sum()))]
            names.remove(name)
            if name == "crossover":
                other = others[int(rng.integers(len(others)))]
                op = X.crossover_function if rng.random() < 0.3 else X.crossover_lines
                edit = op(src, other, rng) or X.crossover_lines(src, other, rng)
            elif name == "perturb_number":
                edit = M.perturb_number(src, rng, self.p_large, self.p_coupled)
            else:
                edit = _SOLO[name](src, rng)
            if edit is not None:
                return edit
        return None

    def _careless(self, parent: str, rng: np.random.Generator) -> Mutation | None:
        kind = ["no_block", "misquote", "noop", "syntax"][int(rng.integers(4))]
        src = _source(parent)
        lines = [i for i in src.editable if src.lines[i].strip() and not src.lines[i].lstrip().startswith("#")]
        if kind == "no_block" or not lines:
            return Mutation("The program looks fine; I would keep it as it is.", parent, [], "no_block")
        i = lines[int(rng.integers(len(lines)))]
        line = src.lines[i]
        if kind == "misquote":  # quotes a line that is not in the program
            wrong = line.replace("(", "( ", 1) if "(" in line else line + "  # tuned"
            text = _format_block([wrong], [wrong.rstrip() + "  # tuned"])
            return Mutation("Tune this line.\n\n" + text, parent, ["misquoted SEARCH"], "misquote")
        edit = M.Edit(i, i + 1, (line,), "no-op") if kind == "noop" else _break_line(i, line)
        block, code = _block_for(src, edit)
        if not block:
            return None
        return Mutation("Small fix.\n\n" + block, code, [edit.what], kind)


def _break_line(i: int, line: str) -> M.Edit:
    for ch in (")", "]", ":"):
        k = line.rfind(ch)
        if k >= 0:
            return M.Edit(i, i + 1, (line[:k] + line[k + 1 :],), f"drop '{ch}' on line {i + 1}")
    return M.Edit(i, i + 1, (line + " +",), f"dangling operator on line {i + 1}")


def _block_for(src: M.Source, edit: M.Edit) -> tuple[str, str]:
    """A SEARCH/REPLACE block for ``edit`` whose SEARCH is unique in the code, and the new code."""
    lines = src.lines
    a, b = edit.start, edit.end
    while True:
        search = lines[a:b]
        if search and any(s.strip() for s in search) and len(find_matches(lines, _trim_blank(search))) == 1:
            break
        if a == 0 and b == len(lines):
            return "", src.code
        # Grow the context by one line, above first, then below.
        if a > 0 and (b == len(lines) or (edit.start - a) <= (b - edit.end)):
            a -= 1
        else:
            b += 1
    before, after = lines[a : edit.start], lines[edit.end : b]
    replace = before + list(edit.new_lines) + after
    # Blank context at the edges is ignored by the matcher: trim it from both sides alike.
    while search and not search[0].strip() and replace and replace[0] == search[0]:
        search, replace = search[1:], replace[1:]
    while search and not search[-1].strip() and replace and replace[-1] == search[-1]:
        search, replace = search[:-1], replace[:-1]
    new_lines = lines[: edit.start] + list(edit.new_lines) + lines[edit.end :]
    code = "\n".join(new_lines) + ("\n" if src.code.endswith("\n") else "")
    return _format_block(search, replace), code


def _trim_blank(search: list[str]) -> list[str]:
    while search and not search[0].strip():
        search = search[1:]
    while search and not search[-1].strip():
        search = search[:-1]
    return search


def _format_block(search: list[str], replace: list[str]) -> str:
    return "<<<<<<< SEARCH\n" + "\n".join(search) + "\n=======\n" + "\n".join(replace) + "\n>>>>>>> REPLACE"
