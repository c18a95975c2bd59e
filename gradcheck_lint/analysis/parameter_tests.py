"""Tests of a function's parameters, remembered from one call to the next while the caller hands in the same value.

    def train_epochs(self, task_id):
        for batch in loader:
            self.observe_batch(task_id, batch)

    def observe_batch(self, task_id, batch):
        self.optimizer.zero_grad()
        if task_id > 0: ... else: loss.backward()

`task_id > 0` goes the same way on every call of one `train_epochs`: a path that backpropagates on one call and
not on the next cannot happen. A test that reads nothing but parameters its function never assigns is
remembered by the paths (`Interpreter.correlated`), as a test of a flag its loop never assigns is; what they
remember stops holding when a call hands in something else:

- a call whose argument is another expression than the last call's (another name, a literal, a computed value)
  forgets it at the binding;
- a call handing in the same name links the caller's name to the tests of the parameter, so the caller's
  assignment of that name (the loop target of `for t in range(3): train(t)`) forgets them as it forgets its own.
"""

from __future__ import annotations

import ast

from .conditions import Condition
from .flow import Flow, Function
from .names import dotted
from .syntax import parameters

# the nodes a test of settings is made of: names, attributes, literals, `not`, `and`/`or`, comparisons (`Interpreter`'s
# test of a flag its loop never assigns reads the same)
FLAG_NODES = (ast.Name, ast.Attribute, ast.Constant, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Load, ast.Not, ast.And,
              ast.Or, ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn, ast.Gt, ast.GtE, ast.Lt, ast.LtE)


def parameter_names(fn: Function) -> frozenset[str]:
    """Every parameter of `fn` but `self`/`cls` (positional, keyword-only, `*args`, `**kwargs`)."""
    pos, kwonly, stars = parameters(fn)
    return frozenset([*(p.name for p in (*pos, *kwonly)), *stars]) - {"self", "cls"}


def reads_only_parameters(fn: Function, test: ast.expr, stored: set[str]) -> bool:
    """The test reads parameters of `fn` (`task_id > 0`, `config.fp16`, `mode == "train"`) and nothing else, and
    `fn` assigns none of what it reads (`stored`: `syntax.stored_names(fn)`)."""
    params = parameter_names(fn)
    roots: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(test):
        if not isinstance(node, FLAG_NODES):
            return False
        if isinstance(node, ast.Name):
            roots.add(node.id)
            read.add(node.id)
        elif isinstance(node, ast.Attribute):
            read.add(node.attr)
    return bool(roots) and roots <= params and not read & stored


def handed_arguments(fn: Function, call: ast.Call, skip_first: bool) -> dict[str, ast.expr]:
    """The expression the call hands each parameter it surely binds: by position before any `*args` it spreads,
    or by keyword (`skip_first`: past the parameter the call binds itself, a method's `self`)."""
    pos, _kwonly, _stars = parameters(fn)
    if skip_first and pos:
        pos = pos[1:]
    spread = next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), len(call.args))
    given: dict[str, ast.expr] = {p.name: arg for p, arg in zip(pos, call.args[:spread])}
    given.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    return given


def argument_texts(fn: Function, call: ast.Call | None, skip_first: bool, bound: int) -> dict[str, str | None]:
    """What the call hands each parameter, as text the next call's can be compared with: a name or dotted
    reference (`task_id`, `self.cfg`) or a literal; None for anything computed (`t + 1`, `tasks[i]`, a call) and
    for every parameter when the call spreads `*args` / `**kwargs`, is not known, or passes another number of
    positional arguments than the `bound` ones the call binds (`Base.method(self, x)`). A parameter left at its
    default gets the default's text when it is a literal."""
    pos, kwonly, _stars = parameters(fn)
    if skip_first and pos:
        pos = pos[1:]
    out: dict[str, str | None] = dict.fromkeys(parameter_names(fn))
    if call is None or any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords) \
            or len(call.args) != bound:
        return out
    given = handed_arguments(fn, call, skip_first)
    for p in (*pos, *kwonly):
        if p.name in out:
            out[p.name] = _text(given.get(p.name, p.default))
    return out


def _reads_variable(test: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(test))


def _text(expr: ast.expr | None) -> str | None:
    if isinstance(expr, ast.Constant):
        return f"={expr.value!r}"
    if isinstance(expr, (ast.Name, ast.Attribute)):
        return dotted(expr)
    return None


class HandedValues:
    """What each function's parameters were last handed (`argument_texts`), and the forgetting it calls for."""

    def __init__(self, akeys_testing: dict[str, list[int]], tests: dict[int, list[Condition]]) -> None:
        self._akeys_testing = akeys_testing  # the interpreter's: a name -> the tests (assumption keys) reading it
        self._tests = tests  # the interpreter's: an assumption key -> the conditions sharing it
        self._last: dict[tuple[int, str], str | None] = {}
        self._bodies: dict[int, frozenset[int]] = {}  # a function's id -> the ids of its nodes
        self._own: set[int] = set()  # tests remembered for this reason alone (`remembered`)
        self._found: dict[tuple[int, str, int], list[int]] = {}  # `_tests_of`, by function, parameter, tests known

    def remembered(self, akey: int) -> None:
        """The paths remember this test only because it reads parameters (`reads_only_parameters`)."""
        self._own.add(akey)

    def _tests_of(self, fn: Function, param: str) -> list[int]:
        """The tests of `fn`'s own body reading a parameter as a variable (`task_id > 0`, `config.fp16`), not an
        attribute of the same name (`self.task_id`), nor a caller's test handed in for it."""
        keys = self._akeys_testing.get(param, ())
        if not keys:
            return []
        memo = (id(fn), param, len(keys))  # a name's list of tests only grows
        found = self._found.get(memo)
        if found is None:
            own = self._bodies.get(id(fn))
            if own is None:
                own = self._bodies[id(fn)] = frozenset(id(n) for n in ast.walk(fn))
            found = self._found[memo] = [k for k in keys if any(
                id(c.test) in own and _reads_variable(c.test, param) for c in self._tests.get(k, ()))]
        return found

    def bind(self, fn: Function, handed: dict[str, str | None], flow: Flow) -> None:
        """At a call of `fn`: forget the tests of each parameter handed something other than on the last call.
        A parameter handed the caller's name for it (`observe(task_id)` to `task_id`) keeps them: a test's text
        is then a test of the caller's variable, whose own assignment forgets it."""
        drop: list[int] = []
        for param, text in handed.items():
            key = (id(fn), param)
            if text is None:  # a computed value, or a call not in sight
                drop.extend(k for k in self._tests_of(fn, param) if k in self._own)
            elif text != param and self._last.get(key, "") != text:
                drop.extend(self._tests_of(fn, param))
            self._last[key] = text
        if drop:
            flow.forget(drop)

    def called_again(self, fn: Function, flow: Flow) -> None:
        """A call from out of sight (a step function's assumed per-batch loop): every parameter may hold
        something new."""
        self.bind(fn, dict.fromkeys(parameter_names(fn)), flow)

    def link(self, fn: Function, handed: dict[str, str | None]) -> None:
        """After the call: the caller's names handed in stand for the parameters' tests too (their assignment
        in the caller forgets them)."""
        for param, text in handed.items():
            if text is None or text.startswith("=") or text == param:
                continue
            keys = self._tests_of(fn, param)
            if keys:
                mine = self._akeys_testing.setdefault(text, [])
                mine.extend(k for k in keys if k not in mine)
