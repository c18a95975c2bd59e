"""Module globals that functions fill through `global`: what any of the fills gives.

A project's helpers often keep one object in a module global, a placeholder at import time that a setup
function fills and a getter hands out:

    _ACCELERATOR = None

    def init():
        global _ACCELERATOR
        _ACCELERATOR = Accelerator()

    def get_accelerator():
        return _ACCELERATOR

Read in `get_accelerator` without `init()` run on the path in sight (called from another entry point, or
the getter's file reached from a training script of the project), the name is bound nowhere the analysis
went: it was taken for an object out of sight, an Accelerator that "may well divide" (lockbox 17's
justgrpo GL003 was missed so). What the name can hold is what the fills assign, whichever ran: each fill's
expression evaluated as its function would evaluate it, every local of that function unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .walk import own_nodes


def fills(module: ast.Module) -> dict[str, list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.expr | None]]]:
    """Per name a function of the module declares `global`: each (function, assigned expression) that binds it
    there, the expression None for a binding of another form."""
    out: dict[str, list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.expr | None]]] = {}
    for fn in ast.walk(module):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        declared = {name for node in own_nodes(fn) if isinstance(node, ast.Global) for name in node.names}
        if not declared:
            continue
        for node in own_nodes(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id in declared:
                out.setdefault(node.targets[0].id, []).append((fn, node.value))
                continue
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in declared:
                out.setdefault(node.target.id, []).append((fn, node.value))
                continue
            for target in _stores(node):
                if target in declared:
                    out.setdefault(target, []).append((fn, None))  # `_A, _B = make()`, `_A += 1`
    return out


def _stores(node: ast.AST) -> Iterator[str]:
    """The names a binding of another form than `name = value` stores (a tuple's items, `+=`, a loop's or a
    `with`'s target)."""
    if isinstance(node, ast.Assign):
        targets: list[ast.expr] = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    else:
        return
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                yield sub.id
