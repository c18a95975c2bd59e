"""Comparisons of the same two operands: what a path knows of one test says of another.

`while iteration < num_iter:` around `iteration += 1; if iteration == num_iter: break`: a path that
took the `break` knows `iteration == num_iter`, so the `while` test is false on it and the loop does
not run again, although the two tests are different texts. Operands are compared as ordered values
(counters, sizes); only tests of exactly two operands with one of the six comparison operators count.
"""

from __future__ import annotations

import ast

from .syntax import code

# Which orderings of (left, right) each operator holds for: -1 left is less, 0 equal, 1 greater.
_HOLDS = {ast.Lt: frozenset({-1}), ast.LtE: frozenset({-1, 0}), ast.Eq: frozenset({0}),
          ast.NotEq: frozenset({-1, 1}), ast.Gt: frozenset({1}), ast.GtE: frozenset({0, 1})}
_ALL = frozenset({-1, 0, 1})
_OPERAND = (ast.Name, ast.Attribute, ast.Constant, ast.Subscript)

Relation = tuple[str, str, frozenset[int]]  # (left operand, right operand, orderings the test holds for)


def relation(test: ast.expr) -> Relation | None:
    """`a < b` -> ("a", "b", {-1}), with the operands in a fixed (sorted) order: `b > a` gives the same."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _HOLDS):
        return None
    left, right = test.left, test.comparators[0]
    if not (isinstance(left, _OPERAND) and isinstance(right, _OPERAND)):
        return None
    if isinstance(left, ast.Constant) and isinstance(right, ast.Constant):
        return None
    for side in (left, right):
        if isinstance(side, ast.Constant) and (type(side.value) is not int):
            return None  # `x == None`, `mode == "train"`: not ordered values
    a, b = code(left), code(right)
    holds = _HOLDS[type(test.ops[0])]
    if a > b:
        a, b, holds = b, a, frozenset(-o for o in holds)
    return a, b, holds


def implied(known: Relation, truth: bool, asked: Relation) -> bool | None:
    """The truth of `asked` on a path that knows `known` has this truth (same operands); None: open."""
    possible = known[2] if truth else _ALL - known[2]
    if possible <= asked[2]:
        return True
    if not possible & asked[2]:
        return False
    return None
