"""A fast read-only traversal of libcst trees.

`node.visit(visitor)` rebuilds every node it passes through (libcst's visitors and transformers share
one code path), which made tree walks most of the analysis' cost. `walk` calls the same
`visit_<Type>` / `leave_<Type>` methods of a `libcst.CSTVisitor` (a `visit_` returning False skips the
children) but only reads the tree: children are found through each node class's dataclass fields,
computed once per class. Formatting-only nodes (whitespace, commas, parentheses, comments) are not
visited; none of the analysis' visitors look at them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

import libcst as cst

__all__ = ["children", "iter_tree", "statements", "walk"]

# Leaf formatting nodes: never visited, never descended into.
_FORMATTING: tuple[type, ...] = (
    cst.BaseParenthesizableWhitespace, cst.Comment, cst.EmptyLine, cst.Newline, cst.TrailingWhitespace,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.Comma, cst.Dot, cst.Semicolon, cst.Colon, cst.AssignEqual, cst.ImportStar,
)
_FORMATTING_FIELDS = frozenset({"lpar", "rpar", "leading_lines", "lines_after_decorators", "header", "footer",
                                "lbracket", "rbracket", "lbrace", "rbrace", "comma", "semicolon", "whitespace",
                                "equal", "dot", "colon"})

_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls)
                      if f.name not in _FORMATTING_FIELDS and not f.name.startswith("whitespace"))
        _FIELDS[cls] = names
    return names


_KIND: dict[type, int] = {}  # 1: a node to visit, 2: a sequence, 0: anything else (formatting, str, None)


def _kind(cls: type) -> int:
    kind = _KIND.get(cls)
    if kind is None:
        if issubclass(cls, cst.CSTNode):
            kind = 0 if issubclass(cls, _FORMATTING) else 1
        else:
            kind = 2 if issubclass(cls, (tuple, list)) else 0
        _KIND[cls] = kind
    return kind


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The non-formatting child nodes of `node`, in field order (source order for statements and calls)."""
    kinds = _KIND
    for name in _fields(type(node)):
        value = getattr(node, name)
        kind = kinds.get(type(value))
        if kind is None:
            kind = _kind(type(value))
        if kind == 1:
            yield value
        elif kind == 2:
            for item in value:
                k = kinds.get(type(item))
                if (k if k is not None else _kind(type(item))) == 1:
                    yield item


def walk(node: cst.CSTNode, visitor: Any) -> None:
    """Call `visitor.visit_<Type>(n)` before and `visitor.leave_<Type>(n)` after the children of every
    node `n` under `node` (itself included), like `node.visit(visitor)` without rebuilding the tree."""
    _walk(node, visitor, type(visitor), {})


def _walk(node: cst.CSTNode, visitor: Any, vcls: type, dispatch: dict[type, tuple[Any, Any]]) -> None:
    ncls = type(node)
    methods = dispatch.get(ncls)
    if methods is None:
        methods = dispatch[ncls] = (_own(vcls, "visit_" + ncls.__name__), _own(vcls, "leave_" + ncls.__name__))
    visit, leave = methods
    if visit is None or visit(visitor, node) is not False:
        for child in children(node):
            _walk(child, visitor, vcls, dispatch)
    if leave is not None:
        leave(visitor, node)


def _own(vcls: type, name: str) -> Any:
    """The visitor class' own method `name`, or None when it is libcst's no-op default (or absent)."""
    method = getattr(vcls, name, None)
    return None if method is None or method is getattr(cst.CSTVisitor, name, None) else method


def iter_tree(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every non-formatting node under `node` (itself included), in pre-order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(tuple(children(current))))


# What holds statements: blocks, branches and handlers (never an expression).
_STATEMENT_HOLDERS: tuple[type, ...] = (
    cst.BaseStatement, cst.BaseSmallStatement, cst.BaseSuite, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler,
    cst.Finally, cst.MatchCase,
)


def statements(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every statement (compound and small) under `node`, in source order, without entering expressions."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.BaseStatement, cst.BaseSmallStatement)):
            yield current
        stack.extend(reversed([c for c in children(current) if isinstance(c, _STATEMENT_HOLDERS)]))
