"""A rescale of gradients by a divisor, guarded by that divisor being above one: the guard changes nothing.

    if config.train.subdivision > 1:
        for param in model.parameters():
            param.grad.data.div_(config.train.subdivision)

On the arm the guard skips, the divisor is 1 (or less, which no count is), and dividing by 1 leaves the
gradients as they are: the statement is the unconditional rescale `p.grad /= D`. Read as a branch, the
skipped arm would be a path on which the gradients are *not* rescaled while the window is more than one
micro-batch (the number of chunks `subdivide_batch` cut), a path no run takes when `D` counts them, and a
false GL003. The interpreter runs such a statement's body on every path instead (`exec_if`).
"""

from __future__ import annotations

import ast

from .syntax import code, int_value

__all__ = ["rescales_only_by_tested"]

_MEMO: dict[int, tuple[ast.AST, bool]] = {}


def rescales_only_by_tested(stmt: ast.If) -> bool:
    """`if D > 1:` (`D >= 2`, `D != 1`, `1 < D`), no `else`, and a body that only rescales gradients by D
    (`p.grad.div_(D)`, `p.grad /= D`, `p.grad.mul_(1 / D)`, in loops over parameters and under tests of
    whether a gradient exists)."""
    hit = _MEMO.get(id(stmt))
    if hit is not None and hit[0] is stmt:
        return hit[1]
    divisor = _above_one(stmt.test)
    found = not stmt.orelse and divisor is not None and _only_rescales(stmt.body, divisor)
    if len(_MEMO) > 10_000:
        _MEMO.clear()
    _MEMO[id(stmt)] = (stmt, found)
    return found


def _above_one(test: ast.expr) -> str | None:
    """The text of D for a test true exactly when the integer D is above one."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, (ast.Gt, ast.NotEq)) and int_value(right) == 1:
        return code(left)
    if isinstance(op, ast.GtE) and int_value(right) == 2:
        return code(left)
    if isinstance(op, (ast.Lt, ast.NotEq)) and int_value(left) == 1:
        return code(right)
    return None


def _only_rescales(body: list[ast.stmt], divisor: str) -> bool:
    for s in body:
        if isinstance(s, ast.For) and not s.orelse:
            if not _only_rescales(s.body, divisor):
                return False
        elif isinstance(s, ast.If) and not s.orelse and "grad" in code(s.test):
            if not _only_rescales(s.body, divisor):  # `if p.grad is not None:`
                return False
        elif not _rescale(s, divisor):
            return False
    return bool(body)


def _is_grad(node: ast.expr) -> bool:
    """`p.grad` or `p.grad.data`."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def _by(factor: ast.expr, divisor: str, divide: bool) -> bool:
    """The operand divides by D: D itself under a division, `1 / D` (`1.0 / D`) under a multiplication."""
    if divide:
        return code(factor) == divisor
    return (isinstance(factor, ast.BinOp) and isinstance(factor.op, ast.Div) and code(factor.right) == divisor
            and isinstance(factor.left, ast.Constant) and factor.left.value == 1)


def _rescale(s: ast.stmt, divisor: str) -> bool:
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        call = s.value
        func = call.func
        if (isinstance(func, ast.Attribute) and func.attr in ("div_", "mul_") and _is_grad(func.value)
                and len(call.args) == 1 and not call.keywords):
            return _by(call.args[0], divisor, func.attr == "div_")
        return False
    if isinstance(s, ast.AugAssign) and _is_grad(s.target) and isinstance(s.op, (ast.Div, ast.Mult)):
        return _by(s.value, divisor, isinstance(s.op, ast.Div))
    if (isinstance(s, ast.Assign) and len(s.targets) == 1 and _is_grad(s.targets[0]) and isinstance(s.value, ast.BinOp)
            and isinstance(s.value.op, (ast.Div, ast.Mult)) and code(s.value.left) == code(s.targets[0])):
        return _by(s.value.right, divisor, isinstance(s.value.op, ast.Div))
    return False
