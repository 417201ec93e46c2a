"""No import cycle between the packages of src/evoforge (dependencies point one way, towards
the engine). Every import counts: module level, inside functions, under TYPE_CHECKING."""
from __future__ import annotations

import ast
from pathlib import Path

import evoforge

ROOT = Path(evoforge.__file__).parent


def package_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "evoforge" or len(parts) < 2:
        return None
    return parts[1]


def package_graph() -> dict[str, dict[str, str]]:
    """{package: {imported package: 'file:line' of one such import}}."""
    graph: dict[str, dict[str, str]] = {}
    for f in ROOT.rglob("*.py"):
        rel = f.relative_to(ROOT.parent)
        mod_parts = list(rel.with_suffix("").parts)
        if mod_parts[-1] == "__init__":
            mod_parts = mod_parts[:-1]
        src = package_of(".".join(mod_parts)) if len(mod_parts) > 1 else None
        if src is None or not (ROOT / src).is_dir():
            continue  # evoforge/registry.py and friends: leaves everyone may use
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: resolve against this module's package
                    base = mod_parts[: len(mod_parts) - node.level + (f.name == "__init__.py")]
                    names = [".".join(base + ([node.module] if node.module else []))]
                elif node.module:
                    names = [node.module] + ([f"{node.module}.{a.name}" for a in node.names]
                                             if node.module == "evoforge" else [])
            for name in names:
                dst = package_of(name)
                if dst and dst != src and (ROOT / dst).is_dir():
                    graph.setdefault(src, {}).setdefault(dst, f"{rel}:{node.lineno}")
    return graph


def find_cycle(graph: dict[str, dict[str, str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u: str) -> list[str] | None:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, {})):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state and (c := visit(v)):
                return c
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if u not in state and (c := visit(u)):
            return c
    return None


def test_the_finder_finds_a_cycle():
    assert find_cycle({"a": {"b": ""}, "b": {"c": ""}, "c": {"a": ""}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": ""}, "b": {}}) is None


def test_no_package_level_import_cycle():
    graph = package_graph()
    assert "engine" in graph and "llm" in graph.get("engine", {})  # the scan sees imports at all
    cycle = find_cycle(graph)
    where = [f"{a} -> {b} ({graph[a][b]})" for a, b in zip(cycle, cycle[1:])] if cycle else []
    assert cycle is None, "import cycle: " + "; ".join(where)
