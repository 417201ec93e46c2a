"""Run a task's program in the sandbox and score what it returns.

This is the one place where tasks meet the sandbox: the program runs isolated, and the
verifier runs here, in the host, on the JSON-decoded object.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from evoforge.sandbox.base import EvalRequest, Executor, SandboxResult, Status
from evoforge.tasks.base import Task, Verdict


@dataclass
class Evaluation:
    status: Status  # OK, INVALID, or one of the no-solution statuses
    score: float | None = None  # set iff status is OK
    reason: str = ""  # why it failed, for the model's feedback
    metrics: dict[str, Any] = field(default_factory=dict)
    object: Any = None  # the construction (builtin tasks)
    stdout: str = ""
    stderr: str = ""
    wall_time: float = 0.0

    @property
    def valid(self) -> bool:
        return self.status is Status.OK

    def feedback(self, limit: int = 1500) -> str:
        """Short text for the next prompt: the reason, then the program's own output."""
        parts = [self.reason] if self.reason else []
        if self.stdout.strip():
            parts.append("stdout:\n" + self.stdout[-limit:])
        if self.stderr.strip():
            parts.append("stderr:\n" + self.stderr[-limit:])
        return "\n".join(parts)


def request_for(task: Task, code: str, timeout: float | None = None) -> EvalRequest:
    return EvalRequest(
        code=code,
        entry=task.entry,
        evaluator_path=str(task.evaluator_path) if task.evaluator_path else None,
        cascade_thresholds=tuple(task.params.get("cascade_thresholds", ())),
        timeout=timeout if timeout is not None else task.time_limit,
        memory_mb=task.memory_mb,
        language=task.language,
    )


def score_result(task: Task, res: SandboxResult) -> Evaluation:
    """Turn a sandbox result into an Evaluation: verify the object, or read the evaluator's dict."""
    base = dict(stdout=res.stdout, stderr=res.stderr, wall_time=res.wall_time)
    if res.status is not Status.OK:
        return Evaluation(res.status, reason=res.error or res.status.value, **base)
    if task.verify is not None:
        try:
            verdict = task.verify(res.value)
        except Exception as exc:  # a verifier must never take the host down
            verdict = Verdict.reject(f"verifier could not read the object: {type(exc).__name__}: {exc}")
        status = Status.OK if verdict.valid else _failure_status(verdict)
        return Evaluation(status, verdict.score, verdict.reason, verdict.metrics, res.value, **base)
    return _from_evaluator_dict(res.value, base)


def _failure_status(verdict: Verdict) -> Status:
    """INVALID, unless a family verifier (tasks/families/) names a no-solution class: a compile error
    is SYNTAX, a program that timed out on every test case TIMEOUT, ... (same penalty ladder)."""
    named = verdict.metrics.get("failure_status")
    if isinstance(named, str) and named in {s.value for s in Status} and Status(named).no_solution:
        return Status(named)
    return Status.INVALID


def _from_evaluator_dict(value: Any, base: dict[str, Any]) -> Evaluation:
    """OpenEvolve semantics: fitness is combined_score, else the mean of numeric metrics."""
    if not isinstance(value, dict):
        return Evaluation(Status.INVALID, reason=f"evaluator returned {type(value).__name__}, not a dict", **base)
    numeric = {k: float(v) for k, v in value.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if value.get("error"):
        return Evaluation(Status.INVALID, reason=str(value["error"])[:500], metrics=numeric, **base)
    if "combined_score" in numeric:
        score = numeric["combined_score"]
    elif numeric:
        score = sum(numeric.values()) / len(numeric)
    else:
        return Evaluation(Status.INVALID, reason="evaluator returned no numeric metric", metrics=value, **base)
    if not math.isfinite(score):
        return Evaluation(Status.INVALID, reason=f"combined_score is not finite ({score})", metrics=numeric, **base)
    return Evaluation(Status.OK, score, "", numeric, None, **base)


def evaluate_many(task: Task, codes: Sequence[str], executor: Executor, timeout: float | None = None) -> list[Evaluation]:
    results = executor.run_many([request_for(task, c, timeout) for c in codes])
    return [score_result(task, r) for r in results]


def evaluate_program(task: Task, code: str, executor: Executor, timeout: float | None = None) -> Evaluation:
    return evaluate_many(task, [code], executor, timeout)[0]
