"""GL008's second keeper: the caller that keeps what a function returns, graphs and all.

`total_error += loss * n` inside `train()` keeps every batch's graph while `train` runs (the first GL008,
`kept_sites.py`); `history[epoch] = train(loader)` in its caller keeps each call's total, and with it those
graphs, after `train` returns (the static side reports both). The guard sees the second from what outlives
the first: once GL008 is reported at an in-place running total (`total += ...`, a tensor updated in place,
the same object through the call) that is a local of the function around it, and the function returns it
to a caller whose statement stores the result beyond its loop (`history[epoch] = train(loader)`,
`results.append(train(x))`, `x = train(...)` then `totals += x`), the probe keeps a weak reference to
that total and to the tags of the graphs alive at the report. When the total has died (the call
returned) and, two steps later, three of those graphs are still alive, something outside the function
keeps them: GL008 at the caller's statement. Nothing is read per step but two weak references, and only
after such a report.
"""

from __future__ import annotations

import ast
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from .evidence import Site
from .kept_sites import _STORE, Kept, _calls_of, _keeping, _Loop, _mentions, _own_nodes
from .source_calls import _Parsed, char_col, parsed, segment


@dataclass(frozen=True, slots=True)
class Returned:
    """The function whose local keeps the graphs (`name`, its first line as its code object gives it), that
    local (`target`), and the caller's statement keeping what it returns (`kept`)."""

    name: str
    first_line: int
    target: str
    kept: Kept


def returned_keeper(kept: Kept) -> Returned | None:
    """The caller's keeping statement of the function around `kept` (an in-place total it returns), or None."""
    p = parsed(kept.site.path)
    if p is None or not kept.target.isidentifier():
        return None
    function = _function_at(p.tree, kept.site.line)
    if function is None:
        return None
    own = _own_nodes(function)
    statement = next((n for n in own if isinstance(n, ast.AugAssign) and n.lineno == kept.site.line), None)
    names = frozenset({kept.target})
    if statement is None or not isinstance(statement.target, ast.Name) or any(
            isinstance(n, (ast.Global, ast.Nonlocal)) and kept.target in n.names for n in own):
        return None  # a running total rebound each time, or one that outlives the call anyway
    if not any(isinstance(n, ast.Return) and n.value is not None and _mentions(n.value, names) for n in own):
        return None
    for call, caller, loop in _calls_of(p.tree, function):
        if loop is None:
            continue
        found = _stored(p, kept.site.path, caller, call, loop)
        if found is not None:
            first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
            return Returned(function.name, first, kept.target, found)
    return None


def _function_at(tree: ast.AST, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    around = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.lineno <= line <= (n.end_lineno or n.lineno)]
    return max(around, key=lambda n: n.lineno) if around else None


def _stored(p: _Parsed, path: str, caller: ast.AST, call: ast.Call, loop: _Loop) -> Kept | None:
    """The statement of `caller` that stores the result of `call` in something that outlives `loop`."""
    for node in _own_nodes(caller):
        if isinstance(node, ast.Assign) and node.value is call and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Subscript):  # `history[epoch] = train(loader)`
                return _kept(p, path, node, segment(p, target.value), segment(p, call), loop)
            if isinstance(target, ast.Name):  # `total = train(loader)`, then kept as a loss would be
                return _keeping(p, caller, frozenset({target.id}), node.lineno, path, loop.lineno)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            store, args = node.value.func, node.value.args
            if isinstance(store, ast.Attribute) and store.attr in _STORE and args and args[-1] is call:
                return _kept(p, path, node.value, segment(p, store.value), segment(p, call), loop)
    return None


def _kept(p: _Parsed, path: str, node: ast.stmt | ast.expr, target: str, stored: str, loop: _Loop) -> Kept:
    line, col = node.lineno, node.col_offset
    return Kept(Site(path, line, segment(p, node), col=char_col(p, line, col)), target, stored, loop.lineno)


class ReturnedWatch:
    """After GL008 at an in-place total a function returns: its total and the graphs alive at the report."""

    __slots__ = ("returned", "total", "graphs", "died_at")

    def __init__(self, returned: Returned, total: Any, graphs: list[weakref.ReferenceType[Any]]) -> None:
        self.returned = returned
        self.total = weakref.ref(total)
        self.graphs = graphs
        self.died_at = -1

    def due(self, steps: int, kept_graphs: int) -> bool | None:
        """True: report the caller's statement now; False: not yet; None: nothing to report (drop the watch)."""
        if self.died_at < 0:
            if self.total() is not None:
                return False
            self.died_at = steps
        if steps < self.died_at + 2:
            return False
        return True if sum(g() is not None for g in self.graphs) >= kept_graphs else None


def watch_returned(kept: Kept, graphs: list[weakref.ReferenceType[Any]],
                   is_total: Callable[[Any], bool]) -> ReturnedWatch | None:
    """A watch of the caller keeping what the function around `kept` returns, when it is running on this
    stack with its total an object `is_total` accepts (a tensor), else None."""
    returned = returned_keeper(kept)
    if returned is None:
        return None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if (code.co_name == returned.name and code.co_firstlineno == returned.first_line
                and code.co_filename == kept.site.path):
            total = frame.f_locals.get(returned.target)
            return ReturnedWatch(returned, total, graphs) if is_total(total) else None
        frame = frame.f_back
    return None
