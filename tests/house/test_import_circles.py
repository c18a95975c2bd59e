"""The package imports in one direction: no circle of imports among its modules, counting the imports
made for type checking only; the interpreter's parts reach each other through `analysis/parts.py`'s
Protocols, never by naming the `Interpreter` class (and the runtime's parts reach the probe through
Protocols of their own)."""

from __future__ import annotations

import ast
from pathlib import Path

from support import ROOT

PACKAGE = ROOT / "gradcheck_lint"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path, name: str) -> set[str]:
    """The modules of gradcheck_lint a file imports, wherever the import stands (type-checking blocks too)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None:  # `from . import flags`: the submodule (the package's face is not run for it)
                out.update(f"{target}.{alias.name}" for alias in node.names)
            else:
                out.add(target)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {t for t in _imports(path, name) if t in files and t != name} for name, path in files.items()}


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_imports_have_no_circle() -> None:
    circle = _circle(_graph())
    assert circle is None, " -> ".join(circle or [])


def test_only_the_wiring_names_the_interpreter() -> None:
    graph = _graph()
    users = sorted(name for name, targets in graph.items()
                   if name.startswith("gradcheck_lint.analysis.") and "gradcheck_lint.analysis.interpreter" in targets)
    assert users == ["gradcheck_lint.analysis.model"], users


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) is None
