"""Where GL004 anchors: the condition that lets a step run on the wrong micro-batch, as the static side.

The guard sees a step apply a first window of the wrong size; the bug is in the condition gating that
step (`if i % N == 0:`). Read from the source of the step's own frame: the innermost `if` around the
step call in its loop body (the step in its body or its `else`) whose condition takes a remainder
(`%`), else the innermost `if` around it, or else the nearest earlier `if ...: continue` of that
body (a guard clause skipping the step; `if ...: return` in a function's body). The anchor is the condition's
position; the site keeps the step's call text and names, which the message speaks of. No such `if`
in the step's own function (a step in a helper called under the gate): the step itself.

A condition that only reads a flag (`if update:`, `if not skip:`) is followed to where the flag is
computed, as the static side anchors it: the flag's last assignment before the `if` in the same function
(`update = count == 0`), or, for a parameter of the function, the argument the running call passed for it
(the calling frame, up the stack: `self._train_batch(x, y, update=update)`), followed again in the caller
(up to three calls). A flag assigned a constant, or passed one, stays at the `if`.
"""

from __future__ import annotations

import ast
import dataclasses
import sys
from types import FrameType

from .evidence import Site
from .sites import _user_frame
from .source_calls import _Parsed, char_col, parsed

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Module)


def gate_of(step: Site, frame: FrameType | None = None) -> Site:
    """The step's site anchored at its gate's condition (see the module's docstring), or unchanged.

    `frame`: the user's frame running the step (its callers are read for a flag passed as an argument)."""
    p = parsed(step.path)
    if p is None or step.line <= 0:
        return step
    chain = _chain_to(p.tree, step.line)
    if not chain:
        return step
    gates: list[ast.If] = []  # the `if`s around the step in its loop body, innermost first
    for node, child in zip(reversed(chain[:-1]), reversed(chain[1:])):
        if isinstance(node, ast.If) and child is not node.test:
            gates.append(node)
        elif isinstance(node, (*_LOOPS, *_SCOPES)):
            if not gates:
                guard = _guard_clause(node, child)
                return _traced(step, p, chain, guard, frame) if guard is not None else step
            break
    if not gates:
        return step
    # a counter's test (`i % N == 0`) before any other (`if scaler is not None:` around the step)
    counted = [g for g in gates if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(g.test))]
    return _traced(step, p, chain, (counted or gates)[0], frame)


def step_frame(step: Site) -> FrameType | None:
    """The user's frame on the current stack running the step at `step` (None: not on it)."""
    frame = _user_frame(sys._getframe(1))
    while frame is not None:
        if frame.f_code.co_filename == step.path and frame.f_lineno == step.line:
            return frame
        frame = _user_frame(frame.f_back)
    return None


def _traced(step: Site, p: _Parsed, chain: list[ast.AST], gate: ast.If, frame: FrameType | None) -> Site:
    """The step anchored at the gate's condition, or where the flag it reads is computed."""
    name = _flag(gate.test)
    if name is not None:
        try:
            origin = _origin(step.path, p, chain, name, gate.lineno, frame, 3)
        except (RecursionError, ValueError):
            origin = None
        if origin is not None:
            path, where, node = origin
            col = char_col(where, node.lineno, node.col_offset)
            return dataclasses.replace(step, path=path, line=node.lineno, col=col)
    return _at(step, p, gate.test)


def _flag(test: ast.expr) -> str | None:
    """The name a condition reads as a flag: `update` of `if update:` and `if not update:`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return test.id if isinstance(test, ast.Name) else None


_Origin = tuple[str, _Parsed, ast.expr]


def _origin(path: str, p: _Parsed, chain: list[ast.AST], name: str, before: int, frame: FrameType | None,
            calls: int) -> _Origin | None:
    """Where the flag `name`, read at line `before` in the function of `chain`, is computed: its value's
    expression (its last assignment before that line there, or the argument passed for it by the caller
    running in `frame`'s caller, followed there when it is a name again), or None."""
    function = next((n for n in reversed(chain) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    scope: ast.AST = function if function is not None else chain[0]
    assigned = [n for n in _own_statements(scope) if isinstance(n, ast.Assign) and n.lineno < before
                and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name]
    if assigned:
        value = max(assigned, key=lambda n: n.lineno).value
        return None if isinstance(value, ast.Constant) else (path, p, value)
    if function is None or calls <= 0 or frame is None or name not in _parameters(function):
        return None
    caller = _user_frame(frame.f_back)
    if caller is None:
        return None
    cpath = caller.f_code.co_filename
    cp = parsed(cpath)
    call = _running_call(cp, caller) if cp is not None else None
    if cp is None or call is None:
        return None
    passed = _argument(function, call, name)
    if passed is None or isinstance(passed, ast.Constant):
        return None
    if isinstance(passed, ast.Name):
        return _origin(cpath, cp, _chain_to(cp.tree, call.lineno), passed.id, call.lineno, caller, calls - 1)
    return cpath, cp, passed


def _own_statements(scope: ast.AST) -> list[ast.stmt]:
    """The statements of a scope, not of the functions and classes it defines."""
    out: list[ast.stmt] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.stmt):
            out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = function.args
    return [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]]


def _running_call(p: _Parsed, frame: FrameType) -> ast.Call | None:
    """The call expression `frame` is executing (by its instruction's source span), or None."""
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is None or frame.f_lasti < 0:
        return None
    try:
        line, end_line, col, end_col = list(positions())[frame.f_lasti // 2]
    except (IndexError, ValueError):
        return None
    if line is None or end_line is None or col is None or end_col is None:
        return None
    # keyed as ast gives them: line, column, end line, end column
    return p.calls_by_span.get((line, col, end_line, end_col))


def _argument(function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, name: str) -> ast.expr | None:
    """The argument `call` passes for the parameter `name` of `function` (None: not passed, or not known)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    callee = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
    if callee != function.name:
        return None
    keyword = next((k.value for k in call.keywords if k.arg == name), None)
    if keyword is not None:
        return keyword
    positional = [x.arg for x in [*function.args.posonlyargs, *function.args.args]]
    # a method called on an object (`self._train_batch(x, y)`): its first parameter is the object
    bound = 1 if isinstance(call.func, ast.Attribute) and positional and positional[0] in ("self", "cls") else 0
    index = positional.index(name) - bound if name in positional else -1
    return call.args[index] if 0 <= index < len(call.args) else None


def _chain_to(tree: ast.AST, line: int) -> list[ast.AST]:
    """The nodes from the module down to the innermost statement that starts on `line`."""
    chain: list[ast.AST] = [tree]
    node = tree
    while True:
        nxt = None
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.stmt):
                continue
            end = getattr(child, "end_lineno", None) or child.lineno
            if child.lineno <= line <= end:
                nxt = child
                break
        if nxt is None:
            return chain
        chain.append(nxt)
        node = nxt


def _guard_clause(block_owner: ast.AST, child: ast.AST) -> ast.If | None:
    """The nearest `if ...: continue` before `child` in the body of a loop (`if ...: return` in a function's)."""
    body = getattr(block_owner, "body", [])
    if child not in body:
        return None
    function = isinstance(block_owner, (ast.FunctionDef, ast.AsyncFunctionDef))
    leave = (ast.Return, ast.Continue) if function else ast.Continue
    for stmt in reversed(body[:body.index(child)]):
        if isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], leave) and not stmt.orelse:
            return stmt
    return None


def _at(step: Site, p: _Parsed, test: ast.expr) -> Site:
    return dataclasses.replace(step, line=test.lineno, col=char_col(p, test.lineno, test.col_offset))
