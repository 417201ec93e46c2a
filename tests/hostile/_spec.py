"""What a hostile program's header asks for (shared by the sandbox tests; not a hostile program).

`# expect: a|b` allowed statuses; `# timeout: S`, `# max_result_bytes: N` request fields;
`# needs: x, y` protections the assertion relies on (skipped in a degraded sandbox).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

HOSTILE = Path(__file__).parent
PROGRAMS = sorted(p for p in HOSTILE.glob("*.py") if not p.name.startswith("_"))


def header(code: str) -> tuple[set[str], dict[str, float], set[str]]:
    expect: set[str] = set()
    fields: dict[str, float] = {}
    needs: set[str] = set()
    for line in code.splitlines():
        if not line.startswith("# ") or ":" not in line:
            continue
        key, value = (x.strip() for x in line[2:].split(":", 1))
        if key == "expect":
            expect = {s.strip() for s in value.split("|")}
        elif key in ("timeout", "max_result_bytes"):
            fields[key] = float(value) if key == "timeout" else int(value)
        elif key == "needs":
            needs = {n.strip() for n in value.split(",")}
    return expect, fields, needs


def unmet_needs(code: str, features: dict[str, Any]) -> list[str]:
    """Protections the program's `# needs:` line asks for that this sandbox lacks (see docs/SANDBOX.md)."""
    own_uid, abi = features.get("uid") is not None, features.get("landlock_abi", 0)
    netns = features.get("network") == "namespace"
    have = {"write-anywhere": abi >= 1, "write-parent": own_uid or abi >= 1, "net": netns or abi >= 4,
            "net-udp": netns, "signals": own_uid or abi >= 6, "ipc": features.get("ipc") == "namespace",
            "seccomp": features.get("seccomp") == "on", "cgroup": str(features.get("memory_cgroup", "")).startswith("/")}
    return sorted(n for n in header(code)[2] if not have.get(n, False))
