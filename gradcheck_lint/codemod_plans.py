"""Fix plans of the rules whose fixes move or wrap code (GL006, GL007, GL008, GL010), read on `ast`.

Each function answers, from the semantic model and the syntax tree, whether the change is clear and
whether it is safe, and says it as a `Transform` that `gradcheck_lint.codemods` carries out with
libcst when fixing. Nothing here imports libcst.
"""

from __future__ import annotations

import ast

from .analysis import TrainingModel
from .analysis.conditions import Condition
from .analysis.events import AmpMisuse, Backward, KeepAlive, Step
from .analysis.names import dotted
from .analysis.syntax import arguments, code
from .analysis.walk import iter_tree
from .fixplan import (
    SAFE,
    UNSAFE,
    FixPlan,
    Transform,
    alone_on_line,
    block_of,
    scope_of,
    source,
    starts_line,
    statement_of,
)

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _statement_holding(model: TrainingModel, node: ast.AST) -> ast.stmt | None:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = model.parent(current)
    return current


def _index(body: list[ast.stmt], stmt: ast.stmt) -> int | None:
    return next((i for i, s in enumerate(body) if s is stmt), None)


def _reference(text: str) -> bool:
    try:
        return dotted(ast.parse(text, mode="eval").body) is not None
    except SyntaxError:
        return False


def _scope_nodes(scope: ast.AST) -> list[ast.AST]:
    """Every node of a function (or module) body, nested definitions included."""
    return list(iter_tree(scope))


# -- GL007: `scaler.unscale_(optimizer)` before a clip of still-scaled gradients -------------------
def unscale_before_clip(model: TrainingModel, misuse: AmpMisuse) -> FixPlan | None:
    """Insert `scaler.unscale_(opt)` right before the clip, in the block that also holds `scaler.step(opt)`."""
    if misuse.kind != "clip_before_unscale" or not isinstance(misuse.node, ast.Call):
        return None
    if any(m.node is misuse.node and m.optimizer.uid != misuse.optimizer.uid for m in model.amp_misuses):
        return None  # the clipped parameters belong to several optimizers: which to unscale is unclear
    stmt = _statement_holding(model, misuse.node)
    if not isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) or stmt.value is not misuse.node or not alone_on_line(model, stmt):
        return None
    body = block_of(model, stmt)
    at = _index(body, stmt) if body is not None else None
    backward = misuse.other
    if body is None or at is None or not isinstance(backward, ast.Call) or not isinstance(backward.func, ast.Attribute):
        return None
    scaled = backward.func.value  # `scaler.scale(loss)` of `scaler.scale(loss).backward()`
    if not (isinstance(scaled, ast.Call) and isinstance(scaled.func, ast.Attribute) and scaled.func.attr == "scale"):
        return None
    scaler, opt = code(scaled.func.value), model.table.label(misuse.optimizer.uid)
    if not (_reference(scaler) and _reference(opt)):
        return None

    def steps_here(s: ast.stmt) -> bool:
        call = s.value if isinstance(s, ast.Expr) else None
        return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "step"
                and code(call.func.value) == scaler and [code(a.value) for a in arguments(call)] == [opt])

    if not any(steps_here(s) for s in body[at + 1:]):
        return None  # the step is under another condition (or none): an unscale_ here would not match it
    scope = scope_of(model, stmt)
    if scope is None or any(isinstance(n, ast.Attribute) and n.attr == "unscale_" for n in _scope_nodes(scope)):
        return None  # an unscale_ elsewhere: one more could unscale twice before the step
    fixed = f"{scaler}.unscale_({opt})"
    return FixPlan(f"Insert `{fixed}` before the clip", (Transform("insert_before", (stmt,), (("code", fixed),)),), SAFE)


# -- GL008: `.detach()` / `.item()` on what is accumulated --------------------------------------
def _base(expr: ast.AST) -> ast.AST:
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return expr


def _escapes(scope: ast.AST, name: str) -> bool:
    """The name leaves its scope: returned or yielded as is, declared global/nonlocal, used by a nested
    definition, or it came in from the caller (a parameter: `def log(history, loss): history.append(loss)`)."""
    args = getattr(scope, "args", None)
    if isinstance(args, ast.arguments) and name in {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}:
        return True
    for node in _scope_nodes(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) and node.value is not None:
            if any(isinstance(n, ast.Name) and n.id == name for n in _bare_names(node.value)):
                return True
        if isinstance(node, _DEFINITIONS) and node is not scope:
            if any(isinstance(n, ast.Name) and n.id == name for n in iter_tree(node)):
                return True
    return False


def _bare_names(expr: ast.AST) -> list[ast.Name]:
    """Names in an expression that stand for themselves (not `x.item()`, `x[0]`, `len(x)`)."""
    if isinstance(expr, ast.Name):
        return [expr]
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return [n for e in expr.elts for n in _bare_names(e)]
    if isinstance(expr, ast.Dict):
        return [n for e in expr.values for n in _bare_names(e)]
    if isinstance(expr, ast.Starred):
        return _bare_names(expr.value)
    return []


def _number_total(scope: ast.AST, name: str, node: ast.AST) -> bool:
    """`name` starts from a Python number and is never used as a tensor (no `name.x`, `name[i]`, `f(name)`)."""
    starts = False
    for n in _scope_nodes(scope):
        if isinstance(n, ast.Assign) and n is not node and any(isinstance(t, ast.Name) and t.id == name for t in n.targets):
            if not (isinstance(n.value, ast.Constant) and type(n.value.value) in (int, float)):
                return False
            starts = True
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.value, ast.Name) and n.value.id == name:
            return False
        if isinstance(n, ast.Call) and any(isinstance(a, ast.Name) and a.id == name for a in [*n.args, *(k.value for k in n.keywords)]):
            return False
    return starts


_MAYBE_NOT_TENSOR = (ast.IfExp, ast.BoolOp, ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Compare)


def _tensor_on_every_branch(scope: ast.AST | None, stored: ast.expr, node: ast.AST) -> bool:
    """`stored` is a tensor whichever branch ran, so `.detach()` of it cannot raise: not a conditional
    expression, `or`/`and`, literal or container (`loss if training else 0.0` is a float on one branch),
    and, for a name, no assignment in its scope binds it to one of those (`loss = 0.0` on a path that
    skips the forward pass)."""
    if isinstance(stored, _MAYBE_NOT_TENSOR):
        return False
    if not isinstance(stored, ast.Name):
        return True
    if scope is None:
        return False
    for n in _scope_nodes(scope):
        if n is node:
            continue
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == stored.id for t in n.targets):
            if isinstance(n.value, _MAYBE_NOT_TENSOR):
                return False
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign)) and isinstance(n.target, ast.Name) and n.target.id == stored.id:
            if n.value is not None and isinstance(n.value, _MAYBE_NOT_TENSOR):
                return False
    return True


def keep_values_only(model: TrainingModel, event: KeepAlive) -> FixPlan | None:
    """`total += loss` -> `total += loss.item()` (a number total), else `.detach()` on the stored tensor."""
    node, stored = event.node, event.stored
    if event.via_item:
        return None  # a dict or object holding the graph in one item: `.detach()` of the container is no method of it
    if event.untyped:
        return None  # a tuple of losses as likely as one tensor (`loss = sum(losses)`): no one rewrite fits both
    if event.backpropagated_later:
        return None  # `losses[-1].backward()` after the append: a detached item has no graph to backpropagate
    stmt = node if isinstance(node, ast.stmt) else statement_of(model, node)
    if stmt is None or not starts_line(model, stmt):
        return None
    if isinstance(node, ast.AugAssign):
        target: ast.AST = node.target
        running = isinstance(node.op, ast.Add) and node.value is stored
    elif isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        running = (isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add) and node.value.right is stored
                   and code(node.value.left) == code(target))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "extend", "add", "insert"):
        target, running = node.func.value, False
    else:
        return None
    if not any(n is stored for n in iter_tree(node)):
        return None
    scope = scope_of(model, node)
    base = _base(target)
    local = isinstance(base, ast.Name) and scope is not None and not _escapes(scope, base.id)
    if running and isinstance(target, ast.Name) and scope is not None and _number_total(scope, target.id, node):
        return FixPlan(f"Add `{code(stored)}.item()` to `{event.shown}`", (Transform("call_method", (stored,), (("method", "item"),)),), UNSAFE)
    # safe only where `.detach()` exists on every branch: the stored value is a tensor however it was made
    typed = _tensor_on_every_branch(scope, stored, node)
    return FixPlan(f"Store `{code(stored)}.detach()` in `{event.shown}`", (Transform("call_method", (stored,), (("method", "detach"),)),),
                   SAFE if local and typed else UNSAFE)


# -- GL010: drop the manual `/ N` of a loss the framework divides already --------------------------
def _spine_division(expr: ast.AST, divisor: str) -> ast.BinOp | None:
    """`... / divisor` scaling the whole expression (reached through `*` and `/` only)."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div) and code(expr.right) == divisor:
        return expr
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mult, ast.Div)):
        return _spine_division(expr.left, divisor) or (_spine_division(expr.right, divisor) if isinstance(expr.op, ast.Mult) else None)
    return None


def _loss_argument(backward: Backward) -> ast.expr | None:
    call = backward.node
    if isinstance(call.func, ast.Attribute) and code(call.func.value) == backward.loss_text:
        return call.func.value  # `loss.backward()`
    args = [a.value for a in arguments(call) if a.keyword is None]
    return args[0] if args and code(args[0]) == backward.loss_text else None


def drop_manual_division(model: TrainingModel, backward: Backward, divisor: str) -> FixPlan | None:
    """Remove the division by `divisor` the loss goes through before a backward that divides it again."""
    loss = _loss_argument(backward)
    if loss is None:
        return None
    exact = backward.framework_window is not None and divisor == backward.framework_window
    describe = f"Drop the division by `{divisor}`"
    inline = _spine_division(loss, divisor)
    if inline is not None:  # `accelerator.backward(loss / N)`: nothing else sees the divided value
        return FixPlan(describe, (Transform("drop_division", (inline,)),), SAFE if exact else UNSAFE)
    if not isinstance(loss, ast.Name):
        return None
    call_stmt = _statement_holding(model, backward.node)
    body = block_of(model, call_stmt) if call_stmt is not None and isinstance(call_stmt, (ast.Expr, ast.Assign)) else None
    at = _index(body, call_stmt) if body is not None and call_stmt is not None else None
    if body is None or at is None:
        return None
    name = loss.id
    for stmt in reversed(body[:at]):
        stores = [n for n in iter_tree(stmt) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)]
        if not stores:
            continue
        if not alone_on_line(model, stmt):
            return None
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Div) and code(stmt.value) == divisor:
            action = Transform("drop_division", (stmt,), (("remove", "1"),))
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            division = _spine_division(stmt.value, divisor)
            if division is None:
                return None
            if division is stmt.value and isinstance(division.left, ast.Name) and division.left.id == name:
                action = Transform("drop_division", (stmt,), (("remove", "1"),))  # `loss = loss / N`: delete it
            else:
                action = Transform("drop_division", (division,))
        else:
            return None
        scope = scope_of(model, stmt)
        others = [n for n in (_scope_nodes(scope) if scope is not None else [])
                  if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
                  and n is not loss and not any(n is m for m in iter_tree(stmt))]
        return FixPlan(describe, (action,), SAFE if exact and not others else UNSAFE)
    return None


# -- GL006: `with (contextlib.nullcontext() if boundary else model.no_sync()):` --------------------
_PLAIN_TEST = (ast.Name, ast.Attribute, ast.Compare, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Constant, ast.Subscript)


def _stored_refs(stmt: ast.stmt) -> set[str]:
    out = set()
    for n in iter_tree(stmt):
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Store):
            text = dotted(n)
            if text is not None:
                out.add(text)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
    return out


def wrap_in_no_sync(model: TrainingModel, backward: Backward, step: Step, gate: object, wrapper: int) -> FixPlan | None:
    """Wrap the forward and backward of a micro-batch in `model.no_sync()` unless the window ends there."""
    if not isinstance(gate, Condition) or not isinstance(gate.statement, ast.If):
        return None
    test, gate_stmt = gate.test, gate.statement
    if not any(n is step.node for s in gate_stmt.body for n in iter_tree(s)):
        return None  # the step is not in the `if` branch of this test
    sites = sorted({site for uid, _state, site in backward.sync_forwards if uid == wrapper})
    forwards = [model.forward_sites.get(site) for site in sites]
    if len(forwards) != 1 or not isinstance(forwards[0], ast.Call) or dotted(forwards[0].func) is None:
        return None
    forward = forwards[0]
    back_stmt = _statement_holding(model, backward.node)
    body = block_of(model, back_stmt) if back_stmt is not None else None
    if body is None or back_stmt is None:
        return None
    fwd_stmt: ast.AST | None = forward
    while fwd_stmt is not None and not any(fwd_stmt is s for s in body):
        fwd_stmt = model.parent(fwd_stmt)
    first, last, gate_at = (_index(body, fwd_stmt) if isinstance(fwd_stmt, ast.stmt) else None), _index(body, back_stmt), _index(body, gate_stmt)
    if first is None or last is None or gate_at is None or not first <= last < gate_at:
        return None
    if not all(starts_line(model, s) and (not isinstance(s, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)) or alone_on_line(model, s))
               for s in body[first: last + 1]):
        return None
    if not isinstance(test, _PLAIN_TEST) or any(isinstance(n, (ast.Call, ast.NamedExpr, ast.Await, ast.Yield)) for n in iter_tree(test)):
        return None  # a test with calls would run twice
    read = {n.id for n in iter_tree(test) if isinstance(n, ast.Name)} | {t for n in iter_tree(test) if (t := dotted(n)) is not None}
    if any(_stored_refs(s) & read for s in body[first:gate_at]):
        return None  # the test would read other values before the forward than at the step
    condition = source(model, test)
    if isinstance(test, ast.BoolOp) or "\n" in condition:
        condition = f"({condition})"
    context = f"(contextlib.nullcontext() if {condition} else {code(forward.func)}.no_sync())"
    return FixPlan(f"Run the forward and backward of accumulating micro-batches under `{code(forward.func)}.no_sync()`",
                   (Transform("wrap_with", (body[first], back_stmt), (("context", context), ("import", "contextlib"))),), UNSAFE)
