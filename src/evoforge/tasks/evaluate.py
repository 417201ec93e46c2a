"""Run a task's program in the sandbox and score what it returns.

This is the one place where tasks meet the sandbox: the program runs isolated, and the
verifier runs here, in the host, on the JSON-decoded object.
"""
from __future__ import annotations

import logging
import math
import os
import reprlib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Sequence

from evoforge.database.sanitize import bound_metrics, number
from evoforge.sandbox.base import EvalRequest, Executor, SandboxResult, Status
from evoforge.sandbox.protocol import ARTIFACTS_KEY
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
    artifacts_in_prompt: bool = True  # OpenEvolve's prompt.include_artifacts

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
        artifacts = self.metrics.get(ARTIFACTS) if self.artifacts_in_prompt else None
        if isinstance(artifacts, dict):  # last: the prompt keeps the tail of this text
            parts.extend(f"### {k}\n{str(v)[:limit]}" for k, v in artifacts.items())
        return "\n".join(parts)


ARTIFACTS = "artifacts"  # metrics key holding an evaluator's artifacts (OpenEvolve's EvaluationResult.artifacts)
_ARTIFACTS_BYTES = 32 << 10  # per child, in run.db (OpenEvolve: 20 KB per artifact in the prompt)
_SCRATCH_MAX_BYTES, _SCRATCH_MAX_FILES = 64 << 20, 5000
log = logging.getLogger(__name__)
_warned: set[str] = set()


def _warn_once(key: str, msg: str) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(msg)


@lru_cache(maxsize=64)
def scratch_fits(folder: str) -> bool:
    """Whether an evaluator's folder is small enough to copy for every evaluation."""
    size = files = 0
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".git")]
        files += len(names)
        for n in names:
            try:
                size += os.lstat(os.path.join(root, n)).st_size
            except OSError:
                pass
        if size > _SCRATCH_MAX_BYTES or files > _SCRATCH_MAX_FILES:
            _warn_once(f"scratch:{folder}", f"evaluator folder {folder} is over {_SCRATCH_MAX_BYTES >> 20} MB or "
                       f"{_SCRATCH_MAX_FILES} files: evaluators run in it read-only, not in a writable copy")
            return False
    return True


def request_for(task: Task, code: str, timeout: float | None = None) -> EvalRequest:
    ev = str(task.evaluator_path) if task.evaluator_path else None
    return EvalRequest(
        code=code,
        entry=task.entry,
        evaluator_path=str(task.evaluator_path) if task.evaluator_path else None,
        cascade_thresholds=tuple(task.params.get("cascade_thresholds", ())),
        timeout=timeout if timeout is not None else task.time_limit,
        memory_mb=task.memory_mb,
        language=task.language,
        cascade=bool(task.params.get("cascade", True)),
        program_suffix=str(task.params.get("program_suffix", ".py")),
        env=tuple(sorted((task.params.get("env") or {}).items())),
        scratch=bool(ev and task.params.get("scratch", True) and scratch_fits(os.path.dirname(ev))),
    )


def score_result(task: Task, res: SandboxResult) -> Evaluation:
    """Turn a sandbox result into an Evaluation: verify the object, or read the evaluator's dict."""
    base = dict(stdout=res.stdout, stderr=res.stderr, wall_time=res.wall_time)
    if res.status is not Status.OK:
        reason = res.error or res.status.value
        if res.status in (Status.MEMORY, Status.KILLED) and task.evaluator_path is not None and "limit" not in reason:
            reason += (f" [memory limit {task.memory_mb} MB of address space: raise it with --memory-mb, "
                       "evaluator.memory_limit_mb or memory_mb in task.toml]")
        return Evaluation(res.status, reason=reason, **base)
    if task.verify is not None:
        try:
            verdict = task.verify(res.value)
        except Exception as exc:  # a verifier must never take the host down
            verdict = Verdict.reject(f"verifier could not read the object: {type(exc).__name__}: {exc}")
        status = Status.OK if verdict.valid else _failure_status(verdict)
        return Evaluation(status, verdict.score, verdict.reason, bound_metrics(verdict.metrics), res.value, **base)
    base["artifacts_in_prompt"] = bool(task.params.get("artifacts_in_prompt", True))
    return _from_evaluator_dict(res.value, base, task.name, bool(task.params.get("artifacts", True)))


def failed_seed(ev: Evaluation) -> Evaluation:
    """OpenEvolve's treatment of an initial program that fails: metrics {error: 0.0}, score 0.0."""
    why = f"the initial program failed ({ev.status.value}): {ev.reason or ev.stderr[-300:]}"
    return replace(ev, status=Status.OK, score=0.0, reason=why, metrics={"error": 0.0})


def _failure_status(verdict: Verdict) -> Status:
    """INVALID, unless a family verifier (tasks/families/) names a no-solution class: a compile error
    is SYNTAX, a program that timed out on every test case TIMEOUT, ... (same penalty ladder)."""
    named = verdict.metrics.get("failure_status")
    if isinstance(named, str) and named in {s.value for s in Status} and Status(named).no_solution:
        return Status(named)
    return Status.INVALID


def _from_evaluator_dict(value: Any, base: dict[str, Any], task_name: str = "", keep_artifacts: bool = True) -> Evaluation:
    """OpenEvolve semantics: fitness is combined_score, else the mean of numeric metrics (warned once)."""
    if not isinstance(value, dict):
        return Evaluation(Status.INVALID, reason=f"evaluator returned {type(value).__name__}, not a dict", **base)
    value = dict(value)
    if isinstance(value.get("metrics"), dict) and set(value) <= {"metrics", "artifacts"}:
        value = {**value["metrics"], "artifacts": value.get("artifacts") or {}}  # EvaluationResult as a dict
    artifacts = value.pop(ARTIFACTS_KEY, None)
    if ARTIFACTS in value and not isinstance(value[ARTIFACTS], (int, float)):
        given = value.pop(ARTIFACTS)  # an "artifacts" entry of the dict: its items are artifacts
        artifacts = {**(given if isinstance(given, dict) else {ARTIFACTS: given}), **(artifacts or {})}
    # OpenEvolve keeps every non-numeric value as an artifact too (string metrics, lists, ...)
    extra = {str(k): v for k, v in value.items()
             if k != "error" and not isinstance(v, (int, float)) and v is not None}
    # number(): an int too large for a float is +-inf (then 'not finite' below), never an OverflowError
    numeric = bound_metrics({str(k): v if isinstance(v, float) else number(v) for k, v in value.items()
                             if isinstance(v, (int, float)) and not isinstance(v, bool)})
    flags = {str(k): v for k, v in value.items() if isinstance(v, bool)}
    arts = _artifacts({**extra, **(artifacts if isinstance(artifacts, dict) else {})}) if keep_artifacts else {}
    metrics = {**numeric, **flags, **({ARTIFACTS: arts} if arts else {})}
    if value.get("error"):
        return Evaluation(Status.INVALID, reason=str(value["error"])[:500], metrics=metrics, **base)
    if "combined_score" in numeric:
        score = numeric["combined_score"]
    elif numeric:
        # OpenEvolve's get_fitness_score: the mean of the numbers (flags and NaN left out, 'error' kept)
        used = {k: v for k, v in numeric.items() if not math.isnan(v)}
        _warn_once(f"mean:{task_name}", f"{task_name or 'evaluator'}: no combined_score; the fitness is the mean of "
                   f"{', '.join(sorted(used)) or 'nothing'} (OpenEvolve's rule). Return combined_score to choose it.")
        score = sum(used.values()) / len(used) if used else math.nan
    else:
        return Evaluation(Status.INVALID, reason="evaluator returned no numeric metric", metrics=bound_metrics(metrics), **base)
    if not math.isfinite(score):
        return Evaluation(Status.INVALID, reason=f"combined_score is not finite ({score})", metrics=metrics, **base)
    return Evaluation(Status.OK, score, "", metrics, None, **base)


_SHORT = reprlib.Repr()
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 64
_SHORT.maxstring = _SHORT.maxother = 2000
_SHORT.maxlevel = 4


def _artifacts(values: dict[str, Any]) -> dict[str, str]:
    """Text of each artifact, at most _ARTIFACTS_BYTES in all for one child (the rest cut, marked)."""
    out: dict[str, str] = {}
    room = _ARTIFACTS_BYTES
    for key, v in values.items():
        text = v if isinstance(v, str) else _SHORT.repr(v)  # a list of 10^6 numbers: its head, not 20 MB
        if len(text) > room:
            text = text[:max(room, 0)] + f"\n... ({len(text) - max(room, 0)} characters cut)"
        out[str(key)[:200]] = text
        room -= len(text)
        if room <= 0:
            break
    return out


def evaluate_many(task: Task, codes: Sequence[str], executor: Executor, timeout: float | None = None) -> list[Evaluation]:
    results = executor.run_many([request_for(task, c, timeout) for c in codes])
    return [score_result(task, r) for r in results]


def evaluate_program(task: Task, code: str, executor: Executor, timeout: float | None = None) -> Evaluation:
    return evaluate_many(task, [code], executor, timeout)[0]
