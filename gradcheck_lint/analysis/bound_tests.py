"""Tests bound to names (`sync = (step + 1) % N == 0` ... `if sync:`), read through the name where it is tested.

The name holds the truth the test had when it was computed. A counter the test reads may move between the
binding and the `if` (`should_update = (self.num_steps + 1) % N == 0; self.num_steps += 1; ...; if
should_update:`): read at the `if`, the test must see the counter as it was, so it is rewritten in terms of
the counter's new value (`self.num_steps % N == 0`). A move the analysis cannot count (a step that is not
a constant, or a counter moved in a loop the binding is not in: how many times is unknown) leaves the name
a plain flag, its test no longer read.
"""

from __future__ import annotations

import ast
import copy

from .names import dotted, reads_any
from .syntax import int_value, made_nodes
from .walk import breadth_first


class BoundTests(dict[str, ast.expr]):
    """Name -> the test it holds (a dict, read as one), with the loops each was bound in."""

    def __init__(self) -> None:
        super().__init__()
        self._loops: dict[str, tuple[int, ...]] = {}

    def bind(self, name: str, test: ast.expr, loops: tuple[int, ...]) -> None:
        self[name] = test
        self._loops[name] = loops

    def moved(self, counter: str, by: int | None, loops: tuple[int, ...]) -> None:
        """`counter` changed by `by` (None: by an amount not known) at a point inside `loops`."""
        for name, test in list(self.items()):
            if not reads_any(test, {counter}):
                continue
            if by is None or self._loops.get(name) != loops:
                del self[name]  # the flag keeps its truth; what the counter is now says nothing of it
                self._loops.pop(name, None)
                continue
            self[name] = _shifted(test, counter, -by)


def flag_test(source: ast.expr | None) -> ast.expr | None:
    """The test a conditional expression of two truth values holds: `True if c else False` is `c`, and
    `False if c else True` is `not c` (NMTGMinor's `reduction_disabled = False if counter >= N else True`)."""
    if not isinstance(source, ast.IfExp):
        return None
    arms = (_truth(source.body), _truth(source.orelse))
    if arms == (True, False):
        return source.test
    if arms != (False, True):
        return None
    made = getattr(source, _NEGATED, None)
    if not isinstance(made, ast.expr):
        made = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=source.test), source)
        made_nodes([made])
        setattr(source, _NEGATED, made)  # one node for every evaluation: tests are known by their nodes
    return made


def _truth(node: ast.expr) -> bool | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, bool) else None


_NEGATED = "_gradlint_negated_test"


def as_written(test: ast.expr) -> tuple[ast.expr, str, int] | None:
    """For a test rewritten here, the test as the code wrote it, the counter, and how far the counter moved
    since (`(c - 1) % N == 0` read at the `if` is `c % N == 0` written one increment earlier: `c`, 1)."""
    found = getattr(test, _WRITTEN, None)
    return found if isinstance(found, tuple) else None


_WRITTEN = "_gradlint_bound_test"


def _shifted(test: ast.expr, counter: str, delta: int) -> ast.expr:
    """`test` with `counter` read as `counter + delta` (folded: `(c + 1)` moved by -1 is `c`)."""
    out = _Shift(counter, delta).visit(copy.deepcopy(test))
    assert isinstance(out, ast.expr)
    ast.fix_missing_locations(out)
    made_nodes(breadth_first(out))  # their text is their unparsed form
    earlier = as_written(test)
    if earlier is not None and earlier[1] == counter:
        written, moved = earlier[0], earlier[2] - delta
    else:
        written, moved = test, -delta
    setattr(out, _WRITTEN, (written, counter, moved))  # a node made here: its own attribute
    return out


class _Shift(ast.NodeTransformer):
    def __init__(self, counter: str, delta: int) -> None:
        self.counter, self.delta = counter, delta

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        value = int_value(node.right)
        if isinstance(node.op, (ast.Add, ast.Sub)) and dotted(node.left) == self.counter and value is not None:
            offset = value if isinstance(node.op, ast.Add) else -value
            return _plus(node.left, offset + self.delta, node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return _plus(node, self.delta, node) if node.id == self.counter else node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        return _plus(node, self.delta, node) if dotted(node) == self.counter else self.generic_visit(node)


def _plus(counter: ast.expr, offset: int, where: ast.AST) -> ast.expr:
    if offset == 0:
        return counter
    op: ast.operator = ast.Add() if offset > 0 else ast.Sub()
    return ast.copy_location(ast.BinOp(counter, op, ast.copy_location(ast.Constant(abs(offset)), where)), where)
