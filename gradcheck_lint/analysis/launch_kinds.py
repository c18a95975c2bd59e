"""The kind of launch a statement runs under, by the tests of it around it.

A framework that wraps prepared models for data parallelism only on some kinds of launch tells its kind in an
attribute (`accelerator.distributed_type`, a `launch_kind` of the catalogue). Code that tests it decides, for the
arm it guards, whether a prepared model can be a DDP wrapper there:

    if accelerator.distributed_type == DistributedType.MULTI_GPU:
        with model.no_sync():
            accelerator.backward(loss)
    else:
        accelerator.backward(loss)      # several processes only on a launch of another kind (MULTI_CPU, NPU...)

`arm_launch` answers for a node: `ONE_PROCESS` when the tests around it leave no kind of launch under which the
framework wraps models (`== DistributedType.NO`), `UNUSUAL` when they leave only kinds other than the usual one
(the `else` above), None when they say nothing. Only the `if` statements and conditional expressions of the node's
own function are read: a test in a caller is a path the analysis would have to follow (not done here).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

__all__ = ["ONE_PROCESS", "UNUSUAL", "arm_launch"]

ONE_PROCESS, UNUSUAL = "one process", "an unusual launch"


def arm_launch(node: ast.AST, parent: Callable[[ast.AST], ast.AST | None],
               kinds: dict[str, tuple[frozenset[str], str]]) -> str | None:
    """How the tests of a launch kind around `node` (in its function) restrict the kinds it can run under."""
    if not kinds:
        return None
    child, up = node, parent(node)
    answer = None
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
        if isinstance(up, (ast.If, ast.IfExp)) and child is not up.test:
            in_body = child in up.body if isinstance(up, ast.If) else child is up.body
            found = _allowed(up.test, in_body, kinds)
            if found is not None:
                allowed, several, usual = found
                if not allowed & several:
                    return ONE_PROCESS
                if usual not in allowed:
                    answer = UNUSUAL
        child, up = up, parent(up)
    return answer


def _allowed(test: ast.expr, holds: bool,
             kinds: dict[str, tuple[frozenset[str], str]]) -> tuple[frozenset[str], frozenset[str], str] | None:
    """The launch kinds a test leaves where it holds (`holds`) or fails, with the attribute's multi-process kinds and
    usual kind; None when the test is not one of a launch kind's value."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, holds = test.operand, not holds
    if isinstance(test, ast.BoolOp):
        # `a and b` holding: each holds (the first test of a kind decides); failing, or `or`: not read
        if isinstance(test.op, ast.And) and holds:
            return next((f for f in (_allowed(v, True, kinds) for v in test.values) if f is not None), None)
        if isinstance(test.op, ast.Or) and not holds:
            return next((f for f in (_allowed(v, False, kinds) for v in test.values) if f is not None), None)
        return None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if not isinstance(left, ast.Attribute) or left.attr not in kinds:
        left, right = right, left
    if not isinstance(left, ast.Attribute) or left.attr not in kinds:
        return None
    several, usual = kinds[left.attr]
    if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
        values = _values([right])
        positive = isinstance(op, (ast.Eq, ast.Is))
    elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        values = _values(right.elts)
        positive = isinstance(op, ast.In)
    else:
        return None
    if values is None:
        return None
    if positive == holds:
        return values, several, usual
    # the test fails for these values: any other kind is left (the multi-process ones not named, and those not listed)
    return (several | {"NO"}) - values, several, usual


def _values(nodes: list[ast.expr]) -> frozenset[str] | None:
    """The enum members named (`DistributedType.MULTI_GPU`, or its string `"MULTI_GPU"`); None if one is not."""
    out = set()
    for n in nodes:
        if isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.add(n.value.upper())
        else:
            return None
    return frozenset(out)
