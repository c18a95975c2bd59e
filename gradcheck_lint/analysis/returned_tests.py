"""Tests a helper returns: a branch whose test is a call of a function or method the analysis reads,
seen as the test that call returns, written in the caller's terms.

OneTrainer gates its step and its clear on a helper method, which hands the question to another:

    def action_needed(self, name, interval, unit, progress, start_at_zero=True):
        match unit:
            case TimeUnit.STEP:
                if start_at_zero:
                    return progress.global_step % int(interval) == 0
                else:
                    return (progress.global_step + 1) % int(interval) == 0
            ...

    def __is_update_step(self, progress):
        return self.action_needed("update_step", self.args.accum, TimeUnit.STEP, progress, start_at_zero=False)

    if self.__is_update_step(train_progress):      # (train_progress.global_step + 1) % int(self.args.accum) == 0
        optimizer.zero_grad()

Read as an opaque call, the test says nothing of the window: every iteration would go the same way.
`returned_test` follows the call to the `return` it reaches, choosing the arm of an `if` on a parameter
the call binds to a literal and the `case` of a `match` whose value the call names, and puts the
caller's arguments in place of the parameters. Anything it cannot choose (a test of something else
around a `return`, a `return` in a loop or a `try`, a parameter the body rebinds) leaves the call as it
is. Two enum members (`TimeUnit.EPOCH`, `TimeUnit.STEP`) are taken to be different values when their
names differ.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from .flow import Function
from .syntax import code, made_here
from .walk import breadth_first

__all__ = ["returned_test"]

_DEPTH = 4  # calls followed through one test (`__is_update_step` -> `action_needed`)
_OPEN = object()  # a statement that may return, in a way that is not chosen here


def returned_test(call: ast.Call, resolve: Callable[[ast.Call], Function | None],
                  depth: int = _DEPTH) -> ast.expr | None:
    """The expression the call returns, in the caller's terms (None: not followed); a returned call is
    followed again, up to `depth` calls."""
    fn = resolve(call)
    if fn is None:
        return None
    bound = _bind(fn, call)
    if bound is None:
        return None
    found = _returned(fn.body, bound)
    if found is None or found is _OPEN or not isinstance(found, ast.expr):
        return None
    rebound = _locals(fn)
    if any(isinstance(n, ast.Name) and n.id in rebound for n in breadth_first(found)):
        return None  # it reads a local the body computed (or a parameter it rebinds)
    out = _Substitute(bound).visit(copy.deepcopy(found))
    out = ast.copy_location(out, call)
    ast.fix_missing_locations(out)
    made_here(out)  # its text is its own, not a segment of the caller's file
    if isinstance(out, ast.Call) and depth > 1:
        return returned_test(out, resolve, depth - 1) or out
    return out


def _bind(fn: Function, call: ast.Call) -> dict[str, ast.expr] | None:
    """Parameter name -> the caller's expression for it (`self` -> the receiver); literal defaults for the
    rest. None when the call cannot be matched to the parameters (`*args`, `**kw`, an unknown keyword)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    given: list[ast.expr] = list(call.args)
    if isinstance(call.func, ast.Attribute) and positional and positional[0].arg in ("self", "cls"):
        given.insert(0, call.func.value)
    if len(given) > len(positional):
        return None
    bound: dict[str, ast.expr] = {p.arg: v for p, v in zip(positional, given)}
    names = {p.arg for p in [*positional, *args.kwonlyargs]}
    for k in call.keywords:
        if k.arg is None or k.arg not in names or k.arg in bound:
            return None
        bound[k.arg] = k.value
    defaults = dict(zip([p.arg for p in positional][len(positional) - len(args.defaults):], args.defaults))
    defaults.update({p.arg: d for p, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    for name in names - bound.keys():
        default = defaults.get(name)
        if default is None:
            return None
        bound[name] = default
    return bound


def _returned(body: list[ast.stmt], bound: dict[str, ast.expr]) -> ast.expr | object | None:
    """The returned expression the statements reach (None: they end without returning; `_OPEN`: they may
    return in a way not chosen here)."""
    for stmt in body:
        if isinstance(stmt, ast.Return):
            return stmt.value if stmt.value is not None else _OPEN
        if isinstance(stmt, ast.If):
            truth = _truth(stmt.test, bound)
            if truth is None:
                if _returns(stmt):
                    return _OPEN
                continue
            found = _returned(stmt.body if truth else stmt.orelse, bound)
            if found is not None:
                return found
            continue
        if isinstance(stmt, ast.Match):
            subject = _text(stmt.subject, bound)
            chosen = None
            for case in stmt.cases:
                value = case.pattern.value if isinstance(case.pattern, ast.MatchValue) else None
                pattern = case.pattern
                wildcard = isinstance(pattern, ast.MatchAs) and pattern.pattern is None and pattern.name is None
                if case.guard is None and (wildcard or value is not None and code(value) == subject):
                    chosen = case
                    break
                if value is None or not _named_value(value) or not _named_value(stmt.subject, bound):
                    return _OPEN if _returns(stmt) else None  # a case it cannot rule out
            if chosen is None:
                continue
            found = _returned(chosen.body, bound)
            if found is not None:
                return found
            continue
        if _returns(stmt):
            return _OPEN
    return None


def _returns(stmt: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) for n in breadth_first(stmt))


def _truth(test: ast.expr, bound: dict[str, ast.expr]) -> bool | None:
    """A test of a parameter the call binds to a literal (`if start_at_zero:`, `if not flag:`)."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    value = bound.get(test.id) if isinstance(test, ast.Name) else None
    if isinstance(value, ast.Constant):
        return bool(value.value) != negated
    return None


def _text(expr: ast.expr, bound: dict[str, ast.expr]) -> str:
    if isinstance(expr, ast.Name) and expr.id in bound:
        return code(bound[expr.id])
    return code(expr)


def _named_value(expr: ast.expr, bound: dict[str, ast.expr] | None = None) -> bool:
    """A literal or a dotted name (`TimeUnit.STEP`, not an attribute of `self`), also as the parameter a
    call binds it to."""
    if bound is not None and isinstance(expr, ast.Name) and expr.id in bound:
        expr = bound[expr.id]
    if isinstance(expr, ast.Constant):
        return True
    if not isinstance(expr, ast.Attribute):
        return False
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return isinstance(expr, ast.Name) and expr.id not in ("self", "cls")


def _locals(fn: Function) -> set[str]:
    """Names the function's body binds (its locals, and parameters it rebinds)."""
    out: set[str] = set()
    for node in breadth_first(fn):
        if node is fn:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
    return out


class _Substitute(ast.NodeTransformer):
    """The parameters replaced by the caller's expressions."""

    def __init__(self, bound: dict[str, ast.expr]) -> None:
        self.bound = bound

    def visit_Name(self, node: ast.Name) -> ast.expr:
        value = self.bound.get(node.id)
        return copy.deepcopy(value) if value is not None and isinstance(node.ctx, ast.Load) else node
