"""The last iteration of a `for` loop over `range(N)`, tested by its index: a phase the loop leaves from.

    for j in range(accumulation_steps):
        scaler.scale(model(batch[j]).mean() / accumulation_steps).backward()
        if j == accumulation_steps - 1:          # once, on the last micro-batch
            scaler.unscale_(optimizer)
    clip_grad_norm_(model.parameters(), 1.0)     # after the unscale

Read as a test that may go either way on each iteration, one path unscales on two micro-batches and another
leaves the loop without unscaling (two false GL007 on T5 experiments' fixed trainer). The index of such a
loop counts the window of the loop's bound from 0, as a counter that cycles does (`counters.cycling`): `j == 0`
holds on the first iteration, `j == N - 1` on the last; and the loop is left only after its last iteration.
A loop of one iteration is the usual exception of window reasoning (N >= 2).
"""

from __future__ import annotations

import ast

from .names import dotted
from .syntax import code, int_value

__all__ = ["last_iteration_bound", "last_of_strided", "strided_window"]


def last_iteration_bound(stmt: ast.For) -> str | None:
    """N of `for i in range(N)` (`range(0, N)`) whose body compares `i` with its last value (`i == N - 1`,
    `N - 1 != i`); None for any other loop."""
    if not isinstance(stmt.target, ast.Name) or not isinstance(stmt.iter, ast.Call):
        return None
    call = stmt.iter
    if not (isinstance(call.func, ast.Name) and call.func.id == "range") or call.keywords:
        return None
    if len(call.args) == 1:
        bound, stride = call.args[0], None
    elif len(call.args) in (2, 3) and int_value(call.args[0]) == 0:
        bound, stride = call.args[1], call.args[2] if len(call.args) == 3 else None
    else:
        return None
    name, text = stmt.target.id, code(bound)
    # `for j in range(0, n, b): ... if j == (n // b - 1) * b:`: the index takes n // b values, the last of them there
    window = text if stride is None or int_value(stride) == 1 else strided_window(text, code(stride))
    for part in stmt.body:
        for node in ast.walk(part):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                break
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) \
                    and _is_last(node.left, node.comparators[0], name, window):
                return window
    return None


def strided_window(bound: str, stride: str) -> str:
    """The window of a loop over `range(0, bound, stride)`, as the source text the loop's index cycles through."""
    return f"{_operand(bound)} // {_operand(stride)}"


def last_of_strided(value: ast.expr, window: str) -> bool:
    """`value` is the last index of a loop over `range(0, n, b)` whose window is `n // b` (`strided_window`):
    `(n // b - 1) * b` or `n - b` (both the last one when b divides n, as a loop of whole micro-batches has)."""
    try:
        parsed = ast.parse(window, mode="eval").body
    except SyntaxError:
        return False
    if not (isinstance(parsed, ast.BinOp) and isinstance(parsed.op, ast.FloorDiv)):
        return False
    # (`ast.unparse`, not `code`: nodes parsed here are freed at once, and `code` remembers texts by node id)
    n, b = ast.unparse(parsed.left), ast.unparse(parsed.right)
    forms = {f"({n} // {b} - 1) * {b}", f"{n} - {b}", f"{b} * ({n} // {b} - 1)"}
    return ast.unparse(value) in {ast.unparse(ast.parse(f, mode="eval").body) for f in forms}


def _is_last(a: ast.expr, b: ast.expr, name: str, window: str) -> bool:
    return any(dotted(index) == name and (_minus_one(other) == window or last_of_strided(other, window))
               for index, other in ((a, b), (b, a)))


def _operand(text: str) -> str:
    return text if text.isidentifier() or text.replace(".", "").isidentifier() or text.isdigit() else f"({text})"




def _minus_one(node: ast.expr) -> str | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and int_value(node.right) == 1:
        return code(node.left)
    return None
