"""Backward passes of one forward graph: several losses of one batch, not micro-batches of a window.

A loop that runs the backward of several losses of one batch before one step (`loss.backward(
retain_graph=True)` for each) accumulates their gradients on purpose: the step applies the sum of
the losses, and no loss is to be divided by the number of passes. Micro-batches of a window have
graphs of their own; the losses of one batch share the nodes of its forward pass. So a pass run with
`retain_graph=True` marks the first nodes of its graph (their `metadata`, which lives as long as the
node), and each later pass until the step looks for such a mark among the first nodes of its own
graph: a mark found makes it a pass of that batch. The parameters' `AccumulateGrad` nodes, which
every micro-batch shares, are skipped. Only loops that retain a graph pay for the walk.
"""

from __future__ import annotations

from typing import Any

_KEY = "gradcheck_lint_batch"
MAX_NODES = 64  # nodes of a graph marked or searched, breadth first from its root


def _nodes(grad_fn: Any) -> list[Any]:
    out: list[Any] = []
    queue = [grad_fn]
    seen: set[int] = set()
    while queue and len(out) < MAX_NODES:
        fn = queue.pop(0)
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        if type(fn).__name__ == "AccumulateGrad":
            continue
        out.append(fn)
        queue.extend(nf for nf, _ in getattr(fn, "next_functions", ()))
    return out


def shared(grad_fn: Any) -> int | None:
    """The batch (a pass id) of a retained graph this graph shares nodes with, or None."""
    if grad_fn is None:
        return None
    for fn in _nodes(grad_fn):
        try:
            batch = fn.metadata.get(_KEY)
        except (AttributeError, RuntimeError, TypeError):
            continue
        if batch is not None:
            return int(batch)
    return None


def mark(grad_fn: Any, batch: int) -> None:
    """Mark the first nodes of a retained graph as those of `batch`."""
    if grad_fn is None:
        return
    for fn in _nodes(grad_fn):
        try:
            fn.metadata.setdefault(_KEY, batch)
        except (AttributeError, RuntimeError, TypeError):
            continue
