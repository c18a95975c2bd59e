"""Tuples and lists joined with `+`: each item keeps its place.

`outputs = (loss, per_example.detach()) + outputs` (a model's forward, as transformers' heads write it) is a
tuple whose item 0 holds the loss's graph and item 1 none. Read as one blur of its operands, every item of it
held every graph, and a `per_example` loss kept for a sampler's own objective was taken for a graph through
the model. When the left operand's items are known by position, the result's are too: the right operand's
items follow them, renumbered, when they are known; else what the right operand holds stands for every later
place (`REST_KEY`: a read of one of them gets the right operand whole, and the positions count as unknown).
"""

from __future__ import annotations

from .values import Value, display

REST_KEY = "?rest"


def concatenated(left: Value, right: Value) -> Value | None:
    """`left + right` of two sequences, item by item; None when the left operand's places are not known."""
    head = left.spread()
    if head is None:
        return None
    tail = right.spread()
    if tail is not None:
        items = [(str(i), v) for i, v in enumerate([*head, *tail])]
    elif right.items:
        return None  # a dict, or places already unknown: nothing is said of where what goes
    else:
        items = [(str(i), v) for i, v in enumerate(head)] + [(REST_KEY, right)]
    return display(items)
