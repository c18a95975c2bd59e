"""An index that steps by the modulus it is tested with: `for i in range(0, n, s): ... if (i + s) % s == 0:`.

The index takes 0, s, 2s, ...: every value is a multiple of `s`, so `i % s == 0` (and `(i + s) % s == 0`) holds on
every iteration and its negation on none. Such a gate opens on each pass of the loop; each pass is a whole window of
its own (a GRPO trainer that sums a chunk of `s` samples, divides by the chunk's size and steps), not a micro-batch
of a window of `s` passes. Read only where the loop does not assign the index itself. A modulus of 1 is the same fact for any
counter (`if (batch_idx + 1) % 1 == 0:`, a window of one written with its size).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .syntax import code, is_int
from .walk import iter_tree

__all__ = ["strided_truth"]


def strided_truth(test: ast.expr, parent: Callable[[ast.AST], ast.AST | None]) -> bool | None:
    """The truth of `i % s == 0` / `(i + s) % s != 0` (either side, `==` or `!=`) on every iteration of the enclosing
    `for i in range(0, n, s)`; None for any other test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = strided_truth(test.operand, parent)
        return None if inner is None else not inner
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    left, right = test.left, test.comparators[0]
    if is_int(left, 0):
        left, right = right, left
    if not (is_int(right, 0) and isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod)):
        return None
    if is_int(left.right, 1):  # `(batch_idx + 1) % 1 == 0`: every integer is a multiple of 1, a window of one
        return isinstance(test.ops[0], ast.Eq)
    stride = code(left.right)
    index = _index(left.left, stride)
    if index is None:
        return None
    node: ast.AST | None = parent(test)
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name) and node.target.id == index:
            it = node.iter
            if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                    and len(it.args) == 3 and not it.keywords and is_int(it.args[0], 0) and code(it.args[2]) == stride):
                return None
            if any(isinstance(n, ast.Name) and n.id == index and isinstance(n.ctx, ast.Store)
                   for stmt in node.body for n in iter_tree(stmt)):
                return None
            return isinstance(test.ops[0], ast.Eq)
        node = parent(node)
    return None


def _index(expr: ast.expr, stride: str) -> str | None:
    """`i` of `i` or `i + s` / `s + i` (the stride added changes nothing modulo the stride)."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        for a, b in ((expr.left, expr.right), (expr.right, expr.left)):
            if isinstance(a, ast.Name) and code(b) == stride:
                return a.id
    return None
