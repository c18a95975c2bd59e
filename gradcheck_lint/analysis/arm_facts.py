"""Facts of one arm: what a call made true only on the paths that ran it, checked against a later path.

A script wraps its model for data parallelism on one arm of a test and trains it on both:

    accelerator = Accelerator() if args.use_accelerate else None
    if accelerator is not None:
        model, optimizer = accelerator.prepare(model, optimizer)     # DDP on several processes
    ...
    if accelerator is not None:
        accelerator.backward(loss)
    else:
        loss.backward()                                              # only where nothing prepared the model

The environment joins the two arms: after the first `if`, `model` names the prepared model whichever way
the path went, so the plain `loss.backward()` looked like an all-reducing backward through DDP (lockbox 38,
nayhein-project's pretrain.py). A path remembers which way it went at each test it must (its literals);
the wrapping records the literals of every path it ran on, and a later path that assumed the opposite of
one literal of each of them never ran it. What the path assumed is read with what it knows by a literal it
bound (`accelerator = None` on the path that never made one: `assigned_constants`).

A literal only says so while its subject keeps its value: a path forgets its literals over a name when the
name is assigned (`Flow.forget`), and each such forgetting starts a new *generation* of those literals. A
literal recorded in one generation is compared only with the same generation's: `accelerator = None`
between the wrapping and the backward makes the two tests tests of different values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .gradstate import PathState

__all__ = ["Literals", "contradicted", "literals_of"]

Literals = frozenset[tuple[int, bool, int]]  # (assumption key, truth, generation)


def literals_of(states: Iterable[PathState], generation: Callable[[int], int]) -> set[Literals]:
    """The literals of each path (its assumed test outcomes, with their generations); one empty set when there
    is no path, so that the fact is then taken to hold everywhere."""
    rows = {frozenset((a.cond, a.value, generation(a.cond)) for a in s.assumptions) for s in states}
    return rows or {frozenset()}


def contradicted(rows: set[Literals] | None, truth: Callable[[int], bool | None],
                 generation: Callable[[int], int]) -> bool:
    """Whether a path took none of the paths the fact was made on: for each, the path's `truth` of one of its
    tests (an assumption key; what it assumed, or what a literal it bound decides) is the opposite, and the
    test is still of the same generation. False when the fact's paths are unknown (`rows` None)."""
    if not rows:
        return False
    return all(any(generation(cond) == gen and truth(cond) is (not value) for cond, value, gen in row)
               for row in rows)
