"""How a loss is reduced over its samples, read from syntax: summed (`reduction="sum"`) or not, and
what a library loss call says it divides by (`masked_mean(x, mask, denominator)`).

A loss summed over its samples is not to be divided by an accumulation window: the micro-batch sums
add up to the whole batch's sum (the runtime side reads the same from the graph, `loss_scale.py`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from . import names as N
from .conventions import convention
from .syntax import assignment_targets, code
from .walk import iter_tree


def sums_samples(call: ast.Call, summing: frozenset[str] = frozenset()) -> bool:
    """`F.cross_entropy(logits, y, reduction="sum")`, `nn.MSELoss(size_average=False)`; with `summing`, the
    names of the enclosing function's parameters that default to `"sum"` and are never reassigned,
    `F.cross_entropy(logits, y, reduction=reduction)` of `def forward(self, x, reduction="sum")`."""
    for k in call.keywords:
        if k.arg == "reduction" and isinstance(k.value, ast.Constant) and k.value.value == "sum":
            return True
        if k.arg == "reduction" and isinstance(k.value, ast.Name) and k.value.id in summing:
            return True
        if k.arg == "size_average" and isinstance(k.value, ast.Constant) and k.value.value is False:
            return True
    return False


Callee = Callable[[ast.Call, ast.AST], "ast.FunctionDef | ast.AsyncFunctionDef | None"]


def returns_summed(fn: ast.FunctionDef | ast.AsyncFunctionDef, callee: Callee | None = None, depth: int = 2) -> bool:
    """Whether a value the function returns is built from a sum-reduced loss: in the returned
    expression itself, or through the local names it reads, followed back through their assignments
    in the function (`loss_xy += F.binary_cross_entropy(..., reduction="sum")`, then
    `loss = loss_xy + loss_wh`, then `return loss, loss_xy`). A reduction handed in as a parameter that
    defaults to `"sum"` (VALL-E's `forward(..., reduction="sum")`) sums on a call that does not pass it,
    which is how a training step calls a model's forward; a caller that passes it is not looked at.
    What it returns first (the value, or a tuple's first item, and a name's assignments) may also be a
    total sum itself (`y = torch.sum(y); return y`), or the result of a function of the project that
    returns one (`return LF.contrastive_loss(x, label)`, cirtorch's, read through `callee`, `depth`
    calls deep)."""
    sources: dict[str, list[ast.expr]] = {}  # local name -> the expressions assigned to it
    returned: list[ast.expr] = []
    for node in iter_tree(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            returned.append(node.value)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            for target in assignment_targets(node):
                for name in _names_bound(target):
                    sources.setdefault(name, []).append(node.value)
    summing = frozenset(p for p in _sum_defaults(fn) if p not in sources)
    seen: set[str] = set()
    todo = list(returned)
    while todo:
        expr = todo.pop()
        for sub in iter_tree(expr):
            if isinstance(sub, ast.Call) and sums_samples(sub, summing):
                return True
            if isinstance(sub, ast.Name) and sub.id not in seen and sub.id in sources:
                seen.add(sub.id)
                todo.extend(sources[sub.id])
    return _primary_sum(returned, sources, fn, callee, depth)


def _primary_sum(returned: list[ast.expr], sources: dict[str, list[ast.expr]], fn: ast.AST, callee: Callee | None,
                 depth: int) -> bool:
    """What the function returns first is a total sum (`torch.sum(y)`, `y.sum()`), or a call of a project function
    that returns one."""
    seen: set[str] = set()
    todo = [r.elts[0] if isinstance(r, (ast.Tuple, ast.List)) and r.elts else r for r in returned]
    while todo:
        expr = todo.pop()
        if _total_sum(expr):
            return True
        if isinstance(expr, ast.Name) and expr.id not in seen and expr.id in sources:
            seen.add(expr.id)
            todo.extend(sources[expr.id])
        elif isinstance(expr, ast.Call) and callee is not None and depth > 0:
            target = callee(expr, fn)
            if target is not None and target is not fn and returns_summed(target, callee, depth - 1):
                return True
    return False


def _total_sum(expr: ast.expr) -> bool:
    """`torch.sum(x)` or `x.sum()`: a sum over every element (no `dim`), the samples too; not of terms divided by
    something (`(w * pos * loss / pos_count + ...).sum()`, a weighted mean written as a sum)."""
    if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute) or expr.func.attr != "sum":
        return False
    if any(k.arg in ("dim", "axis") for k in expr.keywords):
        return False
    receiver = expr.func.value
    if isinstance(receiver, ast.Name) and receiver.id == "torch":
        summed: ast.expr | None = expr.args[0] if len(expr.args) == 1 else None
    else:
        summed = receiver if not expr.args else None
    return summed is not None and not any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) for n in iter_tree(summed))


def _sum_defaults(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The parameters whose default is the string `"sum"`."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    pairs = [*zip(positional[len(positional) - len(a.defaults):], a.defaults), *zip(a.kwonlyargs, a.kw_defaults)]
    return [arg.arg for arg, d in pairs if isinstance(d, ast.Constant) and d.value == "sum"]


def _names_bound(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _names_bound(elt)]
    if isinstance(target, ast.Starred):
        return _names_bound(target.value)
    return []


# An argument that names what a library loss function divides by (`masked_mean(x, mask, denominator)`,
# `loss_fn(..., num_items_in_batch=n)`): the analysis cannot see the division, but it is there.
_NORMALISER = convention("normaliser")


_DATA_HANDLER = convention("data_handler")
_TENSOR_OPTIONS = frozenset({"dtype", "device", "layout", "memory_format", "pin_memory", "requires_grad"})


def normaliser_argument(call: ast.Call) -> str | None:
    """The argument of a library loss call that names what the loss is divided by, as written."""
    if _DATA_HANDLER.search(N.last_name(call.func) or ""):
        return None  # `slice_and_move_batch_for_device(batch, i, grad_accum_steps, rank)` cuts data, divides no loss
    # (a tensor's options, `dtype=accumulator_dtype`, are no count)
    for a in [*call.args, *(k.value for k in call.keywords if k.arg not in _TENSOR_OPTIONS)]:
        if isinstance(a, (ast.Name, ast.Attribute, ast.Subscript)) and _NORMALISER.search(code(a)):
            return code(a)
    for k in call.keywords:
        if k.arg and _NORMALISER.search(k.arg):
            return code(k.value)
    return None
