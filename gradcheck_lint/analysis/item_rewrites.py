"""A loop over a dict's keys that rewrites the item of each key: after it, every item is what it stored.

    for idx, (key, value) in enumerate(loss_dict.items()):
        loss_dict[key] = value.item()          # every loss of the dict is now a float
        ...
    train_loss += loss_dict["loss"]            # a float: no graph is kept

Each iteration stores under the key it visits, before anything can skip the rest of the iteration, so when
the loop is done no item holds what it held before. Read item by item, the store is under a key the
analysis does not know (`key`), and the item read after the loop (`loss_dict["loss"]`) would still be the
loss with its graph: a false GL008 (DBNet.pytorch's trainer).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from . import names as N
from .syntax import code
from .walk import iter_tree

__all__ = ["every_item_rewritten"]

_LEAVING = (ast.Continue, ast.Break, ast.Return, ast.Raise)
_WRAPPERS = ("list", "tuple", "enumerate", "sorted")


def every_item_rewritten(target: ast.Subscript, stmt: ast.AST,
                         parent: Callable[[ast.AST], ast.AST | None]) -> str | None:
    """The dict's text when `stmt` (`d[k] = ...`) stores under the key of the loop it is directly in, a loop
    over that dict's keys, and nothing before it in the loop's body can skip it; else None."""
    if not isinstance(target.slice, ast.Name):
        return None
    loop = parent(stmt)
    if not isinstance(loop, ast.For) or stmt not in loop.body:
        return None
    base = N.ref_text(target.value)
    if base is None or _key_of(loop, base) != target.slice.id:
        return None
    before = loop.body[:loop.body.index(stmt)]
    if any(isinstance(n, _LEAVING) for s in before for n in iter_tree(s)):
        return None
    return base


def _key_of(loop: ast.For, base: str) -> str | None:
    """The loop variable that holds the key, for a loop over `base`'s keys (`d`, `d.keys()`, `d.items()`,
    through `enumerate(...)` or `list(...)`)."""
    it, bound = loop.iter, loop.target
    while (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in _WRAPPERS
           and len(it.args) == 1 and not it.keywords):
        if it.func.id == "enumerate":
            if not (isinstance(bound, ast.Tuple) and len(bound.elts) == 2):
                return None
            bound = bound.elts[1]
        it = it.args[0]
    method = None
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and not it.args and not it.keywords:
        method, it = it.func.attr, it.func.value
    if code(it) != base:
        return None
    if method in (None, "keys") and isinstance(bound, ast.Name):
        return bound.id
    if method == "items" and isinstance(bound, ast.Tuple) and len(bound.elts) == 2:
        key = bound.elts[0]
        return key.id if isinstance(key, ast.Name) else None
    return None
