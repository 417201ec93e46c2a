"""A scripted conversation that drives every operation of the idea memory (tests/test_memory*.py).

Run as a script (``python tests/memory_scenario.py RUN_DIR [SLEEP]``) it runs the scenario in
that directory, so a test can kill it with SIGKILL at a random moment and resume.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evoforge.llm.base import Backend, GenerationConfig, Prompt, Response  # noqa: E402
from evoforge.tasks.base import Direction, Task, Verdict  # noqa: E402

PROGRAM = "def solve():\n    x = 1\n    return [x]\n"
STEPS = 5

# (step, kind) -> the model's answer; a call with no entry gets "" (malformed)
PLAN = {
    (1, "propose"): "IDEA: use a grid layout\nIDEA: random restarts",
    (1, "select"): "1: #1\n2: #2",
    (2, "propose"): "IDEA: use a grid layout with jitter\nIDEA: simulated annealing",
    (2, "classify"): "N1: MERGE #1: a grid layout with small random jitter\nN2: NEW",
    (2, "select"): "1: #3\n2: #9",  # unknown id -> malformed, the least-tested idea instead
    (2, "summarise"): "#3: annealing helps a little; too slow at high temperature",
    (3, "propose"): "IDEA: gradient descent on positions",
    (3, "select"): "1: #4\n2: #1",
    (3, "summarise"): "I would rather not.",  # malformed -> a finding from the numbers
    (3, "prune"): "DROP #2: useless: random restarts never beat the parent",
    (4, "propose"): "IDEA: random restarts of the layout\nIDEA: hexagonal lattice packing",  # 1st repeats #2
    (4, "select"): "garbage",
    (4, "summarise"): "#5: hexagons fit well",
    (4, "prune"): "DROP #42: explored: nothing left",  # unknown id -> the numbers pick
    (5, "propose"): "I think we should try harder.",
    (5, "select"): "1: #4\n2: #5",
}
KIND_MARKERS = (("Propose up to", "propose"), ("free of duplicates", "classify"),
                ("choose the idea it should test", "select"), ("Summarise what its attempts", "summarise"),
                ("must be dropped", "prune"))


def trivial_task() -> Task:
    return Task(name="trivial", description="Return [x]; larger x is better.", initial_program=PROGRAM,
                direction=Direction.MAX, verify=lambda o: Verdict.accept(float(o[0])), time_limit=10)


class Killed(BaseException):
    """Raised by the backend to stop the process where a kill would."""


class MemoryScript(Backend):
    """Memory prompts get PLAN's answers (by the step they name in Prompt.meta); code prompts get a valid
    edit setting x to a fresh integer, so every child is new, evaluated and better than the last
    step's."""

    name = "scripted-memory"

    def __init__(self, sleep: float = 0.0, kill_at: tuple[int, str] | None = None):
        self.calls: list[tuple[int, str]] = []
        self.code_prompts: list[Prompt] = []
        self.sleep = sleep
        self.kill_at = kill_at

    def generate(self, prompts: list[Prompt], cfg: GenerationConfig) -> list[list[Response]]:
        out = []
        for p in prompts:
            kind = p.meta.get("memory")
            if kind is not None:
                k = p.meta["step"]
                assert next(kk for marker, kk in KIND_MARKERS if marker in p.text) == kind  # the right template
                if self.kill_at == (k, kind):
                    raise Killed(f"killed at step {k} {kind}")
                self.calls.append((k, kind))
                time.sleep(self.sleep)
                out.append([Response(PLAN.get((k, kind), ""))])
                continue
            self.code_prompts.append(p)
            line = next(ln for ln in p.parent_code.splitlines() if ln.strip().startswith("x = "))
            group = []
            for j in range(cfg.n):  # a function of (step, prompt, response): the same after a resume
                x = 100 * int(cfg.seed or 0) + 10 * len(out) + j + 2  # cfg.seed = the step (run seed 0)
                group.append(Response(f"<<<<<<< SEARCH\n{line}\n=======\n    x = {x}\n>>>>>>> REPLACE\n"))
            out.append(group)
        return out


def make_engine(run_dir, backend: MemoryScript, pipeline: str = "lockstep", **overrides):
    from evoforge.engine import Engine, build_config

    cfg = build_config({"memory": {"enabled": True, "k_hyp": 2, "k_idea": 3, "propose": 2, "similarity": "lexical",
                                   "merge_floor": 0.3, "failure_threshold": 0.6}},
                       task="trivial", backend="scripted", budget=10_000, max_steps=STEPS, batch_size=2, n=2, picture_interval=1e9,
                       snapshot_interval=0.0, pipeline=pipeline, **overrides)
    return Engine(cfg, run_dir, task=trivial_task(), backend=backend)


def pool_of(engine):
    return engine.pipeline.get("memory").memory.pool


if __name__ == "__main__":
    run_dir, sleep = Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    make_engine(run_dir, MemoryScript(sleep=sleep), pipeline=sys.argv[3] if len(sys.argv) > 3 else "lockstep").run()
