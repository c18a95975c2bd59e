"""Containers that keep at most a fixed number of items: `collections.deque(maxlen=n)`.

Appending to such a container drops its oldest item once it is full (a smoothed meter's window of the last 20
values, trojanzoo's `SmoothedValue.deque`): it holds at most `n` iterations' graphs, whatever the number of
iterations, so memory does not grow with them. Read from the code: every binding of the container (`self.deque =
deque(maxlen=window_size)` in `__init__`, again in `reset`) makes a deque with a length bound given; one binding
of anything else (a list, a deque without a bound, `maxlen=None`, a value made out of sight) and it is not bounded.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .names import last_name
from .walk import iter_tree

_GROWS = frozenset({"append", "appendleft", "extend", "extendleft", "insert"})


def grows_bounded(node: ast.AST, target: str, function: ast.AST | None, cls: ast.ClassDef | None,
                  module: ast.AST | None) -> bool:
    """`node` adds to `target` (`target.append(x)`) and every binding of `target` makes a deque with a length bound:
    `self.x` in the methods of `cls`, a plain name in `function` (or at the top of `module` when the function does
    not bind it)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _GROWS):
        return False
    if target.startswith("self.") and target[5:].isidentifier():
        if cls is None:
            return False
        values = [v for stmt in cls.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for v in _bindings(stmt, lambda t: isinstance(t, ast.Attribute) and t.attr == target[5:]
                                     and isinstance(t.value, ast.Name) and t.value.id == "self")]
    elif target.isidentifier():
        def named(t: ast.AST) -> bool:
            return isinstance(t, ast.Name) and t.id == target

        values = _bindings(function, named) if function is not None else []
        if not values and module is not None:
            values = [v for stmt in getattr(module, "body", []) if not isinstance(stmt, _SCOPES)
                      for v in _bindings(stmt, named)]
    else:
        return False
    return bool(values) and all(v is not None and _bounded_deque(v) for v in values)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _bindings(scope: ast.AST, matches: Callable[[ast.AST], bool]) -> list[ast.expr | None]:
    """The values bound to the targets `matches` accepts within `scope` (None: a binding of no single value read,
    a loop target, an unpacking, an augmented assignment)."""
    out: list[ast.expr | None] = []
    for node in iter_tree(scope):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if matches(t):
                    out.append(node.value)
                elif isinstance(t, (ast.Tuple, ast.List)) and any(matches(e) for e in ast.walk(t)):
                    out.append(None)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and matches(node.target):
            out.append(node.value if isinstance(node, ast.AnnAssign) else None)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr)):
            targets = [node.target] if isinstance(node, (ast.For, ast.AsyncFor, ast.NamedExpr)) else \
                [i.optional_vars for i in node.items if i.optional_vars is not None]
            if any(matches(e) for t in targets for e in ast.walk(t)):
                out.append(None)
    return out


def _bounded_deque(value: ast.expr) -> bool:
    """`deque(maxlen=n)`, `collections.deque(xs, n)`: a deque made with a length bound that is not `None`."""
    if not (isinstance(value, ast.Call) and last_name(value.func) == "deque"):
        return False
    bound = next((k.value for k in value.keywords if k.arg == "maxlen"), None)
    if bound is None and len(value.args) >= 2:
        bound = value.args[1]
    return bound is not None and not (isinstance(bound, ast.Constant) and bound.value is None)
