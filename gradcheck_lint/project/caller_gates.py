"""The accumulation gate a step method's flag parameter stands for, read from the loops that call it.

A model or trainer class often splits the accumulation loop from the step. The loop, in the training
script, decides when a window ends; the method, in the model's file, backpropagates on every call and
steps only when told:

    # train.py                                       # models/sr_model.py
    for batch in loader:                             def optimize_parameters(self, it, apply_gradient):
        accum += 1                                       ...
        if accum >= model.accum_iters:                   l_d.backward()
            accum = 0                                    if apply_gradient:
            apply_gradient = True                            self.optimizer_d.step()
        else:                                                self.optimizer_d.zero_grad()
            apply_gradient = False
        model.optimize_parameters(it, apply_gradient)

Read alone, the method's `if apply_gradient:` is a flag of unknown meaning. When the caller's analysis
cannot follow the call (the model comes from a registry), the method's own file reads the callers: a call
`<anything>.optimize_parameters(...)` in a loop of another project file, whose argument at the flag's
place is a name set `True` in the body of an accumulation gate of the same function (`flags`). The gate's
test then stands for the flag. The receiver's class is not proven (only the method's name links them),
so a finding resting on it is `possible`.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..analysis.conditions import analyse_test
from ..analysis.resets import ResetWindow, reset_window
from ..analysis.syntax import FUNCTIONS, made_here
from ..analysis.walk import breadth_first, child_nodes
from .callers import project_files
from .index import ForeignModule, ProjectIndex

__all__ = ["CallerGate", "caller_gates"]

MAX_FILES_READ = 12  # project files parsed looking for the calls of one method
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


@dataclass(frozen=True, slots=True)
class CallerGate:
    """The gate of a caller's loop that sets the flag handed to the method."""

    test: ast.expr  # the gate's test, its call's receiver read as `self` (`accum >= self.accum_iters`)
    statement: ast.If  # the gate itself, as written
    path: str  # the caller's file (absolute)
    line: int  # of the call
    reset: ResetWindow | None = None  # the windows of the counter the caller's loop resets (`resets`)


def caller_gates(index: ProjectIndex, me: str, method: str, position: int, param: str) -> list[CallerGate]:
    """Gates of calls of `method` in other project files that hand it, as argument `position` (0: the
    first after `self`) or keyword `param`, a flag set under an accumulation gate; at most MAX_FILES_READ
    files are parsed, in path order."""
    needle = re.compile(rf"\.{re.escape(method)}\s*\(")
    out: list[CallerGate] = []
    read = 0
    for path in project_files(index.root):
        if path == me:
            continue
        text = index.text_of(path)
        if not text or not needle.search(text):
            continue
        module = index.load(path)
        read += 1
        if module is not None:
            out.extend(_gates_in(module, method, position, param))
        if read >= MAX_FILES_READ:
            break
    return out


def _gates_in(module: ForeignModule, method: str, position: int, param: str) -> Iterator[CallerGate]:
    for node in breadth_first(module.tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method):
            continue
        arg = _argument(node, position, param)
        if not isinstance(arg, ast.Name) or not _in_loop(module, node):
            continue
        scope = _scope(module, node)
        gate = _gate_setting(scope, arg.id)
        if gate is not None:
            reset = reset_window(gate.test, lambda n: module.parents.get(id(n)))
            yield CallerGate(_as_self(gate.test, node.func.value), gate, module.path, node.lineno, reset)


def _argument(call: ast.Call, position: int, param: str) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == param:
            return k.value
    if any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return None
    return call.args[position] if position < len(call.args) else None


def _in_loop(module: ForeignModule, node: ast.AST) -> bool:
    current = module.parents.get(id(node))
    while current is not None and not isinstance(current, FUNCTIONS):
        if isinstance(current, _LOOPS):
            return True
        current = module.parents.get(id(current))
    return False


def _scope(module: ForeignModule, node: ast.AST) -> ast.AST:
    current = module.parents.get(id(node))
    while current is not None and not isinstance(current, FUNCTIONS):
        current = module.parents.get(id(current))
    return current if current is not None else module.tree


def _gate_setting(scope: ast.AST, name: str) -> ast.If | None:
    """The accumulation gate of `scope` whose body sets `name = True` (its other arm, if any, `False`)."""
    for node in _own_nodes(scope):
        if not isinstance(node, ast.If) or not _assigns(node.body, name, True) or _assigns(node.orelse, name, True):
            continue
        if analyse_test(id(node), node, node.test).is_accumulation_gate:
            return node
    return None


def _assigns(block: list[ast.stmt], name: str, value: bool) -> bool:
    return any(isinstance(st, ast.Assign) and isinstance(st.value, ast.Constant) and st.value.value is value
               and any(isinstance(t, ast.Name) and t.id == name for t in st.targets) for st in block)


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function (or module) body, nested functions and classes left out."""
    todo = child_nodes(scope)
    while todo:
        node = todo.pop()
        if isinstance(node, (*FUNCTIONS, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        todo.extend(child_nodes(node))


def _as_self(test: ast.expr, receiver: ast.expr) -> ast.expr:
    """`test` with the call's receiver read as the method's `self` (`model.accum_iters` ->
    `self.accum_iters`): in the method, that object is `self`."""
    wanted = ast.dump(receiver)

    class ToSelf(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            if isinstance(node, ast.expr) and ast.dump(node) == wanted:
                return ast.copy_location(ast.Name(id="self", ctx=ast.Load()), node)
            return super().visit(node)

    out = ToSelf().visit(copy.deepcopy(test))
    if not isinstance(out, ast.expr):
        return test
    made_here(out)
    return out
