"""A comprehension over a few literals, read one literal at a time: what it makes for each is its own.

CompressAI's `net_aux_optimizer` builds `{key: make_optimizer(key) for key in ["net", "aux"]}`: two optimizers,
one over the network's parameters and one over its quantiles, made by one constructor call. Read as one loop,
the call made one object (an entity per construction site and call path), so `optimizer["net"]` and
`optimizer["aux"]` were the same optimizer, and stepping the second after the first "applied gradients an
earlier step already applied" (a certain GL001 on correct code, lockbox 15). Over a short literal sequence,
each element runs as a call path of its own: its objects are its own, and the result holds them by key
(a dict) or by position (a list), as a display written out would.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Protocol

from . import names as N
from .flow import Flow, Frame
from .parts import ExpressionsHost
from .values import Value, display, join


class _Reader(Protocol):
    """What the unrolling uses of `expressions.Expressions`."""

    interp: ExpressionsHost

    def eval(self, expr: ast.expr | None, flow: Flow, frame: Frame) -> Value: ...

    def assign(self, target: ast.expr, value: Value, flow: Flow, frame: Frame, source: ast.AST | None, stmt: ast.AST,
               keep_phases: bool = False) -> None: ...

MAX_UNROLLED = 8  # elements of a literal sequence read one by one


def unrolled(ex: _Reader, expr: ast.expr, elt: ast.expr, flow: Flow, frame: Frame) -> Value | None:
    """The comprehension's value, element by element, when it runs over a short tuple or list of literals with
    one plain name as its target and no condition (None otherwise); a set's elements have no place to hold."""
    generators = getattr(expr, "generators", [])
    if isinstance(expr, ast.SetComp) or len(generators) != 1:
        return None
    clause = generators[0]
    if clause.ifs or clause.is_async or not isinstance(clause.target, ast.Name) \
            or not isinstance(clause.iter, (ast.Tuple, ast.List)) or not 1 < len(clause.iter.elts) <= MAX_UNROLLED \
            or not all(isinstance(e, ast.Constant) and type(e.value) in (str, int) for e in clause.iter.elts):
        return None
    keyed = isinstance(expr, ast.DictComp)
    if isinstance(expr, ast.DictComp) and not (isinstance(expr.key, ast.Name) and expr.key.id == clause.target.id):
        return None
    calls = ex.interp.calls
    scratch = flow.copy()
    items: list[tuple[str, Value]] = []
    for i, element in enumerate(clause.iter.elts):
        ex.assign(clause.target, ex.eval(element, scratch, frame), scratch, frame, element, expr)
        outer = calls.call_path
        calls.call_path = outer + (-(id(expr) * MAX_UNROLLED + i) - 1,)  # a path of its own, apart from any call's id
        try:
            value = ex.eval(elt, scratch, frame)
        finally:
            calls.call_path = outer
        key = N.literal_key(element) if keyed else str(i)
        items.append((key if key is not None else f"?{i}", value))
    flow.states = scratch.states
    # (the elements' graphs come along, as a comprehension's do: `eval_comprehension`)
    j = join([v for _, v in items])
    return replace(display(items), built=j.built, vague_sites=j.vague_sites, graph=j.graph, sync=j.sync, amp=j.amp)
