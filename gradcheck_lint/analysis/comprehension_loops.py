"""A comprehension written for its effects is a `for` loop.

`[self._perform_update(loss, opt) for loss, opt in zip(losses, opts)]` as a statement throws its list
away: it is written for what its element does on each pass, exactly as

    for loss, opt in zip(losses, opts):
        self._perform_update(loss, opt)

and so is a comprehension a consuming call runs through (`list(opt.step() for opt in opts)`) or
`list(map(f, xs, ys))`. `statement_loop` writes that equivalent loop (an `if` clause becomes an `if`
around the rest, a second `for` clause a loop inside the first) so that the interpreter runs it with the
machinery of `for` loops: a fixed point over the iterations, one pass over the members of a collection
(`Counters.visits_members`), loop counters. A comprehension whose value is used keeps its reading as a
value (`Expressions.eval_comprehension`): a container of its elements' graphs.
"""

from __future__ import annotations

import ast
from typing import TypeVar

from .walk import breadth_first

__all__ = ["statement_loop"]

# Builtins that run through every element of the iterable they are handed (`any`/`all` may stop early:
# so may a `for` loop's `break`, and the loop is read as running any number of passes)
_CONSUMERS = frozenset({"list", "tuple", "set", "frozenset", "sorted", "sum", "min", "max", "any", "all"})
# Names bound by the loop written for `map(f, xs, ys)`: never a name of the user's code
_MAPPED = "__gradlint_map_{}"
_Node = TypeVar("_Node", bound=ast.AST)


def statement_loop(stmt: ast.Expr) -> ast.For | ast.AsyncFor | None:
    """The `for` loop an expression statement runs when it is a comprehension (or `map`) evaluated for
    its effects; None when it is not one. The loop is a new node each call, holding the statement's own
    element and iterables (the caller keeps it: the analysis keys loops by node)."""
    value = stmt.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _CONSUMERS \
            and len(value.args) >= 1 and not any(isinstance(a, ast.Starred) for a in value.args):
        value = value.args[0]  # `list(f(x) for x in xs)`, `any(...)`: the first argument is consumed
        if isinstance(value, ast.Call):
            return _map_loop(value, stmt)
    elif isinstance(value, ast.GeneratorExp):
        return None  # a generator expression alone runs nothing
    if not isinstance(value, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        return None
    element: ast.expr = (ast.Tuple(elts=[value.key, value.value], ctx=ast.Load()) if isinstance(value, ast.DictComp)
                         else value.elt)
    body: list[ast.stmt] = [_placed(ast.Expr(value=element), value)]
    for clause in reversed(value.generators):
        for test in reversed(clause.ifs):
            body = [_placed(ast.If(test=test, body=body, orelse=[]), test)]
        kind = ast.AsyncFor if clause.is_async else ast.For
        body = [_placed(kind(target=clause.target, iter=clause.iter, body=body, orelse=[], type_comment=None), value)]
    loop = body[0]
    assert isinstance(loop, (ast.For, ast.AsyncFor))
    return loop


def _map_loop(call: ast.Call, stmt: ast.Expr) -> ast.For | None:
    """`list(map(f, xs, ys))`: `for a, b in zip(xs, ys): f(a, b)` (one iterable: `for a in xs: f(a)`)."""
    if not (isinstance(call.func, ast.Name) and call.func.id == "map" and len(call.args) >= 2 and not call.keywords) \
            or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    function, iterables = call.args[0], call.args[1:]
    names = [ast.Name(id=_MAPPED.format(i), ctx=ast.Load()) for i in range(len(iterables))]
    stores = [ast.Name(id=n.id, ctx=ast.Store()) for n in names]
    target: ast.expr = stores[0] if len(stores) == 1 else ast.Tuple(elts=list[ast.expr](stores), ctx=ast.Store())
    source = iterables[0] if len(iterables) == 1 else \
        _placed(ast.Call(func=ast.Name(id="zip", ctx=ast.Load()), args=list(iterables), keywords=[]), call)
    apply = _placed(ast.Call(func=function, args=list(names), keywords=[]), call)
    body: list[ast.stmt] = [_placed(ast.Expr(value=apply), stmt)]
    return _placed(ast.For(target=target, iter=source, body=body, orelse=[], type_comment=None), call)


def _placed(node: _Node, where: ast.AST) -> _Node:
    """`node`, at the position of the syntax it stands for (its text is that syntax's text)."""
    for sub in breadth_first(node):
        if not hasattr(sub, "lineno") and hasattr(where, "lineno") and "lineno" in getattr(sub, "_attributes", ()):
            ast.copy_location(sub, where)
    return node
