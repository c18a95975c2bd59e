"""Fast read-only traversals of CPython syntax trees.

`walk` calls a visitor's `visit_<Type>` / `leave_<Type>` methods (a `visit_` returning False skips the
children), like `ast.NodeVisitor` but with leave hooks and without visiting the shared singleton nodes
of operators and load/store contexts, which no analysis looks at.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["breadth_first", "child_nodes", "children", "forget_walks", "iter_tree", "parents", "statements", "walk"]

# Fields that never hold a node (names, flags, operators, contexts): never read.
_SCALAR_FIELDS = frozenset({"ctx", "op", "ops", "type_comment", "id", "attr", "arg", "module", "level", "kind",
                            "conversion", "is_async", "simple", "tag", "asname", "name", "names"})

_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        skip = _SCALAR_FIELDS | ({"value"} if cls is ast.Constant else set())
        names = tuple(f for f in cls._fields if f not in skip)  # type: ignore[attr-defined]
        _FIELDS[cls] = names
    return names


def children(node: ast.AST) -> list[ast.AST]:
    """The child nodes of `node` in field order (source order for statements, calls and operands)."""
    out: list[ast.AST] = []
    for name in _FIELDS.get(node.__class__) or _fields(node.__class__):
        value = getattr(node, name, None)
        if value.__class__ is list:
            for item in value:
                if isinstance(item, ast.AST):
                    out.append(item)
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


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


# Fields that hold a name, a number or a string in every tree CPython's parser builds, by class: never a node.
_NAMED_FIELDS: dict[type, frozenset[str]] = {
    ast.Name: frozenset({"id"}), ast.Attribute: frozenset({"attr"}), ast.Constant: frozenset({"value", "kind"}),
    ast.arg: frozenset({"arg", "type_comment"}), ast.keyword: frozenset({"arg"}), ast.alias: frozenset({"name", "asname"}),
}
_ALL_FIELDS: dict[type, tuple[str, ...]] = {}


def _all_fields(node: ast.AST) -> tuple[str, ...]:
    cls = node.__class__
    skip = _NAMED_FIELDS.get(cls, frozenset())
    fields = _ALL_FIELDS[cls] = tuple(f for f in node._fields if f not in skip)
    return fields


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`list(ast.iter_child_nodes(node))` (operator and context nodes too, in field order), faster."""
    out: list[ast.AST] = []
    push = out.append
    fields = _ALL_FIELDS.get(node.__class__)
    for name in _all_fields(node) if fields is None else fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            push(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    push(item)
    return out


# Nodes whose walks are kept (until `forget_walks`): a file's analysis walks its module and each of its
# functions and classes again and again (a third of its walks' nodes on accelerate + timm), each time for
# another question.
_KEPT_ROOTS = frozenset({ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_WALKED: dict[int, tuple[ast.AST, list[ast.AST]]] = {}
_PRE_ORDER: dict[int, tuple[ast.AST, list[ast.AST]]] = {}


def breadth_first(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk`: every node under `node` (itself included, operator and context nodes too), in the same
    breadth-first order, nearly twice as fast (no generator per node and per field). The walk of a module,
    function or class is walked once and kept: trees are never changed in place (rewritten tests are copies)."""
    return _kept(node, _WALKED, _breadth_first)


def forget_walks() -> None:
    """Drop the kept walks (when a file's analysis ends)."""
    _WALKED.clear()
    _PRE_ORDER.clear()


def _breadth_first(node: ast.AST) -> Iterator[ast.AST]:
    todo = [node]
    push = todo.append
    fields_of = _ALL_FIELDS
    node_type = ast.AST
    i = 0
    while i < len(todo):
        current = todo[i]
        i += 1
        fields = fields_of.get(current.__class__)
        for name in _all_fields(current) if fields is None else fields:
            value = getattr(current, name, None)
            if isinstance(value, node_type):
                push(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, node_type):
                        push(item)
        yield current


def iter_tree(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under `node` (itself included), in pre-order; kept for a module, function or class, as
    `breadth_first` keeps its walks (a module's is asked for again and again)."""
    return _kept(node, _PRE_ORDER, _pre_order)


def _kept(node: ast.AST, memo: dict[int, tuple[ast.AST, list[ast.AST]]],
          walk: Callable[[ast.AST], Iterator[ast.AST]]) -> Iterator[ast.AST]:
    """`walk(node)`, kept in `memo` for a module, function or class (trees are never changed in place)."""
    if node.__class__ not in _KEPT_ROOTS:
        return walk(node)
    kept = memo.get(id(node))
    if kept is None or kept[0] is not node:
        if len(memo) > 50_000:
            memo.clear()
        kept = memo[id(node)] = (node, list(walk(node)))
    return iter(kept[1])


def _pre_order(node: ast.AST) -> Iterator[ast.AST]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


def parents(node: ast.AST) -> dict[int, ast.AST]:
    """The node holding each node under `node`, by the held node's id (one pass)."""
    out: dict[int, ast.AST] = {}
    stack = [node]
    while stack:
        current = stack.pop()
        for child in children(current):
            out[id(child)] = current
            stack.append(child)
    return out


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


def own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions, classes or lambdas nested in it (in no
    particular order: sort by position where order matters)."""
    todo = child_nodes(fn)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(child_nodes(node))
