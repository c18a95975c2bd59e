"""Counters past a bound: a loop's counter only grows, so a comparison of it with a bound the loop does not
assign, once it has gone one way for good, goes that way on every later iteration.

    for epoch in range(args.num_epochs):
        if epoch < args.start_epoch:      # a resumed run replays the schedule of the epochs it skips ...
            optimizer.step()
            continue
        ...                               # ... all before its first training epoch

Read afresh on each iteration, the test let a path train an epoch and then replay again, stepping on the
gradients the training left (PN-Diffusion, lockbox 38: two certain GL001 no run has). The interpreter keeps a
path's literal of such a test when the loop binds its counter anew (`Interpreter.lasting_tests`); this module
says which loops count up, which names a bound reads, and which truth of a comparison lasts.
"""

from __future__ import annotations

import ast

from .relations import Relation

__all__ = ["counted_upward", "lasting_truth", "names_in"]

_ALL_SIGNS = frozenset({-1, 0, 1})
_UPWARD = (frozenset({1}), frozenset({0, 1}))  # signs of `counter - bound` that, once reached, a growing counter keeps


def counted_upward(loop: ast.For) -> str | None:
    """The name a `for` loop counts up by one per iteration: `k` of `for k in range(...)` (no step, or a positive
    one), `i` of `for i, x in enumerate(...)`."""
    it, target = loop.iter, loop.target
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)):
        return None
    if it.func.id == "range" and isinstance(target, ast.Name):
        step = it.args[2] if len(it.args) == 3 else None
        if step is None or (isinstance(step, ast.Constant) and type(step.value) is int and step.value > 0):
            return target.id
    if it.func.id == "enumerate" and isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
        return target.elts[0].id
    return None


def names_in(text: str) -> set[str]:
    """The names and attribute names an operand's text reads (`args.start_epoch`: `args`, `start_epoch`, itself)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return {text}
    found = {text}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute):
            found.add(n.attr)
    return found


def lasting_truth(rel: Relation, counter: str) -> bool | None:
    """The truth of a comparison of a growing counter that, once reached, holds on every later iteration
    (`epoch >= start`: True; `epoch < start`: False); None when neither lasts (`epoch == start`)."""
    a, b, holds = rel
    signs = holds if a == counter else frozenset(-x for x in holds)  # of `counter - bound`
    if signs in _UPWARD:
        return True
    if _ALL_SIGNS - signs in _UPWARD:
        return False
    return None
