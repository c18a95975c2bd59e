"""The last iteration of a `for` loop over `range(N)`, tested by its index: a phase the loop leaves from.

    for j in range(accumulation_steps):
        scaler.scale(model(batch[j]).mean() / accumulation_steps).backward()
        if j == accumulation_steps - 1:          # once, on the last micro-batch
            scaler.unscale_(optimizer)
    clip_grad_norm_(model.parameters(), 1.0)     # after the unscale

Read as a test that may go either way on each iteration, one path unscales on two micro-batches and another
leaves the loop without unscaling (two false GL007 on T5 experiments' fixed trainer). The index of such a
loop counts the window of the loop's bound from 0, as a counter that cycles does (`counters.cycling`): `j == 0`
holds on the first iteration, `j == N - 1` on the last; and the loop is left only after its last iteration.
A loop of one iteration is the usual exception of window reasoning (N >= 2).
"""

from __future__ import annotations

import ast

from .names import dotted
from .syntax import code, int_value
from .walk import breadth_first

__all__ = ["index_truth", "last_iteration_bound", "last_of_strided", "strided_window"]

FIRST, MID, LAST = "first", "mid", "last"  # the phases of `window_arithmetic`


def last_iteration_bound(stmt: ast.For) -> tuple[str, int] | None:
    """(the window, the index's first value) of `for i in range(N)` (`range(0, N)`, `range(0, n, b)`) or
    `for i, x in enumerate(xs)` (window `len(xs)`) whose body tests `i` against its last value (`i == N - 1`,
    `i + 1 == len(xs)`, `i < len(xs) - 1`, ...: `index_truth`); None for any other loop."""
    call = stmt.iter
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        return None
    if call.func.id == "enumerate":
        return _enumerated(stmt, call)
    if call.func.id != "range" or call.keywords or not isinstance(stmt.target, ast.Name):
        return None
    if len(call.args) == 1:
        bound, stride = call.args[0], None
    elif len(call.args) in (2, 3) and int_value(call.args[0]) == 0:
        bound, stride = call.args[1], call.args[2] if len(call.args) == 3 else None
    else:
        return None
    text = code(bound)
    # `for j in range(0, n, b): ... if j == (n // b - 1) * b:`: the index takes n // b values, the last of them there
    window = text if stride is None or int_value(stride) == 1 else strided_window(text, code(stride))
    return (window, 0) if _tested_at_last(stmt, stmt.target.id, window, 0) else None


def _enumerated(stmt: ast.For, call: ast.Call) -> tuple[str, int] | None:
    """`for i, x in enumerate(xs)` (`enumerate(xs, k)`, `start=k` with a literal k): window `len(xs)`."""
    target = stmt.target
    if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name)):
        return None
    starts = [*call.args[1:], *(k.value for k in call.keywords if k.arg == "start")]
    if len(call.args) not in (1, 2) or any(k.arg != "start" for k in call.keywords) or len(starts) > 1 \
            or isinstance(call.args[0], ast.Starred):
        return None
    start = int_value(starts[0]) if starts else 0
    if start is None:
        return None
    window = f"len({code(call.args[0])})"
    return (window, start) if _tested_at_last(stmt, target.elts[0].id, window, start) else None


def _tested_at_last(stmt: ast.For, name: str, window: str, start: int) -> bool:
    """The loop's body compares its index with the last value the index takes (outside nested functions)."""
    for part in stmt.body:
        for node in breadth_first(part):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                break
            if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
                continue
            if isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and _is_last(node.left, node.comparators[0], name, window):
                return True
            if _reads_window(node, name, window) and index_truth(node, name, window, start, LAST) is not None:
                return True
    return False


# Where a loop's index stands in each phase of the window W it counts from `start`, as a range of linear
# forms (w, c) standing for w * W + c: the first value, the ones in between (W >= 3), the last.
_LOW = {FIRST: lambda s: (0, s), MID: lambda s: (0, s + 1), LAST: lambda s: (1, s - 1)}
_HIGH = {FIRST: lambda s: (0, s), MID: lambda s: (1, s - 2), LAST: lambda s: (1, s - 1)}
_MIRROR: dict[type, type] = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE,
                             ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}


def index_truth(test: ast.Compare, counter: str, window: str, start: int, phase: str) -> bool | None:
    """The truth of a comparison of a loop's index `counter` (`i`, `i + 1`) with a literal or the window
    (`W - 1`, `W`) when the index is at `phase` of the window W it counts from `start`: `i == W - 1`,
    `i + 1 == W`, `i >= W - 1` hold on the last iteration only, `i < W - 1`, `i + 1 < W` on all others,
    `i == 0` on the first. A window holds two iterations or more. None: another test, or not decided."""
    if len(test.ops) != 1 or type(test.ops[0]) not in _MIRROR:
        return None
    left = _linear(test.left, counter, window)
    right = _linear(test.comparators[0], counter, window)
    if left is None or right is None:
        return None
    op = type(test.ops[0])
    di, dw, dc = left[0] - right[0], left[1] - right[1], left[2] - right[2]
    if di == -1:
        di, dw, dc, op = 1, -dw, -dc, _MIRROR[op]
    if di != 1:
        return None
    # (index - other side) lies between these two forms in W, for any W of at least `least`
    low, high = _LOW[phase](start), _HIGH[phase](start)
    least = 3 if phase == MID else 2
    lo, hi = (low[0] + dw, low[1] + dc), (high[0] + dw, high[1] + dc)
    at_least = lo[0] * least + lo[1] if lo[0] >= 0 else None  # None: unbounded
    at_most = hi[0] * least + hi[1] if hi[0] <= 0 else None
    zero = lo == hi == (0, 0)
    above = at_least is not None and at_least > 0
    below = at_most is not None and at_most < 0
    if op is ast.Eq or op is ast.NotEq:
        truth = True if zero else False if above or below else None
        return truth if truth is None or op is ast.Eq else not truth
    if op is ast.Lt:
        return True if below else False if at_least is not None and at_least >= 0 else None
    if op is ast.LtE:
        return True if at_most is not None and at_most <= 0 else False if above else None
    if op is ast.Gt:
        return True if above else False if at_most is not None and at_most <= 0 else None
    return True if at_least is not None and at_least >= 0 else False if below else None  # GtE


def _reads_window(test: ast.Compare, counter: str, window: str) -> bool:
    forms = [_linear(side, counter, window) for side in (test.left, test.comparators[0])]
    return any(f[1] for f in forms if f is not None) and None not in forms


def _linear(node: ast.expr, counter: str, window: str) -> tuple[int, int, int] | None:
    """`node` as a * counter + b * window + c (a sum or difference of the index, the window's text and
    integer literals); None: anything else."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        a, b = _linear(node.left, counter, window), _linear(node.right, counter, window)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(node.op, ast.Add) else -1
        return a[0] + sign * b[0], a[1] + sign * b[1], a[2] + sign * b[2]
    value = int_value(node)
    strided = _strided_parts(window)
    if value is not None:  # (in a strided loop's units, a stride, only 0 is known)
        return (0, 0, value) if strided is None or value == 0 else None
    if dotted(node) == counter:
        return 1, 0, 0
    text = code(node).replace(" ", "")
    if text == window.replace(" ", ""):
        return 0, 1, 0
    if strided is not None:  # `range(0, n, b)`: the index counts strides, `n` is W strides and `b` one
        if text == strided[0]:
            return 0, 1, 0
        if text == strided[1]:
            return 0, 0, 1
    return None


def _strided_parts(window: str) -> tuple[str, str] | None:
    """(n, b) of a strided loop's window `n // b` (`strided_window`), spaces removed; None for any other window."""
    if "//" not in window:
        return None
    found = _STRIDED.get(window)
    if found is None:
        try:
            parsed = ast.parse(window, mode="eval").body
        except SyntaxError:
            parsed = None
        found = ((ast.unparse(parsed.left).replace(" ", ""), ast.unparse(parsed.right).replace(" ", ""))
                 if isinstance(parsed, ast.BinOp) and isinstance(parsed.op, ast.FloorDiv) else ("", ""))
        _STRIDED[window] = found
    return found if found[0] else None


_STRIDED: dict[str, tuple[str, str]] = {}  # strided windows' parts, by window text (few per file)


def strided_window(bound: str, stride: str) -> str:
    """The window of a loop over `range(0, bound, stride)`, as the source text the loop's index cycles through."""
    return f"{_operand(bound)} // {_operand(stride)}"


def last_of_strided(value: ast.expr, window: str) -> bool:
    """`value` is the last index of a loop over `range(0, n, b)` whose window is `n // b` (`strided_window`):
    `(n // b - 1) * b` or `n - b` (both the last one when b divides n, as a loop of whole micro-batches has)."""
    try:
        parsed = ast.parse(window, mode="eval").body
    except SyntaxError:
        return False
    if not (isinstance(parsed, ast.BinOp) and isinstance(parsed.op, ast.FloorDiv)):
        return False
    # (`ast.unparse`, not `code`: nodes parsed here are freed at once, and `code` remembers texts by node id)
    n, b = ast.unparse(parsed.left), ast.unparse(parsed.right)
    forms = {f"({n} // {b} - 1) * {b}", f"{n} - {b}", f"{b} * ({n} // {b} - 1)"}
    return ast.unparse(value) in {ast.unparse(ast.parse(f, mode="eval").body) for f in forms}


def _is_last(a: ast.expr, b: ast.expr, name: str, window: str) -> bool:
    return any(dotted(index) == name and (_minus_one(other) == window or last_of_strided(other, window))
               for index, other in ((a, b), (b, a)))


def _operand(text: str) -> str:
    return text if text.isidentifier() or text.replace(".", "").isidentifier() or text.isdigit() else f"({text})"




def _minus_one(node: ast.expr) -> str | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and int_value(node.right) == 1:
        return code(node.left)
    return None
