"""The sandbox's contract: run untrusted code, return a structured result.

The sandbox knows nothing of tasks or models: it runs a program's entry function (or an
OpenEvolve-style evaluator on the program's file) in an isolated, limited process and hands
back a JSON-decoded value. Scoring happens elsewhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterator, Protocol, Sequence

from evoforge.registry import Registry


class Status(str, Enum):
    OK = "ok"
    SYNTAX = "syntax"  # does not compile
    CRASH = "crash"  # raised, exited early, returned nothing usable
    TIMEOUT = "timeout"
    MEMORY = "memory"
    KILLED = "killed"  # died by a signal (segfault, SIGKILL, ...)
    INVALID = "invalid"  # ran fine, but the verifier rejected the object (set by the caller)

    @property
    def no_solution(self) -> bool:
        return self in (Status.SYNTAX, Status.CRASH, Status.TIMEOUT, Status.MEMORY, Status.KILLED)


@dataclass(frozen=True)
class EvalRequest:
    code: str
    entry: str = "solve"  # call this function with no arguments; its return value is the result
    # OpenEvolve protocol: if set, the code is written to a file and this evaluator's
    # evaluate(path) -> dict is called on it (or its evaluate_stage1/2/3 cascade, stopping
    # when a stage's combined_score falls below the matching threshold).
    evaluator_path: str | None = None
    cascade_thresholds: tuple[float, ...] = ()
    # "python": the code is a Python program (compiled first: a syntax error is Status.SYNTAX).
    # Anything else (e.g. "cpp", issue 16): the code is only a file for the evaluator, which
    # compiles/runs it itself inside the confined child; needs evaluator_path.
    language: str = "python"
    # issue 10 (OpenEvolve compatibility):
    cascade: bool = True  # False: evaluate() only, as OpenEvolve with cascade_evaluation: false
    program_suffix: str = ".py"  # the program file's extension, handed to the evaluator as it is
    env: tuple[tuple[str, str], ...] = ()  # variables the task hands to the evaluator (nothing else of the host's)
    scratch: bool = False  # the evaluator runs in a writable copy of its folder (its cwd)
    timeout: float = 60.0  # wall-clock seconds
    memory_mb: int = 2048  # address-space limit
    max_output_bytes: int = 1 << 16  # stdout/stderr kept per stream (the tail)
    max_result_bytes: int = 64 << 20


@dataclass
class SandboxResult:
    status: Status
    value: Any = None  # the entry's return value, JSON-decoded (lists, dicts, numbers)
    error: str = ""  # one-paragraph reason (exception line, signal, limit hit)
    stdout: str = ""  # tail
    stderr: str = ""  # tail
    wall_time: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class Executor(Protocol):
    """Runs requests, possibly in parallel. The engine stores each result as it arrives
    (``run_iter``); ``run_many`` is the same in request order. Picked by name from EXECUTORS
    (config ``executor``); a factory takes the run's ``workers`` and ``executor_options``."""

    def run_iter(self, requests: Sequence[EvalRequest]) -> Iterator[tuple[int, SandboxResult]]:
        """(index into requests, result) for each request, in the order they finish."""
        ...

    def run_many(self, requests: Sequence[EvalRequest]) -> list[SandboxResult]: ...

    def close(self) -> None: ...


EXECUTORS: Registry[Executor] = Registry("executor")


@EXECUTORS.register("sandbox")
def _sandbox_pool(workers: int = 2, **options: Any) -> Executor:
    """The local pool of confined worker processes (sandbox/pool.py)."""
    from evoforge.sandbox.pool import SandboxPool

    return SandboxPool(workers=workers, **options)
