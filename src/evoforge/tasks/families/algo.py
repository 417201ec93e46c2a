"""Algorithm engineering: a compiled (C++) or Python program, run per test case under contest limits.

Verifier contract of this family:
* in the sandbox child (``evaluate_cases``, called by the task's evaluator stub): compile the
  program (g++ -O2, its own time limit), then run it once per fixed seed with the case's input
  on stdin, under the contest's wall-time and memory limits (``runner``); send back, per case,
  the status, the stdout and the tester's message;
* in the host (``verify``): regenerate each case from its seed, parse and score the output.
  A failed case scores 0 (ALE-Bench), the task score is the mean. A compile error is
  Status.SYNTAX, a program that fails every case gets its failure's class (time, memory,
  runtime error), with the compiler's / tester's message as the reason.
"""
from __future__ import annotations

import functools
import os
from collections import Counter
from typing import Any

from evoforge.tasks.base import Direction, Task, Verdict
from evoforge.tasks.families import netcapture, runner

SEEDS = tuple(range(1, 9))
CASE_TIME_S = {"cpp": 2.0, "python": 4.0}  # ALE-Bench/AHC: 2 s for C++; Python gets 2x (ours)
CASE_MEMORY_MB = 1024  # AHC: 1024 MB (here: address space, RLIMIT_AS, not resident memory)
COMPILE_TIME_S = 30.0
OUTPUT_KEEP = 200_000  # bytes of a case's stdout sent back (1000 vertices need ~14 kB)
# sandbox failure class for a program that fails every case
_CLASS = {runner.TIMEOUT: "timeout", runner.MEMORY: "memory", runner.CRASH: "crash", runner.OUTPUT: "crash"}


def evaluate_cases(program_path: str, language: str, seeds: tuple[int, ...] = SEEDS, case_time_s: float | None = None) -> dict[str, Any]:
    """Runs in the sandbox child: compile, then one run per seed. Returns plain JSON."""
    workdir = os.path.dirname(os.path.abspath(program_path))
    runner.protect_evaluator()
    argv, failure = runner.command_for(language, program_path, workdir, COMPILE_TIME_S)
    if argv is None:
        return {"compile": failure.as_dict(), "cases": []}
    cases = []
    for seed in seeds:
        run = runner.run_limited(argv, netcapture.input_text(seed), time_s=case_time_s or CASE_TIME_S[language],
                                 memory_mb=CASE_MEMORY_MB, workdir=workdir, tag=f"case{seed}")
        d = run.as_dict()
        d["stdout"] = d["stdout"][:OUTPUT_KEEP]
        d["seed"] = seed
        cases.append(d)
    return {"compile": None, "cases": cases}


def verify(value: Any, seeds: tuple[int, ...] = SEEDS) -> Verdict:
    """Runs in the host: score every case's output against its regenerated input."""
    if not isinstance(value, dict) or not isinstance(value.get("cases"), list):
        return Verdict.reject("evaluator result malformed (no 'cases' list)")
    comp = value.get("compile")
    if comp:
        return Verdict.reject(f"compile error:\n{str(comp.get('message', ''))[:runner.MESSAGE_BYTES]}",
                              failure_status="syntax", failure_class=runner.COMPILE)
    cases = value["cases"]
    if [c.get("seed") for c in cases if isinstance(c, dict)] != list(seeds):
        return Verdict.reject("evaluator result malformed (cases do not match the task's seeds)")
    scores, classes, first_fail, walls, rss = [], Counter(), "", [], []
    for c in cases:
        status = str(c.get("status"))
        walls.append(float(c.get("wall", 0.0)))
        rss.append(float(c.get("max_rss_mb", 0.0)))
        if status == runner.OK:
            s, why, _ = _score_case(c["seed"], str(c.get("stdout", "")))
            if why:
                status = "wrong_answer"
        else:
            s, why = 0.0, str(c.get("message", ""))[:600]
        classes[status] += 1
        scores.append(s)
        if why and not first_fail:
            first_fail = f"seed {c['seed']}: {status}: {why}"
    metrics: dict[str, Any] = {f"cases_{k}": v for k, v in sorted(classes.items())}
    metrics.update(case_min=min(scores), case_max=max(scores), max_case_time_s=max(walls), max_case_rss_mb=max(rss))
    if classes[runner.OK] == 0:
        worst = classes.most_common(1)[0][0]
        return Verdict.reject(first_fail, failure_status=_CLASS.get(worst, "invalid") if worst != "wrong_answer" else "invalid",
                              failure_class=worst, **metrics)
    mean = sum(scores) / len(scores)
    note = f"{len(scores) - classes[runner.OK]} of {len(scores)} cases failed (scored 0); first: {first_fail}" if first_fail else ""
    return Verdict(True, float(mean), note, metrics)


@functools.lru_cache(maxsize=4096)
def _score_case(seed: int, output: str) -> tuple[float, str, dict]:
    return netcapture.score_case(seed, output)


_EVAL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "evaluators")


def description(language: str) -> str:
    lang = {"cpp": "C++17 (g++ -std=gnu++17 -O2)", "python": "Python 3 (numpy available)"}[language]
    return "\n".join([
        "Net capture: an algorithm-engineering (heuristic contest) task of evoforge's own design, in the spirit of "
        "AtCoder's ahc039; it is NOT AtCoder's problem, tester or data, and scores are not comparable. Goal: maximise the score.",
        f"Your program is a complete {lang} program: it reads one test case from stdin and prints the answer to stdout.",
        f"Input: N (= {netcapture.N_POINTS}), then N lines 'x y' of target points, then N lines 'x y' of penalty points; "
        f"integer coordinates in [0, {netcapture.L}], all distinct. Targets form a few clusters; penalty points form other clusters plus uniform noise.",
        f"Output: m, then m lines 'x y': the vertices, in order, of a simple rectilinear polygon (edges alternately horizontal and "
        f"vertical, integer coordinates in [0, {netcapture.L}], 4 <= m <= {netcapture.MAX_VERTICES}, perimeter <= {netcapture.MAX_PERIMETER}, "
        "no edge touching or crossing a non-adjacent edge).",
        "Score of a case: max(0, a - b) / N, where a targets and b penalty points lie inside or on the polygon. "
        f"Task score: the mean over {len(SEEDS)} fixed seeds; a case that fails (compile error, crash, wrong answer, "
        "time or memory limit) scores 0.",
        f"Limits per case: {CASE_TIME_S[language]:g} s wall clock, {CASE_MEMORY_MB} MB address space; compile {COMPILE_TIME_S:g} s. "
        "No network; only the working directory is writable. Only code between the EVOLVE-BLOCK markers may change.",
        "Hints: build the polygon from grid cells (prefix sums make any rectangle's a - b O(1)), grow or merge several rectangles "
        "into one orthogonal polygon, and improve it by local search or simulated annealing under the time limit.",
    ])


def build(language: str) -> Task:
    from evoforge.tasks.catalog import load_program

    name = {"cpp": "net-capture-cpp", "python": "net-capture-py"}[language]
    program = load_program({"cpp": "net_capture.cpp", "python": "net_capture.py"}[language])
    limit = COMPILE_TIME_S + len(SEEDS) * (CASE_TIME_S[language] + 0.5) + 10
    return Task(
        name=name, description=description(language), initial_program=program, direction=Direction.MAX,
        verify=verify, object_kind="generic", family="algorithm-engineering",
        best_human=None, best_ai=None, initial_score=INITIAL[language],
        time_limit=limit, memory_mb=4096, evolve_blocks=True,
        evaluator_path=_evaluator(name), language=language,
        params={"program_suffix": ".cpp" if language == "cpp" else ".py", "seeds": list(SEEDS), "case_time_s": CASE_TIME_S[language], "case_memory_mb": CASE_MEMORY_MB,
                "upper_bound": 1.0},  # every target, no penalty point
    )


def _evaluator(name: str):
    from pathlib import Path

    return Path(_EVAL_DIR) / f"{name.replace('-', '_')}.py"


INITIAL = {"cpp": 0.37287499999999996, "python": 0.37287499999999996}  # the same greedy; tests re-run both
