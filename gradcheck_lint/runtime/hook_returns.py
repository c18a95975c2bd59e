"""Where a framework's loop got the loss it backpropagated: the `return` of the user's hook (GL003, GL010).

When the user's line calls no backward (`trainer.fit(model, loader)`: Lightning's loop, or the Hugging
Face Trainer's, backpropagates the loss a hook returned), the static side anchors the finding at the
hook's `return`, which has returned by the time the guard sees the backward. The guard finds it from the
stack of the step that found the violation: a frame's `self` of a class of the user's code that derives
from a type whose automatic hook the API catalogue names (`LightningModule.training_step`, the
transformers `Trainer.compute_loss`) and overrides that hook; the anchor is that method's last `return`
of a value. Read only when such a finding is made.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from types import FrameType

from .evidence import Site
from .sites import _is_internal
from .source_calls import char_col, parsed, segment


def hook_return(frame: FrameType | None = None) -> Site | None:
    """The `return` of the user's overridden automatic hook whose object is on the stack from `frame` up
    (None: none found)."""
    from ..analysis.apimodels import catalogue_for  # read only when such a finding is made

    catalogue = catalogue_for()
    hooks = [(catalogue.canonical(h.type), h.method, h.manual_flag) for h in catalogue.hooks()
             if h.optimization == "automatic" and h.method]
    if not hooks:
        return None
    f: FrameType | None = frame if frame is not None else sys._getframe(1)
    seen: set[int] = set()
    while f is not None:
        if "self" in f.f_code.co_varnames:
            obj = f.f_locals.get("self")
            if id(type(obj)) not in seen:
                seen.add(id(type(obj)))
                site = _overridden_return(obj, hooks, catalogue.canonical)
                if site is not None:
                    return site
        f = f.f_back
    return None


def _overridden_return(obj: object, hooks: list[tuple[str, str, str]], canonical: Callable[[str], str]) -> Site | None:
    cls = type(obj)
    lineage = {canonical(f"{c.__module__}.{c.__qualname__}") for c in cls.__mro__}
    for kind, method, manual_flag in hooks:
        if kind not in lineage or manual_flag and getattr(obj, manual_flag, True) is False:
            continue  # another framework's object, or the hook switched to manual optimization
        code = getattr(getattr(cls, method, None), "__code__", None)
        if code is None or _is_internal(code.co_filename):
            continue
        site = _last_return(code.co_filename, code.co_firstlineno, method)
        if site is not None:
            return site
    return None


def _last_return(path: str, first_line: int, name: str) -> Site | None:
    """The last `return <value>` of the function `name` defined at `first_line` (its decorators' line, or its `def`)."""
    p = parsed(path)
    if p is None:
        return None
    for node in ast.walk(p.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name and \
                first_line in (node.lineno, *(d.lineno for d in node.decorator_list)):
            returns = [n for n in _own_nodes(node) if isinstance(n, ast.Return) and n.value is not None]
            if not returns:
                return None
            last = max(returns, key=lambda n: (n.lineno, n.col_offset))
            return Site(path, last.lineno, segment(p, last), col=char_col(p, last.lineno, last.col_offset))
    return None


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a function, not of the functions, lambdas and classes it defines."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return out
