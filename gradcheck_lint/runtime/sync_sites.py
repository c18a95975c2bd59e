"""Where GL006 anchors when `no_sync()` is chosen the wrong way round: the choice, as the static side.

The guard sees the micro-batch that steps run its backward pass with gradient sync off; the bug is the
choice of the context manager around that pass (`with (model.no_sync() if last else nullcontext()):`),
not the backward call. Read from the source of the backward's own frame: the innermost `with` around
the backward line whose items call a method that switches sync off (the API catalogue's rows of effect
`sync`: DDP's and FSDP's `no_sync`, `accelerator.no_sync`, Fabric's `no_backward_sync`, ...). The
anchor is that call's position; the site keeps the backward's call text, which the message speaks of.
No such `with` in the backward's own function (the context entered by a caller): the backward itself.
"""

from __future__ import annotations

import ast
import dataclasses
import functools

from .gates import _chain_to
from .ledger import Site
from .source_calls import char_col, parsed

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@functools.cache
def _sync_names() -> frozenset[str]:
    from ..analysis.apimodels import catalogue_for

    return catalogue_for().named_by_effect("sync")


def sync_choice_of(backward: Site) -> Site:
    """The backward's site anchored at the `no_sync()`-like call of the `with` around it, or unchanged."""
    p = parsed(backward.path)
    if p is None or backward.line <= 0:
        return backward
    names = _sync_names()
    for node in reversed(_chain_to(p.tree, backward.line)[:-1]):
        if isinstance(node, _SCOPES):
            break
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                for sub in ast.walk(item.context_expr):
                    if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                            and sub.func.attr in names):
                        return dataclasses.replace(backward, line=sub.lineno,
                                                   col=char_col(p, sub.lineno, sub.col_offset))
    return backward
