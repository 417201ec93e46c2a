"""What an evaluation's end means: output tails, the harness's result frames, the status decision.

Runs in the zygote (no program code here): it keeps the last bytes of each output stream, parses
what the harness sent, and when nothing usable came back decides from how the child ended.
"""
from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Tail:
    """Keeps the last `cap` bytes of a stream, however much is written."""

    cap: int
    buf: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def add(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) > 2 * self.cap:
            cut = len(self.buf) - self.cap
            self.dropped += cut
            del self.buf[:cut]

    def text(self) -> str:
        keep = self.buf[-self.cap :] if self.cap else b""
        dropped = self.dropped + len(self.buf) - len(keep)
        head = f"[... {dropped} bytes dropped ...]\n" if dropped else ""
        return head + bytes(keep).decode("utf-8", "replace")


def decide(outcome: str, wstatus: int, res: bytes, req: dict[str, Any], oom: bool = False) -> tuple[dict[str, Any], bytes]:
    """Status from what the harness sent (if it got that far), else from how the child ended."""
    head, value = parse_result(res)
    if head is not None:
        return head, value
    limit = float(req["timeout"])
    if outcome == "timeout":
        return {"status": "timeout", "error": f"time limit exceeded ({limit:g} s wall clock)"}, b""
    if outcome == "oversized":
        return {"status": "crash", "error": f"return value too large (over {int(req['max_result_bytes'])} bytes)"}, b""
    if outcome == "procs":
        return {"status": "killed", "error": "too many processes (fork bomb?); the program was killed"}, b""
    if oom:  # the cgroup's OOM killer: memfd / shared memory / page cache count there, not in RLIMIT_AS
        return {"status": "memory", "error": f"memory limit exceeded ({int(req['memory_mb'])} MB for the whole "
                "evaluation, shared memory and memfd included); the program was killed"}, b""
    if os.WIFSIGNALED(wstatus):
        sig = os.WTERMSIG(wstatus)
        if sig == signal.SIGXCPU:
            return {"status": "timeout", "error": "CPU time limit exceeded"}, b""
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        why = {"SIGSEGV": " (segmentation fault)", "SIGXFSZ": " (file size limit exceeded)", "SIGABRT": " (aborted)"}.get(name, "")
        return {"status": "killed", "error": f"killed by {name}{why}"}, b""
    code = os.WEXITSTATUS(wstatus) if os.WIFEXITED(wstatus) else -1
    if code == 121:
        return {"status": "crash", "error": "sandbox setup failed (see stderr)"}, b""
    return {"status": "crash", "error": f"program exited with status {code} before returning a result"}, b""


def parse_result(res: bytes) -> tuple[dict[str, Any] | None, bytes]:
    """The harness's header frame (+ value frame when ok); None if absent or malformed."""
    if len(res) < 4:
        return None, b""
    n = int.from_bytes(res[:4], "big")
    if len(res) < 4 + n:
        return None, b""
    try:
        head = json.loads(res[4 : 4 + n])
    except (ValueError, RecursionError):
        return {"status": "crash", "error": "malformed result from the program"}, b""
    if not isinstance(head, dict) or head.get("status") not in ("ok", "syntax", "crash", "memory"):
        return {"status": "crash", "error": "malformed result from the program"}, b""
    head = {"status": head["status"], "error": str(head.get("error", ""))[:2000]}
    if head["status"] != "ok":
        return head, b""
    rest = res[4 + n :]
    m = int.from_bytes(rest[:4], "big") if len(rest) >= 4 else -1
    if m < 0 or len(rest) < 4 + m:
        return {"status": "crash", "error": "result truncated (the program closed or flooded the result channel)"}, b""
    return head, rest[4 : 4 + m]


def vm_size_mb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) // 1024
    return 0
