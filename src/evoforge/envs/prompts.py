"""The three prompts the policy answers (generator, reviewer, solver) and reading its answers.

Each prompt starts with a role tag ([generator], [reviewer], [solver]) and ends with its
instruction: the single policy plays all three roles, and this is how it (and a test's tiny
model) tells them apart.
"""
from __future__ import annotations

import re

from evoforge.llm.base import Prompt

GENERATOR = """[generator]
You write Python training environments for a reasoning model. An environment is ONE subclass of
evoforge.envs.VerifiableEnvironment with:
  name: a short identifier; max_difficulty: difficulties are 1..max_difficulty
  generate(seed, difficulty) -> (instance, answer): deterministic (build random.Random from seed and
      difficulty; never time, unseeded randomness or hash order); instance and answer are JSON values
  render(instance) -> str: the question, which must not reveal the answer
  score(instance, answer_text) -> 1.0 when the text is a correct answer, else 0.0 (parse the text
      yourself, never raise)
Good environments are either algorithmic (code computes the answer: dynamic programmes, graph
search, recurrences) or verification tasks (hard to solve, easy to check: a witness is planted).

{examples}
Write ONE new environment, different from the examples, as a complete file in a single ```python block."""

EXAMPLE = "### Example {i}\n```python\n{code}```\n"

REVIEWER = """[reviewer]
Review this training environment for a reasoning model.
```python
{code}```
A question it asks:
{question}
Its reference answer: {answer}

Reject it if the question is ill-posed, if the reference answer is not a correct answer to the
question, if score accepts wrong answers or rejects right ones, or if the task is trivial.
Reply ACCEPT or REJECT on the first line, then one sentence why."""

SOLVER = "[solver]\n{question}\nEnd your reply with the answer."


def generator_prompt(examples: list[str]) -> Prompt:
    shown = "\n".join(EXAMPLE.format(i=i + 1, code=c if c.endswith("\n") else c + "\n") for i, c in enumerate(examples))
    return Prompt(text=GENERATOR.format(examples=shown), meta={"role": "generator"})


def reviewer_prompt(code: str, question: str, answer: str) -> Prompt:
    code = code if code.endswith("\n") else code + "\n"
    return Prompt(text=REVIEWER.format(code=code, question=question[:4000], answer=answer[:400]),
                  meta={"role": "reviewer"})


def solver_prompt(question: str) -> Prompt:
    return Prompt(text=SOLVER.format(question=question), meta={"role": "solver"})


_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.S)


def extract_code(text: str) -> str:
    """The longest fenced block of a generator response, else the whole response."""
    blocks = _FENCE.findall(text)
    return max(blocks, key=len) if blocks else text


def review_verdict(text: str, unclear_accepts: bool = False) -> bool:
    """True = accept: the first ACCEPT/REJECT word decides; neither counts as ``unclear_accepts``."""
    m = re.search(r"\b(ACCEPT|REJECT)", text.upper())
    return unclear_accepts if m is None else m.group(1) == "ACCEPT"
