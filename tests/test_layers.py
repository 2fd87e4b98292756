"""The layers of docs/design.md hold in the code: imports point down, and no module imports itself in a circle.

Every import is counted, function-local ones included (a circle hidden in a function is still a
circle): ``secure`` imports none of ``dp``, ``smoothing``, ``scenarios``; ``smoothing`` imports none
of ``secure``, ``dp``, ``scenarios``; ``dp`` imports nothing of ``scenarios``.
"""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGES = ("secure", "dp", "smoothing", "scenarios")
FORBIDDEN = {"secure": {"dp", "smoothing", "scenarios"}, "smoothing": {"secure", "dp", "scenarios"},
             "dp": {"scenarios"}, "scenarios": set()}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its text."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[:len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def test_imports_point_down() -> None:
    wrong = [f"{name} imports {target}" for name, targets in import_graph().items() for target in targets
             if target.split(".")[0] in FORBIDDEN[name.split(".")[0]]]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_circles() -> None:
    graph = import_graph()
    circles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not circles, "\n".join(" -> ".join(circle) for circle in circles)


def test_the_graph_sees_function_local_imports() -> None:
    """The checker itself: a function-local import is an edge (the kind of circle issue 12 found)."""
    graph = import_graph()
    assert "secure.session" in graph["secure.launcher"]  # imported inside run_parties only
