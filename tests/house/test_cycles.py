"""No import cycles, in the core or the TUI, counting every import: at the top, inside a function (a
lazy import is still an arrow) and under TYPE_CHECKING. import-linter's layers contract keeps the
layers in order; within a layer two modules importing each other would still be one module in two
files, which this test refuses."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def import_graph(folder: Path, package: str) -> dict[str, set[str]]:
    """Module name: the modules of the same package it imports."""
    modules: dict[str, Path] = {}
    for path in folder.rglob("*.py"):
        parts = [package, *path.relative_to(folder).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        here[: len(here) - node.level + 1] + ([node.module] if node.module else [])
                    )
                for alias in node.names:
                    target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    if target in modules and target != name:
                        graph[name].add(target)
            elif isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name in modules and a.name != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_core_has_no_import_cycle() -> None:
    assert cycles(import_graph(ROOT / "core", "threadloom.core")) == []


def test_the_tui_has_no_import_cycle() -> None:
    assert cycles(import_graph(ROOT / "tui", "threadloom.tui")) == []


def test_a_cycle_is_found(tmp_path: Path) -> None:
    """The check is live: two modules importing each other, one of them lazily, are a cycle."""
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("from . import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from .a import x\n")
    (tmp_path / "c.py").write_text("from .a import b\n")
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b"]]
