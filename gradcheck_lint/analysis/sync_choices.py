"""Gradient-sync contexts chosen by a test: on which micro-batches the choice switches sync off.

    my_context = model.no_sync if batch_idx % accum_grad != 0 else nullcontext    # FunASR, before its fix
    with my_context():
        ...
    if (batch_idx + 1) % accum_grad == 0:
        optim.step()

The choice switches sync off when its test holds (or when it fails, by the arm the context sits in). Read
against the test that gates the step, over the same counter, it says whether the micro-batch that steps
runs with sync off: its backward then does not all-reduce, so each rank steps on gradients of its own
and the replicas diverge. Both tests are evaluated on every counter value of three windows, for every
window size from 2 to 8; the choice is wrong only when, for each size, some stepping micro-batch runs with
sync off.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from .names import dotted
from .syntax import code
from .values import Value
from .walk import child_nodes
from .window_arithmetic import concrete, modulo_operations

_SIZES = range(2, 9)


@dataclass(frozen=True, slots=True)
class SyncChoice:
    """A conditional expression choosing between a sync-off context and another value."""

    node: ast.IfExp
    test: ast.expr  # its test, read through a name it was assigned to (`last = (i + 1) % N == 0`)
    off_when: bool  # sync is off when the test is this
    wrappers: frozenset[int]  # uids of the data-parallel wrappers whose sync it switches
    off_arm: ast.expr  # the arm that switches sync off

    @property
    def off_text(self) -> str:
        """The arm that switches sync off, as written (`model.no_sync`)."""
        return code(self.off_arm)


def choice_of(expr: ast.IfExp, arms: list[Value], aliases: dict[str, ast.expr]) -> SyncChoice | None:
    """The sync choice an `a if test else b` makes, when exactly one arm is a sync-off context (called,
    `model.no_sync()`, or referenced, `model.no_sync`); `aliases`: tests assigned to names."""
    offs = [_sync_off(v) for v in arms]
    if len(offs) != 2 or (offs[0] is None) == (offs[1] is None):
        return None
    wrappers = offs[0] if offs[0] is not None else offs[1]
    test, off_when = read_test(expr.test, offs[0] is not None, aliases.get)
    off_arm = expr.body if offs[0] is not None else expr.orelse
    return SyncChoice(expr, test, off_when, wrappers, off_arm) if wrappers else None


def read_test(test: ast.expr, off_when: bool, bound: Callable[[str], ast.expr | None]) -> tuple[ast.expr, bool]:
    """The test a choice is read by, and whether sync is off when it holds: a name bound to a test is that
    test (`bound`: the test a name was assigned, `last = (i + 1) % N == 0`, or the one a conditional expression
    of two truth values holds, `reduction_disabled = False if counter >= N else True`), and `not` flips which
    truth switches sync off (`model.no_sync() if not last else ...`). The runtime guard reads choices alike."""
    for _ in range(8):  # (a name bound to a flag bound to a test: `disabled = False if last else True`)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, off_when = test.operand, not off_when
        elif isinstance(test, ast.Name) and (found := bound(test.id)) is not None and found is not test:
            test = found
        else:
            break
    return test, off_when


def _sync_off(value: Value) -> frozenset[int] | None:
    c = value.const
    if isinstance(c, tuple) and c[:1] == ("deferred",):
        c = c[1]
    if isinstance(c, tuple) and c[:2] == ("context", "sync") and c[3]:
        return frozenset(c[2])
    return None


def off_when_stepping(choice: SyncChoice, gate: ast.expr) -> bool | None:
    """Whether the micro-batch that steps (`gate` holds) runs with sync off, for every window size: True
    when it does, False when it never does, None when the two tests cannot be read over one counter."""
    if code(choice.test) == code(gate):
        return choice.off_when  # one test: sync off exactly when stepping, or exactly when not
    if _negation(choice.test, gate):
        return not choice.off_when  # `counter < N` beside the gate `counter >= N`: the same test, negated
    counters, sizes = _roles(gate)
    c2, s2 = _roles(choice.test)
    counters, sizes = counters | c2, sizes | s2
    known = counters | sizes
    if not counters or not sizes or counters & sizes or not _names(gate) <= known or not _names(choice.test) <= known:
        return None
    names = set(_dotted_names(gate)) | set(_dotted_names(choice.test))
    verdicts = set()
    for n in _SIZES:
        hit = False
        for k in range(3 * n):
            env = {d: n if _last(d) in sizes else k for d in names}
            steps, test = concrete(gate, env), concrete(choice.test, env)
            if steps is None or test is None:
                return None
            hit = hit or bool(steps) and bool(test) is choice.off_when
        verdicts.add(hit)
    return verdicts.pop() if len(verdicts) == 1 else None


_NEGATED_OPS = {ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
                ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}


def _negation(test: ast.expr, other: ast.expr) -> bool:
    """Two comparisons of the same operands that always disagree (`c < n` and `c >= n`)."""
    if not (isinstance(test, ast.Compare) and isinstance(other, ast.Compare)
            and len(test.ops) == 1 and len(other.ops) == 1):
        return False
    return (_NEGATED_OPS.get(type(test.ops[0])) is type(other.ops[0]) and code(test.left) == code(other.left)
            and code(test.comparators[0]) == code(other.comparators[0]))


def same_names(choice: SyncChoice, gate: ast.expr) -> bool:
    """Both tests name the counter and the window size alike (`batch_idx`, `accum_grad`), not only by the
    same last part (`accum_grad` and `self.accum_grad`: the same number by its name only)."""
    return code(choice.test) == code(gate) or set(_dotted_names(choice.test)) <= set(_dotted_names(gate))


def _roles(test: ast.expr) -> tuple[set[str], set[str]]:
    """The counters (left of `%`) and window sizes (right of `%`) of a test, by their last name part."""
    counters: set[str] = set()
    sizes: set[str] = set()
    for mod in modulo_operations(test):
        sizes |= {_last(n) for n in _dotted_names(mod.right)}
        counters |= {_last(n) for n in _dotted_names(mod.left)}
    return counters, sizes


def _names(test: ast.expr) -> set[str]:
    return {_last(n) for n in _dotted_names(test)}


def _dotted_names(node: ast.AST) -> list[str]:
    """The outermost names and dotted attributes under `node` (`self.accum_grad`, not also `self`)."""
    out: list[str] = []
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Name, ast.Attribute)):
            d = dotted(n)
            if d is not None:
                out.append(d)
                continue
        todo.extend(child_nodes(n))
    return out


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]
