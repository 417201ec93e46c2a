"""Admission layers L1-L5 of a candidate environment, run in the sandbox (host side).

The candidate's text travels inside a request whose program is ``probe.py``; the sandbox
returns the probe's record as JSON. ``layer`` is the highest layer passed (0-5) and ``reason``
the first failure: L1 parse, L2 instantiate, L3 determinism (also in a second process with
another hash seed and shifted clocks), L4 non-triviality, L5 scoring contract.
"""
from __future__ import annotations

import json
import re
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from evoforge.sandbox import EvalRequest, Executor, SandboxResult, Status

LAYERS = ("L1 parse", "L2 instantiate", "L3 determinism", "L4 non-triviality", "L5 scoring")
PROBE_SOURCE = (Path(__file__).parent / "probe.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class CheckConfig:
    seeds: tuple[int, ...] = tuple(range(8))  # seeds per probed difficulty (1, middle, max)
    call_timeout: float = 2.0  # seconds for one generate / render / score call
    timeout: float = 60.0  # the whole check in the sandbox
    memory_mb: int = 1024
    max_prompt_chars: int = 16000
    constants: tuple[str, ...] = ("0", "1", "-1", "2", "yes", "no", "true", "false", "[]", "None")
    garbage: tuple[str, ...] = ("garbage", "[[[", "-", "\x00", "9" * 60, "ANSWER: ???")

    def plan(self) -> dict[str, Any]:
        return {"seeds": list(self.seeds), "call_timeout": self.call_timeout, "max_prompt_chars": self.max_prompt_chars,
                "constants": list(self.constants), "garbage": list(self.garbage),
                "cross_timeout": max(10.0, 0.75 * self.timeout)}  # an interpreter start on a loaded machine


@dataclass
class Admission:
    layer: int  # highest layer passed, 0-5
    reason: str = ""  # the first failure ('' when all five pass)
    name: str = ""  # the environment's name (when it got that far)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.layer == 5

    def to_json(self) -> dict[str, Any]:
        return dict(asdict(self), passed=self.passed)


def request(source: str, entry: str, plan: dict[str, Any], timeout: float, memory_mb: int) -> tuple[EvalRequest, str]:
    """A sandbox request running probe.py's ``entry`` on ``source``; also returns the marker nonce."""
    nonce = "@@evoenv-" + secrets.token_hex(6)
    code = (f"{PROBE_SOURCE}\n\n_SOURCE = {source!r}\n_PLAN = json.loads({json.dumps(plan)!r})\n"
            f"_NONCE = {nonce!r}\n")
    return EvalRequest(code=code, entry=entry, timeout=timeout, memory_mb=memory_mb), nonce


def _reached(stderr: str, nonce: str) -> int:
    """The layer the probe had started when it was stopped (from its stderr markers), 1 if none."""
    found = re.findall(re.escape(nonce) + r" L([1-5])", stderr)
    return int(found[-1]) if found else 1


def from_result(res: SandboxResult, nonce: str) -> Admission:
    if res.status is Status.OK and isinstance(res.value, dict) and isinstance(res.value.get("layer"), int):
        v = res.value
        layer = min(5, max(0, int(v["layer"])))
        stats = v.get("stats") if isinstance(v.get("stats"), dict) else {}
        return Admission(layer, str(v.get("reason", ""))[:500], str(v.get("name", ""))[:64], stats)
    started = _reached(res.stderr, nonce)
    what = {Status.TIMEOUT: "stopped by the sandbox", Status.MEMORY: "out of memory",
            Status.KILLED: "killed"}.get(res.status, "the check crashed")
    return Admission(started - 1, f"{LAYERS[started - 1]}: {what}: {res.error}"[:500])


def check_sources(sources: Sequence[str], executor: Executor, cfg: CheckConfig | None = None) -> list[Admission]:
    """L1-L5 for each source, in parallel on the executor's workers."""
    cfg = cfg or CheckConfig()
    reqs, nonces = zip(*(request(s, "probe", cfg.plan(), cfg.timeout, cfg.memory_mb) for s in sources)) if sources else ((), ())
    return [from_result(r, n) for r, n in zip(executor.run_many(list(reqs)), nonces)]


def check_file(path: str | Path, executor: Executor | None = None, cfg: CheckConfig | None = None) -> Admission:
    try:
        source = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
    if executor is not None:
        return check_sources([source], executor, cfg)[0]
    from evoforge.sandbox import SandboxPool

    with SandboxPool(workers=1) as pool:
        return check_sources([source], pool, cfg)[0]
