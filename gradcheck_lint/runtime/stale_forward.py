"""GL009 at runtime: which forward pass built the graph that a backward reused after a step.

Nothing is recorded while training: PyTorch's in-place error is rare, and watching every forward pass
would cost every step. When the error comes, the user's frame that ran the backward is still on the
stack. The model whose parameters the step changed is looked up among that frame's names (`D`,
`self.netD`), and the function's source is searched for calls of it assigned to a name before the step
(or, when the step is elsewhere, before the backward): `d_fake = D(fake)`. Of those, the last whose
tensor (still in the frame) is a node of the failing loss's graph is the forward named; when none is,
nothing is named rather than a wrong call (`d_real = D(real)` is not in the generator's loss).
"""

from __future__ import annotations

import ast
import linecache
from types import FrameType
from typing import Any

import torch

from .evidence import Site


def stale_forward(frame: FrameType | None, param: torch.Tensor | None, step: Site, backward: Site,
                  tensors: Any = None) -> tuple[str, int] | None:
    """The call expression and line of the forward pass of the model holding `param` whose graph the
    backward of `tensors` at `backward` (run from `frame`) went through, or None when the source and the
    frame do not show it: a call of that model assigned to a name whose tensor is in the loss's graph."""
    if frame is None or param is None:
        return None
    names = _names_of_model(frame, param)
    if not names:
        return None
    path = frame.f_code.co_filename
    source = "".join(linecache.getlines(path))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    scope = _enclosing(tree, frame.f_lineno or backward.line)
    limit = step.line if step.path == path and step.line < backward.line else backward.line
    in_graph = _graph_nodes(tensors)
    calls = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and node.value.lineno < limit and _text(node.value.func) in names:
            held = frame.f_locals.get(node.targets[0].id)
            grad_fn = held.grad_fn if isinstance(held, torch.Tensor) else None
            if grad_fn is not None and any(grad_fn is n for n in in_graph):  # its graph is the one reused
                calls.append(node.value)
    if not calls:
        return None
    last = max(calls, key=lambda n: (n.lineno, n.col_offset))
    text = ast.get_source_segment(source, last) or _text(last.func) + "(...)"
    return " ".join(text.split()), last.lineno


def _graph_nodes(tensors: Any, limit: int = 20_000) -> list[Any]:
    """The autograd nodes of the loss's graph (at most `limit`), kept alive while they are compared."""
    roots = [t.grad_fn for t in (tensors if isinstance(tensors, (list, tuple)) else [tensors])
             if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    seen: list[Any] = []
    ids: set[int] = set()
    todo = roots
    while todo and len(seen) < limit:
        node = todo.pop()
        if node is None or id(node) in ids:
            continue
        ids.add(id(node))
        seen.append(node)
        todo.extend(child for child, _ in getattr(node, "next_functions", ()))
    return seen


def _names_of_model(frame: FrameType, param: torch.Tensor) -> set[str]:
    """The frame's names (and `self.<attribute>`s) bound to the smallest module that holds `param`."""
    found: list[tuple[int, str]] = []

    def consider(name: str, value: Any) -> None:
        if isinstance(value, torch.nn.Module):
            size = 0
            holds = False
            for p in value.parameters():
                size += 1
                holds = holds or p is param
            if holds:
                found.append((size, name))

    scopes = [frame.f_locals, frame.f_globals]
    for scope in scopes:
        for name, value in list(scope.items()):
            consider(name, value)
    owner = frame.f_locals.get("self")
    if owner is not None and not isinstance(owner, torch.nn.Module):
        for name, value in list(getattr(owner, "__dict__", {}).items()):
            consider(f"self.{name}", value)
    if not found:
        return set()
    smallest = min(size for size, _name in found)
    return {name for size, name in found if size == smallest}


def _enclosing(tree: ast.Module, line: int) -> ast.AST:
    """The innermost function that holds `line`, else the module."""
    best: ast.AST = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is tree or node.lineno >= best.lineno:  # type: ignore[attr-defined]
                best = node
    return best


def _text(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_text(node.value)}.{node.attr}"
    return ""
