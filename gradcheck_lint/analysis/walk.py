"""Fast read-only traversals of CPython syntax trees.

`walk` calls a visitor's `visit_<Type>` / `leave_<Type>` methods (a `visit_` returning False skips the
children), like `ast.NodeVisitor` but with leave hooks and without visiting the shared singleton nodes
of operators and load/store contexts, which no analysis looks at.
"""

from __future__ import annotations

import ast
from typing import Any, Iterator

__all__ = ["children", "iter_tree", "statements", "walk"]

# Operators and expression contexts: shared singletons, never visited.
_SKIPPED: tuple[type, ...] = (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop, ast.type_ignore)

_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f for f in cls._fields if f not in ("ctx", "op", "ops", "type_comment"))  # type: ignore[attr-defined]
        _FIELDS[cls] = names
    return names


def children(node: ast.AST) -> Iterator[ast.AST]:
    """The child nodes of `node` in field order (source order for statements, calls and operands)."""
    for name in _fields(type(node)):
        value = getattr(node, name, None)
        if isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST) and not isinstance(item, _SKIPPED):
                    yield item
        elif isinstance(value, ast.AST) and not isinstance(value, _SKIPPED):
            yield value


def walk(node: ast.AST, visitor: Any) -> None:
    """Call `visitor.visit_<Type>(n)` before and `visitor.leave_<Type>(n)` after the children of every
    node `n` under `node` (itself included)."""
    _walk(node, visitor, type(visitor), {})


def _walk(node: ast.AST, visitor: Any, vcls: type, dispatch: dict[type, tuple[Any, Any]]) -> None:
    ncls = type(node)
    methods = dispatch.get(ncls)
    if methods is None:
        methods = dispatch[ncls] = (getattr(vcls, "visit_" + ncls.__name__, None), getattr(vcls, "leave_" + ncls.__name__, None))
    visit, leave = methods
    if visit is None or visit(visitor, node) is not False:
        for child in children(node):
            _walk(child, visitor, vcls, dispatch)
    if leave is not None:
        leave(visitor, node)


def iter_tree(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under `node` (itself included), in pre-order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(tuple(children(current))))


# What holds statements besides statements: handlers and match cases (never an expression).
_STATEMENT_HOLDERS: tuple[type, ...] = (ast.stmt, ast.excepthandler, ast.match_case)


def statements(node: ast.AST) -> Iterator[ast.stmt]:
    """Every statement under `node`, in source order, without entering expressions."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.stmt):
            yield current
        stack.extend(reversed([c for c in children(current) if isinstance(c, _STATEMENT_HOLDERS)]))
