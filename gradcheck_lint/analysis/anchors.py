"""Anchors of window phases: which values of a counter the phase domain counts as a window's first position.

The phase domain (`window_arithmetic`: first, middle, last) places a counter `x` in windows of size N by
`x - anchor` modulo N, for an unknown N >= 2: position 0 is the first micro-batch, -1 (N - 1) the last, and
any other position is the first, a middle or the last one depending on N. A test `(x + a) % N == r` holds
at the position `r - a - anchor`: it is decided at a phase only when that is 0 or -1. Any anchor is sound
(a reset or a loop's first value is placed relative to it); which one is chosen only decides which tests
the domain can follow. A hand-kept counter incremented before its tests is 1 on the first micro-batch:

    step = 0                       # the last position before the first window (anchor 1)
    for x in loader:
        step += 1                  # 1, 2, ...: the first window is 1..n
        if step % n == 1:          # residue 1: position 0, each window's first micro-batch
            optimizer.zero_grad()
        (loss(x) / n).backward()
        if step % n == 0:          # residue 0: position -1, its last
            optimizer.step()

Counted from 0 (the default for a hand-kept counter), `step % n == 1` is position 1, undecided (the
second micro-batch is the last one when n is 2): the clear and the step could not be read as one window,
and each path seemed to clear inside a window or step twice without a clear. So the anchor of a counter
and window is chosen so that every residue the module tests it at is position 0 or -1, preferring the
counter's first value (and then the value before it) when that can be; when no anchor fits all of them (a
clear at `step % n == 2` and a step at `step % n == 0`: one of them mid-window for some N) the first
value stays the anchor and the tests stay undecided, as before.
"""

from __future__ import annotations

import ast

from .syntax import code
from .walk import breadth_first
from .window_arithmetic import counter_names, position_phase, residue_offset, residue_shift

__all__ = ["Anchors"]


class Anchors:
    """The residues a module tests each (counter, window) at, and the anchor they choose."""

    def __init__(self, module: ast.Module) -> None:
        self._offsets: dict[tuple[str, str], set[int]] | None = None
        self._module = module
        self._chosen: dict[tuple[str, str, int], int] = {}

    def offsets(self, counter: str, window: str) -> frozenset[int]:
        """The residues of `counter` modulo `window` the module's tests single out."""
        if self._offsets is None:
            self._offsets = _collect(self._module)
        return frozenset(self._offsets.get((counter, window), ()))

    def anchor(self, counter: str, window: str, first: int) -> int:
        """The anchor of `counter`'s phases in `window`, for a counter whose first value is `first`."""
        key = (counter, window, first)
        found = self._chosen.get(key)
        if found is None:
            found = self._chosen[key] = choose(self.offsets(counter, window), first)
        return found

    def phase_at(self, counter: str, window: str, value: int, first: int) -> frozenset[str] | None:
        """The phase of `counter` when it stands at `value` (a reset, a loop's first value); None: unknown."""
        at = position_phase(value - self.anchor(counter, window, first))
        return frozenset({at}) if at is not None else None


def choose(offsets: frozenset[int], first: int) -> int:
    """An anchor at which every residue in `offsets` is position 0 or -1: `first` (the counter's first
    value is then a window's first micro-batch) or `first + 1` (its last, before the first window) when
    either fits, else the lowest that fits; `first` when none does."""
    fitting: set[int] | None = None
    for offset in offsets:
        here = {offset, offset + 1}
        fitting = here if fitting is None else fitting & here
    if not fitting:
        return first
    for preferred in (first, first + 1):
        if preferred in fitting:
            return preferred
    return min(fitting)


def _collect(module: ast.Module) -> dict[tuple[str, str], set[int]]:
    """(counter, window) -> the residues `x % N == r` and the truth tests `if x % N:` single out."""
    out: dict[tuple[str, str], set[int]] = {}
    for node in breadth_first(module):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            for side in (node.left, node.comparators[0]):
                if isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mod):
                    _note(out, side, residue_offset(node, _counter(side), code(side.right)))
        for part in _truth_operands(node):
            if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Mod):
                shift = residue_shift(part, _counter(part), code(part.right))
                _note(out, part, None if shift is None else -shift)
    return out


def _counter(mod: ast.BinOp) -> str:
    names = counter_names(mod.left)
    return names[0] if names else ""


def _note(out: dict[tuple[str, str], set[int]], mod: ast.BinOp, offset: int | None) -> None:
    counter = _counter(mod)
    if counter and offset is not None:
        out.setdefault((counter, code(mod.right)), set()).add(offset)


def _truth_operands(node: ast.AST) -> list[ast.expr]:
    """The expressions `node` reads as truth values (`if x % N:`, `not x % N`, `a and x % N`)."""
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        return [node.test]
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [node.operand]
    return []
