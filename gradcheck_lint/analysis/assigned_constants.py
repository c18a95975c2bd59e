"""Constants a path assigned: a name bound to a literal keeps that value on the path until it is bound again.

    loss_sum = 0.0
    for i, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss_sum += criterion(model(x), y)
        if (i + 1) % N == 0:
            loss_sum.backward()
            optimizer.step()
            loss_sum = 0.0            # a path through here knows `loss_sum` is 0.0 ...
    if loss_sum != 0.0:               # ... so it does not flush a partial window that is not there
        loss_sum.backward()
        optimizer.step()

The environment joins the loop's paths into one value of `loss_sum` (0.0 or a graph), so without the fact
the path that stepped at the last micro-batch also takes the flush: its backward runs on a graph built
before that step (GL009) and its step applies gradients already applied (GL001), neither of which can
happen.

A test of such a name against a literal (`x != 0.0`, `x == 0`, `x is None`, `x > 0`) or of its truth
(`if x:`, `while x:`) is decided on a path that holds a fact of it. Only names that nothing out of sight
can rebind: every binding of the name in the module is a whole assignment the interpreter runs
(`Interpreter.plain_bindings`: each forgets what paths knew of the name, `Expressions.forget`), none is a
`with ... as`, `except ... as`, import, definition, `del` or a function's parameter (bound by a call,
which forgets nothing). A fact is an assumption of the path, under a key of its own per scope, name and
literal, so a name of one function says nothing of the same name in another.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterable
from typing import Any

from .walk import iter_tree

__all__ = ["AssignedConstants", "literal_value"]

_ABSENT = object()
_BRANCHES = frozenset({ast.If, ast.While})
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
}


def literal_value(node: ast.AST | None) -> object:
    """The value of a literal a name can be bound to and compared with (a number, a bool, None, a string;
    `-1`), or `_ABSENT`."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
        return -node.operand.value
    if isinstance(node, ast.Constant) and (node.value is None or type(node.value) in (int, float, bool, str)):
        return node.value
    return _ABSENT


def _tested_name(test: ast.expr) -> str | None:
    """The name a test reads against literals only: `x`, `not x`, `x != 0.0`, `0 < x`, `x is None`."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Name):
        return test.id
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _COMPARE:
        left, right = test.left, test.comparators[0]
        if isinstance(left, ast.Name) and literal_value(right) is not _ABSENT:
            return left.id
        if isinstance(right, ast.Name) and literal_value(left) is not _ABSENT:
            return right.id
    return None


def evaluate(test: ast.expr, name: str, value: object) -> bool | None:
    """The truth of `test` (see `_tested_name`) where `name` holds `value`; None when it cannot be told."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    try:
        if isinstance(test, ast.Name) and test.id == name:
            truth = bool(value)
        elif isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _COMPARE:
            left, right = test.left, test.comparators[0]
            lv = value if isinstance(left, ast.Name) and left.id == name else literal_value(left)
            rv = value if isinstance(right, ast.Name) and right.id == name else literal_value(right)
            if lv is _ABSENT or rv is _ABSENT:
                return None
            op = type(test.ops[0])
            if op in (ast.Is, ast.IsNot) and not (lv is None or rv is None or type(lv) is bool or type(rv) is bool):
                return None  # `x is 0`: identity of numbers is CPython's business
            truth = bool(_COMPARE[op](lv, rv))
        else:
            return None
    except TypeError:  # `None < 0`: the test would raise, which is not a branch
        return None
    return truth != negated


_BINDERS = frozenset({ast.arguments, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.Import,
                       ast.ImportFrom, ast.withitem, ast.Delete})


def _bound_otherwise(module: ast.Module) -> set[str]:
    """Names bound other than by an assignment statement: parameters, `with`/`except` targets, imports,
    definitions, `del`."""
    out: set[str] = set()
    for node in iter_tree(module):
        kind = type(node)
        if kind not in _BINDERS:
            continue
        if isinstance(node, ast.arguments):
            out.update(a.arg for a in (*node.posonlyargs, *node.args, *node.kwonlyargs))
            out.update(a.arg for a in (node.vararg, node.kwarg) if a is not None)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.ExceptHandler):
            if node.name:
                out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.withitem):
            if node.optional_vars is not None:
                out.update(n.id for n in iter_tree(node.optional_vars) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Delete):
            out.update(n.id for n in iter_tree(node) if isinstance(n, ast.Name))
    return out


class AssignedConstants:
    """Facts `name == literal` of paths (see the module's docstring)."""

    def __init__(self, module_of: Callable[[ast.AST], ast.Module], plain_of: Callable[[ast.Module], frozenset[str]],
                 matters: Callable[[ast.AST], bool], akeys: dict[str, int], testing: dict[str, list[int]],
                 scopes: dict[int, set[int]]) -> None:
        self._module_of = module_of  # the tree of the file a node is in (a function of another file runs too)
        self._plain_of = plain_of  # `plain_bindings` of a file's tree
        self._matters = matters  # whether a branch's arms touch gradients or leave early
        self._akeys = akeys  # the interpreter's assumption keys, shared: a fact is one more assumption
        self._testing = testing  # name -> assumption keys forgotten when it is bound (`Expressions.forget`)
        # assumption key -> the functions (ids; 0: the module) it is about: a binding of a local forgets only the keys
        # of its own function (`Expressions.forget`), so a fact is registered under the scope it was bound in
        self._scopes = scopes
        self._facts: dict[tuple[int, str], dict[int, object]] = {}  # (scope, name) -> fact key -> literal
        self._subjects: dict[int, frozenset[str]] = {}  # id of a file's tree -> its subjects
        self._where: dict[int, frozenset[str]] = {}  # id of an assignment's target -> its file's subjects

    def subjects(self, node: ast.AST) -> frozenset[str]:
        """The names facts are kept of in the file of `node`."""
        found = self._where.get(id(node))
        if found is None:
            module = self._module_of(node)
            found = self._subjects.get(id(module))
            if found is None:
                tested = {name for n in iter_tree(module) if type(n) in _BRANCHES and isinstance(n, (ast.If, ast.While))
                          and self._matters(n) if (name := _tested_name(n.test)) is not None}
                found = frozenset((tested & self._plain_of(module)) - _bound_otherwise(module)) if tested else frozenset()
                self._subjects[id(module)] = found
            self._where[id(node)] = found
        return found

    def assigned(self, target: ast.expr, value: ast.expr | None, scope: int,
                 assume: Callable[[int], None]) -> None:
        """`target = value` ran (and forgot what paths knew of the name): a literal is known from here."""
        if not isinstance(target, ast.Name):
            return
        literal = literal_value(value)
        if literal is _ABSENT or target.id not in self.subjects(target):
            return
        name = target.id
        text = f"{scope}:{name} := {type(literal).__name__} {literal!r}"
        akey = self._akeys.setdefault(text, len(self._akeys) + 1)
        self._facts.setdefault((scope, name), {})[akey] = literal
        keys = self._testing.setdefault(name, [])
        if akey not in keys:
            keys.append(akey)
        # (before, a fact had no scope: `x = None; if c: x = make()` left `x is None` known on the path that
        # rebound it, and `if x is None: return` ended every path, the training after it unread)
        self._scopes.setdefault(akey, set()).add(scope)
        assume(akey)

    def truth(self, test: ast.expr, scope: int, assumption: Callable[[int], bool | None]) -> bool | None:
        """The truth of a branch test on a path, from the literal the path bound its name to."""
        if not self._facts:
            return None
        name = _tested_name(test)
        if name is None:
            return None
        facts: Iterable[tuple[int, object]] = self._facts.get((scope, name), {}).items()
        for akey, literal in facts:
            if assumption(akey):
                return evaluate(test, name, literal)
        return None
