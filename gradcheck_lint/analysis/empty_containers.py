"""Membership in a module's container that is empty for the whole run: `model in _AMP_MODELS` with
`_AMP_MODELS = set()` and nothing of the module ever filling it.

    _AMP_MODELS = set()                       # models known to train well under AMP: none yet
    ...
    amp_enabled = args.amp and args.cuda and args.model in _AMP_MODELS
    ...
    if amp_enabled:
        scaler.unscale_(optimizer)            # never runs: `amp_enabled` is False on every run

A test `x in NAME` is False (`not in`: True) on every run when NAME is bound once, in the module's own code, to an
empty literal (`set()`, `frozenset()`, `[]`, `()`, `{}`, `dict()`, `list()`, `tuple()`), and nothing of the module
may change it: no other binding (no `global NAME` in a function, no augmented assignment, no `del`), no attribute of
it used (`NAME.add(m)`, `NAME.update(...)`), no item stored, and the name never handed to a call or stored
elsewhere (an alias could be filled). Any other use but a membership test, a `len` or a loop over it leaves it
open. (Arllan-lanliu/AT-ADD-EXP, lockbox 41: two certain GL007 on unscales under `if amp_enabled:`.)
"""

from __future__ import annotations

import ast

from .walk import iter_tree

__all__ = ["always_false", "empty_membership"]

_EMPTY_CALLS = frozenset({"set", "frozenset", "list", "dict", "tuple"})
_FOUND: dict[int, tuple[ast.Module, frozenset[str]]] = {}


def empty_membership(test: ast.expr, module: ast.Module) -> bool | None:
    """False for `x in NAME` (True for `x not in NAME`) of a container empty on every run; None otherwise."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.In, ast.NotIn))
            and isinstance(test.comparators[0], ast.Name)):
        return None
    if test.comparators[0].id not in _empty_names(module):
        return None
    return isinstance(test.ops[0], ast.NotIn)


def always_false(expr: ast.expr, module: ast.Module) -> bool:
    """`expr` is false on every run by such a membership: the test itself, an `and` one of whose parts is, or
    `bool(...)` of one."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "bool" \
            and len(expr.args) == 1 and not expr.keywords:
        return always_false(expr.args[0], module)
    if isinstance(expr, ast.BoolOp):
        return isinstance(expr.op, ast.And) and any(always_false(v, module) for v in expr.values)
    return empty_membership(expr, module) is False


def _empty_names(module: ast.Module) -> frozenset[str]:
    known = _FOUND.get(id(module))
    if known is not None and known[0] is module:
        return known[1]
    found = frozenset(_read(module))
    _FOUND[id(module)] = (module, found)
    return found


def _is_empty_literal(node: ast.expr) -> bool:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and not node.elts:
        return True
    if isinstance(node, ast.Dict) and not node.keys:
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _EMPTY_CALLS
            and not node.args and not node.keywords)


def _read(module: ast.Module) -> set[str]:
    candidates: dict[str, int] = {}
    for stmt in module.body:  # bound in the module's own top-level code, to an empty literal
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and _is_empty_literal(stmt.value):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                candidates[targets[0].id] = candidates.get(targets[0].id, 0) + 1
    names = {n for n, count in candidates.items() if count == 1}
    if not names:
        return names
    parents: dict[int, ast.AST] = {}
    for node in iter_tree(module):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    bindings: dict[str, int] = {}
    for node in iter_tree(module):
        if isinstance(node, ast.Global):
            names.difference_update(node.names)
        elif isinstance(node, ast.Name) and node.id in names:
            if not isinstance(node.ctx, ast.Load):
                bindings[node.id] = bindings.get(node.id, 0) + 1
            elif not _read_only_use(node, parents.get(id(node))):
                names.discard(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            args = node.args if not isinstance(node, ast.ClassDef) else None
            if args is not None:
                names.difference_update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
            if not isinstance(node, ast.Lambda):
                names.discard(node.name)
        elif isinstance(node, ast.alias):
            names.discard((node.asname or node.name).split(".")[0])
    return {n for n in names if bindings.get(n) == 1}


def _read_only_use(node: ast.Name, parent: ast.AST | None) -> bool:
    """A use of the container that cannot fill it: the right of a membership test, `len(...)` of it, a loop or
    comprehension over it."""
    if isinstance(parent, ast.Compare) and any(c is node for c in parent.comparators) and all(
            isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops):
        return True
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in ("len", "bool") \
            and parent.args == [node]:
        return True
    return isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node
