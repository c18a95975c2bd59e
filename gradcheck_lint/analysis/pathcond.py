"""Path conditions: branch tests read as literals over normalised atoms.

A path remembers which way it went at a test so that a later test of the same fact goes the same way.
Two spellings of one fact are one *atom*, each test a literal (the atom and its polarity):

    if self.scaler is not None:          # atom `self.scaler is None`, false
        self.scaler.scale(loss).backward()
    else:
        loss.backward()
    ...
    if self.scaler is None:              # the same atom, true: the path that scaled does not come here
        optimizer.step()

The atoms a literal is read over:
- `x is None` (`x is not None`, `x == None`, `x != None` are its literals),
- `x` as a truth value (`if x:`, `if not x:`),
- `x == c` for a literal `c` that is not an int (`mode == "train"`, `mode != "train"`): ints compared
  with names are ordered values, which `relations` relates,
- `hasattr(obj, "name")`,
- `x.is_enabled()` as a truth value (a query whose answer the object keeps for its life),
and any other test is an atom of its own text. Different atoms of one subject still constrain each
other (`implies`): a path that knows `x is None` knows `x` is false, and `x == "a"` excludes `x == "b"`.
A path on which a literal and its negation both hold is infeasible and is dropped (`split` in the
interpreter keeps only the paths consistent with what they assumed).

What makes the atom the *same* fact across tests is that its subject keeps its value between them: the
interpreter forgets a path's literals over a name when the name is assigned, and at each iteration of
a loop that assigns it. A subject nothing assigns during the run (`run_constants`) is decided once for
the whole run: every test of it is remembered, so no path takes one arm at one test and the other arm
at another.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from .syntax import code
from .walk import breadth_first, iter_tree

__all__ = ["ENABLED_QUERY", "TRUTHY", "Atom", "Literal", "implies", "literal", "reading", "remaining", "shared_atom",
           "subjects_tested"]

NONE, TRUTHY, EQUALS, HASATTR, TEXT = "none", "truthy", "eq", "hasattr", "text"
_SUBJECT = (ast.Name, ast.Attribute, ast.Subscript)
# methods whose answer an object keeps for its life (a GradScaler's `is_enabled()`, its constructor's `enabled`): a
# test of one is a truth-value atom of its text, as a setting's is (`switches`)
ENABLED_QUERY = "is_enabled"
_SETTLED_QUERIES = frozenset({ENABLED_QUERY})


@dataclass(frozen=True, slots=True)
class Atom:
    """One fact a branch can test: its kind, the expression it is about, and what it is compared with."""

    kind: str
    subject: str
    other: str = ""

    @property
    def key(self) -> str:
        """The text paths remember the atom by (shared by every spelling of it)."""
        if self.kind == NONE:
            return f"{self.subject} is None"
        if self.kind == TRUTHY:
            return self.subject
        if self.kind == EQUALS:
            return f"{self.subject} == {self.other}"
        if self.kind == HASATTR:
            return f"hasattr({self.subject}, {self.other!r})"
        return self.subject


@dataclass(frozen=True, slots=True)
class Literal:
    """A test read as an atom and a polarity: the test holds exactly when the atom's truth is `positive`."""

    atom: Atom
    positive: bool


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _constant_text(node: ast.expr) -> str | None:
    """A literal that is not an int or a float (those are ordered values): a string, a bool, None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes, bool, type(None))):
        return repr(node.value)
    return None


def literal(test: ast.expr) -> Literal:
    """Read a branch test as a literal over a normalised atom (any test: unknown shapes are text atoms)."""
    positive = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, positive = test.operand, not positive
    atom = _atom(test)
    if atom is None:
        return Literal(Atom(TEXT, code(test)), positive)
    return Literal(atom[0], atom[1] == positive)


def shared_atom(test: ast.expr) -> bool:
    """Whether the test is a literal of a normalised atom (not an atom of its own text)."""
    return literal(test).atom.kind != TEXT


def reading(test: ast.expr, shared: Callable[[ast.expr], Literal | None],
            counted: Callable[[ast.expr], list[tuple[str, str]]]) -> tuple[ast.expr, bool, Literal | None]:
    """How a branch reads a test: the expression its condition is of, whether the arms are the other way
    round, and the literal of an atom other tests share (None: the expression is its own atom).

    `shared`: the literal of a comparison or call (`x is None`, `hasattr(...)`), when one; `counted`: the
    counters a test reads modulo a window (a test of a counter's phase is never a truth-value atom).
    `if not self.use_fp16:` is a test of `self.use_fp16` with its arms swapped; `if x is not None:` is the
    literal `x is None`, false; `if i % N:` is its own text."""
    lit = shared(test)
    if lit is not None:
        return test, False, lit
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and not counted(test)
    core = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    if not counted(core):
        truthy = literal(core)
        if truthy.atom.kind == TRUTHY and truthy.positive:
            return core, negated, truthy
    return core, negated, None


def _atom(test: ast.expr) -> tuple[Atom, bool] | None:
    """The atom a test is a literal of, and whether the test holds when it holds."""
    if isinstance(test, _SUBJECT):
        return Atom(TRUTHY, code(test)), True
    if (isinstance(test, ast.Call) and not test.args and not test.keywords and isinstance(test.func, ast.Attribute)
            and test.func.attr in _SETTLED_QUERIES and isinstance(test.func.value, _SUBJECT)):
        return Atom(TRUTHY, code(test)), True
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr" and len(test.args) == 2 \
            and not test.keywords and isinstance(test.args[1], ast.Constant) and isinstance(test.args[1].value, str):
        return Atom(HASATTR, code(test.args[0]), test.args[1].value), True
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op = test.ops[0]
        left, right = test.left, test.comparators[0]
        if _is_none(left) and not _is_none(right):
            left, right = right, left
        if isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) and _is_none(right) and isinstance(left, _SUBJECT):
            return Atom(NONE, code(left)), isinstance(op, (ast.Is, ast.Eq))
        if isinstance(op, (ast.Eq, ast.NotEq)):
            if _constant_text(left) is not None and _constant_text(right) is None:
                left, right = right, left
            other = _constant_text(right)
            if other is not None and isinstance(left, _SUBJECT):
                return Atom(EQUALS, code(left), other), isinstance(op, ast.Eq)
    return None


def _truth_of_constant(text: str) -> bool | None:
    try:
        return bool(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return None


def implies(known: Atom, truth: bool, asked: Atom, objects: bool = False) -> bool | None:
    """The truth of `asked` on a path that knows `known` has this truth (None: open). Only atoms of
    one subject say anything of each other. `objects`: the subject is None or an object with no truth
    of its own (an optimizer, a GradScaler: never false), so `x` and `x is not None` are one fact."""
    if known.subject != asked.subject or known.kind == TEXT or asked.kind == TEXT:
        return None
    if known == asked:
        return truth
    if objects and {known.kind, asked.kind} == {NONE, TRUTHY}:
        return not truth
    if not truth:
        if known.kind == TRUTHY and asked.kind == EQUALS and _truth_of_constant(asked.other) is True:
            return False  # a false value equals no truthy literal
        if known.kind == TRUTHY and asked.kind == NONE:
            return None  # `0`, `""`, `False` are false and not None
        return None
    # the known atom holds
    if known.kind == NONE:
        if asked.kind == TRUTHY:
            return False
        if asked.kind == EQUALS:
            return asked.other == "None"
        if asked.kind == HASATTR:
            return None
    if known.kind == TRUTHY:
        if asked.kind == NONE:
            return False
        if asked.kind == EQUALS and _truth_of_constant(asked.other) is False:
            return False  # `x == False`, `x == ""` are false of a true value
    if known.kind == EQUALS:
        if asked.kind == EQUALS:
            return known.other == asked.other
        if asked.kind == NONE:
            return known.other == "None"
        if asked.kind == TRUTHY:
            return _truth_of_constant(known.other)
    return None


def remaining(choices: frozenset[str], atoms: dict[int, Atom], assumed: Callable[[int], bool | None]) -> frozenset[str]:
    """The literals (of `choices`, all a subject can be) still possible on a path that assumed what
    `assumed` says of these atoms of the subject (by their keys): `x == "a"` false rules "a" out, true
    rules out every other; tests of other kinds say nothing here."""
    left = choices
    for akey, atom in atoms.items():
        truth = assumed(akey)
        if truth is None or atom.kind != EQUALS:
            continue
        left = left - {atom.other} if not truth else left & {atom.other}
    return left


def subjects_tested(module: ast.Module, matters: Callable[[ast.AST], bool],
                    alias_of: Callable[[ast.AST, str], str | None] | None = None) -> Counter[str]:
    """How many `if`/`while` tests and conditional expressions of the module whose branches `matter`
    (they can touch gradients) test each subject. A subject tested once needs no path to remember it,
    nor one tested around logging or set-up only: remembering it would only multiply the paths.
    `alias_of(test statement, name)`: the attribute a local name stands for there, if any (a test of
    `grad_scaler = self.grad_scaler` counts for `self.grad_scaler`)."""
    counts: Counter[str] = Counter()
    for node in iter_tree(module):
        if isinstance(node, (ast.If, ast.While, ast.IfExp)) and matters(node):
            parts = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
            for part in parts:
                lit = literal(part)
                if lit.atom.kind != TEXT:
                    subject = lit.atom.subject
                    if alias_of is not None and subject.isidentifier():
                        subject = alias_of(node, subject) or subject
                    counts[subject] += 1
    return counts


def sets_on_every_path(body: list[ast.stmt], target: str) -> bool:
    """Whether every path through `body` (a constructor's) that does not raise assigns `target`
    (`self.optimizer`) before it ends or returns: both arms of an `if`, the body and every handler of a
    `try`; a loop may run zero times, and a `return` before the assignment leaves it unset."""
    return _sets(body, target) == _SET


_SET, _OPEN, _ESCAPES = "set", "open", "escapes"  # assigned on every path; not on some; returns unassigned


def _sets(body: list[ast.stmt], target: str) -> str:
    for stmt in body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is not None and any(isinstance(n, ast.Attribute) and code(n) == target for t in targets for n in breadth_first(t)):
                return _SET
            continue
        if isinstance(stmt, ast.Raise):
            return _SET  # a path that raises constructs nothing
        if isinstance(stmt, ast.Return):
            return _ESCAPES
        if isinstance(stmt, ast.Delete) and any(code(t) == target for t in stmt.targets):
            return _ESCAPES
        if isinstance(stmt, ast.If):
            arms = [_sets(stmt.body, target), _sets(stmt.orelse, target)]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            arms = [_sets(stmt.body, target)]
        elif isinstance(stmt, ast.Try):
            if _sets(stmt.finalbody, target) == _SET:
                return _SET
            arms = [_sets(stmt.body + stmt.orelse, target), *(_sets(h.body, target) for h in stmt.handlers)]
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            inner = _sets(stmt.body + stmt.orelse, target)
            arms = [_ESCAPES if inner == _ESCAPES else _OPEN]
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        else:
            if any(isinstance(n, (ast.Return,)) for n in breadth_first(stmt)):
                return _ESCAPES
            continue
        if _ESCAPES in arms:
            return _ESCAPES
        if all(a == _SET for a in arms):
            return _SET
    return _OPEN
