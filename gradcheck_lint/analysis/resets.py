"""Windows of counters a loop resets or counts down: their sizes, run from the loop's own statements.

A window counter is not always `i % N`. Many loops keep their own count and restart it when a window
ends; whether a window then holds N micro-batches depends on where the test sits among the counter's
statements, which the test alone does not say:

    accum = 0
    for batch in loader:
        if accum >= accum_iters:         # tested before the increment: true every N + 1 micro-batches
            accum = 0
            apply_gradient = True
        else:
            accum += 1
            apply_gradient = False
        model.optimize_parameters(batch, apply_gradient)

A counter may also count down to the end of the window and start again at N (joeynmt):

    count = 0                            # N - 1 would be right: here the first micro-batch steps alone
    for batch in loader:
        update = count == 0
        train_batch(batch, update=update)
        count = batch_multiplier if update else count
        count -= 1

Both are small integer programs. `reset_window` runs the counter's statements of the loop's body, for
window sizes N = 2..7, from the counter's value before the loop (its literal start: a resumed run starts
elsewhere), and reads on which micro-batches the test holds: the size of the first window and of every
later one, each N plus a constant. Only statements over the counter, the window size, int literals and
names bound to tests of them are run; a test of anything else whose arms move the counter leaves the
windows unknown (None), as does a window size or an offset that is not the same for every N.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .names import dotted
from .walk import breadth_first, child_nodes

__all__ = ["ResetWindow", "reset_window"]

_SIZES = range(2, 8)  # window sizes the statements are run for
_ITERATIONS = 48  # micro-batches run at most: several windows of the largest size
_WINDOWS_READ = 5  # the test holding this many times gives the first window and three later ones
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)

Parent = Callable[[ast.AST], "ast.AST | None"]


@dataclass(frozen=True, slots=True)
class ResetWindow:
    """Where a test of a counter the loop resets holds: windows of N plus a constant micro-batches."""

    counter: str  # `accum`, `self.count`
    window: str  # the window size N, as written (`accum_iters`, `self.batch_multiplier`)
    start: int | str  # the counter's value before the loop: an int, or the window size
    first: tuple[bool, int]  # the first window's size: (True, k) k micro-batches, (False, k) N + k
    later: tuple[bool, int]  # every later window's size, the same way

    @property
    def regular(self) -> bool:
        """Every window holds exactly N micro-batches."""
        return self.first == self.later == (False, 0)

    def size(self, which: tuple[bool, int]) -> str:
        """A window size as source text: `1`, `accum_iters`, `accum_iters + 1`."""
        fixed, k = which
        if fixed:
            return str(k)
        return self.window if k == 0 else f"{self.window} {'+' if k > 0 else '-'} {abs(k)}"


class _Unknown(Exception):
    """A statement the counter program cannot run."""


class _Stop(Exception):
    """The loop ends (`break`, `return`, `raise` on every micro-batch)."""


class _Next(Exception):
    """`continue`: the rest of this micro-batch's body is skipped."""


def reset_window(test: ast.expr, parent: Parent) -> ResetWindow | None:
    """The windows of the loop around `test` (an `if`'s test, or a test bound to a name: `update = count
    == 0`) when it reads a counter the loop resets or counts down, and a window size; None when the test is
    of no such counter, or its windows are not N plus a constant for every N."""
    found = _restarted_counter(test, parent, (ast.If, ast.Assign))
    if found is None:
        return None
    holder, loop, counter = found
    body = loop.body
    assigned = _assigned_in(loop)
    windows = {n for n in _names(test) if n != counter and n not in assigned}
    windows |= {n for value in _values_of(body, counter) for n in _names(value) if n != counter and n not in assigned}
    windows -= _bound_tests(body)
    if len(windows) != 1:
        return None
    window = windows.pop()
    start = _start(loop, counter, window, parent)
    if start is None:
        return None
    firsts: list[int] = []
    laters: list[int] = []
    memo: dict[tuple[int, str], bool] = {}  # the tree is alive for the whole call: ids are not reused
    # `if n < N: continue` guards what follows it: the windows are where the test fails (yanmtt's multistep loop)
    guard = isinstance(holder, ast.If) and not holder.orelse and len(holder.body) == 1 \
        and isinstance(holder.body[0], ast.Continue)
    for n in _SIZES:
        trues = _run(body, test, counter, window, start, n, memo, negate=guard)
        if trues is None or len(trues) < 3:
            return None
        later = {b - a for a, b in zip(trues, trues[1:])}
        if len(later) != 1:
            return None
        firsts.append(trues[0] + 1)
        laters.append(later.pop())
    first, later_size = _in_n(firsts), _in_n(laters)
    if first is None or later_size is None:
        return None
    return ResetWindow(counter, window, start, first, later_size)


def holds_every_time(test: ast.expr, parent: Parent) -> bool:
    """A test of a counter the loop restarts, against literals only, that holds on every micro-batch: `num_iter = 0`
    before the loop, `num_iter += 1` at its top, `if num_iter == 1: ... num_iter = 0` (Point-M2AE's segmentation
    loop: a window of one, written as a window)."""
    found = _restarted_counter(test, parent, (ast.If,))
    if found is None or len(_names(test)) != 1:
        return False
    _holder, loop, counter = found
    for node in _own(loop.body):  # every other test of the counter compares it with literals too (no window size)
        if isinstance(node, (ast.If, ast.While, ast.IfExp)) and counter in (read := set(_names(node.test))) \
                and read != {counter}:
            return False
    start = _start(loop, counter, "", parent)
    if not isinstance(start, int):
        return False
    trues = _run(loop.body, test, counter, "", start, _SIZES[0], {})
    return trues is not None and len(trues) >= 3 and trues == list(range(len(trues)))


def _restarted_counter(test: ast.expr, parent: Parent, kinds: tuple[type[ast.stmt], ...],
                       ) -> tuple[ast.stmt, ast.For | ast.AsyncFor | ast.While, str] | None:
    """The statement holding `test` (of one of `kinds`), its loop, and the one counter the test reads that the loop
    both assigns and restarts; None otherwise (a counter only ever incremented is for `%` tests and `counters`)."""
    holder = _statement_of(test, parent)
    loop = _enclosing_loop(holder, parent) if holder is not None else None
    if holder is None or loop is None or not isinstance(holder, kinds):
        return None
    assigned = _assigned_in(loop)
    counters = [n for n in _names(test) if n in assigned]
    if len(counters) != 1 or not _restarted(loop.body, counters[0]):
        return None
    return holder, loop, counters[0]


def _in_n(sizes: list[int]) -> tuple[bool, int] | None:
    """Window sizes found for N = 2, 3...: the same for every N (True, k), or N + k for every N (False, k)."""
    if len(set(sizes)) == 1:
        return True, sizes[0]
    offsets = {size - n for size, n in zip(sizes, _SIZES)}
    return (False, offsets.pop()) if len(offsets) == 1 else None


# ---------------------------------------------------------------------------------------------- reading
def _statement_of(node: ast.AST, parent: Parent) -> ast.stmt | None:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = parent(current)
    return current


def _enclosing_loop(stmt: ast.AST, parent: Parent) -> ast.For | ast.AsyncFor | ast.While | None:
    current = parent(stmt)
    while current is not None and not isinstance(current, _SCOPES):
        if isinstance(current, _LOOPS):
            return current
        current = parent(current)
    return None


def _own(block: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of a block, nested functions and classes left out."""
    todo: list[ast.AST] = list(reversed(block))
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        yield node
        todo.extend(reversed(child_nodes(node)))


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target]
    if isinstance(node, ast.NamedExpr):
        return [node.target]
    return []


def _assigned_in(loop: ast.For | ast.AsyncFor | ast.While) -> frozenset[str]:
    """`_assigned` of the loop's body, kept on the node (every test in the loop asks; freed with its tree)."""
    hit: frozenset[str] | None = getattr(loop, "_reset_assigned", None)
    if hit is None:
        hit = frozenset(_assigned(loop.body))
        setattr(loop, "_reset_assigned", hit)  # noqa: B010 (an attribute ast nodes do not declare)
    return hit


def _assigned(block: list[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for node in _own(block):
        for t in _targets(node):
            for leaf in breadth_first(t):
                name = dotted(leaf)
                if name is not None:
                    out.add(name)
    return out


def _names(node: ast.AST) -> list[str]:
    """The dotted names a node reads, outermost first, each once."""
    out: list[str] = []
    for sub in breadth_first(node):
        if isinstance(sub, (ast.Name, ast.Attribute)):
            name = dotted(sub)
            if name is not None and name not in out and not any(o.startswith(name + ".") for o in out):
                out.append(name)
    return out


def _values_of(block: list[ast.stmt], counter: str) -> Iterator[ast.expr]:
    for node in _own(block):
        if isinstance(node, ast.Assign) and any(dotted(t) == counter for t in node.targets):
            yield node.value


def _restarted(block: list[ast.stmt], counter: str) -> bool:
    """The loop assigns the counter something other than an increment of itself: it restarts it."""
    for value in _values_of(block, counter):
        if not (isinstance(value, ast.BinOp) and dotted(value.left) == counter):
            return True
    return any(isinstance(n, ast.AugAssign) and dotted(n.target) == counter and isinstance(n.op, ast.Sub)
               for n in _own(block))


def _bound_tests(block: list[ast.stmt]) -> set[str]:
    """Names the loop binds to a test (`update = count == 0`)."""
    return {t.id for n in _own(block) if isinstance(n, ast.Assign) and _is_test(n.value)
            for t in n.targets if isinstance(t, ast.Name)}


def _is_test(node: ast.expr) -> bool:
    return isinstance(node, (ast.Compare, ast.BoolOp)) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)


def _start(loop: ast.AST, counter: str, window: str, parent: Parent) -> int | str | None:
    """The counter's value before the loop, an int literal or the window size (`left = accum_steps`): the
    last such assignment among the statements that precede the loop in its block or an enclosing one of
    its function (on a fresh run, when a resumed one is given another value: `if resume: c = state["c"]
    else: c = 0`)."""
    node: ast.AST = loop
    while True:
        holder = parent(node)
        if holder is None:
            return None
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(holder, field, None)
            if isinstance(block, list) and node in block:
                for earlier in reversed(block[:block.index(node)]):
                    found = _literal_assignment(earlier, counter, window)
                    if found is not None:
                        return found
        if isinstance(holder, _SCOPES):
            return None
        node = holder


def _literal_assignment(stmt: ast.AST, counter: str, window: str) -> int | str | None:
    last: int | str | None = None
    for node in _own([stmt]) if isinstance(stmt, ast.stmt) else ():
        if isinstance(node, ast.Assign) and any(dotted(t) == counter for t in node.targets):
            value = node.value
            if isinstance(value, ast.Constant) and type(value.value) is int:
                last = value.value
            elif dotted(value) == window:
                last = window
    return last


# ---------------------------------------------------------------------------------------------- running
class _Machine:
    """One run of the loop body's counter statements for one window size."""

    def __init__(self, test: ast.expr, counter: str, window: str, start: int | str, n: int,
                 memo: dict[tuple[int, str], bool]) -> None:
        self.test = test
        self.counter = counter
        self.memo = memo  # (id of a node, question) -> answer: the same for every micro-batch and N
        self.env: dict[str, int | bool] = {counter: n if start == window else int(start), window: n}
        self.seen: list[bool] = []

    def block(self, block: list[ast.stmt]) -> None:
        for stmt in block:
            self.stmt(stmt)

    def stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            self.assign(stmt)
        elif isinstance(stmt, ast.AugAssign):
            if dotted(stmt.target) == self.counter:
                now = self.env[self.counter]
                self.env[self.counter] = self.binop(type(stmt.op), int(now), self.integer(stmt.value))
            else:
                self.untouched(stmt)
        elif isinstance(stmt, ast.If):
            truth = self.value(stmt.test)
            if truth is None:
                if self.contains(stmt.test):
                    raise _Unknown
                if self.moves(stmt):
                    self.both_arms(stmt)  # `if args.fp16: ... n += 1 ... else: ... n += 1 ...`: the same either way
                return  # a test of something else that leaves the counter alone (`if step > total: break`)
            self.block(stmt.body if truth else stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)):
            self.block(stmt.body)
        elif isinstance(stmt, ast.Continue):
            raise _Next
        elif isinstance(stmt, (ast.Break, ast.Return, ast.Raise)):
            raise _Stop
        else:
            self.untouched(stmt)

    def both_arms(self, stmt: ast.If) -> None:
        """An `if` on something else whose two arms move the counter: run each; when both leave the counter
        and the micro-batch's course (on, or to the next one) the same, that is what happened (yanmtt's fp16 and
        fp32 arms each count, `continue` under the same test, and step); else nothing is known."""
        env, seen = dict(self.env), list(self.seen)
        ends: list[tuple[bool, dict[str, int | bool]]] = []
        reads: list[bool] = []
        for arm in (stmt.body, stmt.orelse):
            self.env, self.seen = dict(env), list(seen)
            try:
                self.block(arm)
                ends.append((False, dict(self.env)))
            except _Next:
                ends.append((True, dict(self.env)))
            reads = reads if len(reads) >= len(self.seen) else list(self.seen)  # the arm that reads the test
        if ends[0] != ends[1]:
            raise _Unknown
        self.env, self.seen = ends[0][1], reads if reads else seen
        if ends[0][0]:
            raise _Next

    def assign(self, stmt: ast.Assign) -> None:
        names = [dotted(t) for t in stmt.targets]
        if self.counter in names:
            self.env[self.counter] = self.integer(stmt.value)
            return
        holds = self.contains(stmt.value)
        if holds or _is_test(stmt.value):
            truth = self.value(stmt.value)
            for name in names:
                if name is not None and truth is not None:
                    self.env[name] = bool(truth)
                elif name is not None:
                    self.env.pop(name, None)
            if truth is None and holds:
                raise _Unknown
            return
        self.untouched(stmt)

    def untouched(self, stmt: ast.stmt) -> None:
        """A statement that is not run: it must neither move the counter nor evaluate the test."""
        if self.moves(stmt) or self.contains(stmt):
            raise _Unknown

    def moves(self, stmt: ast.stmt) -> bool:
        """The statement (an `if`: either arm) assigns the counter."""
        key = (id(stmt), "moves")
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = any(dotted(t) == self.counter for n in _own([stmt]) for t in _targets(n))
        return hit

    def contains(self, node: ast.AST) -> bool:
        """The node holds the test."""
        key = (id(node), "contains")
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = _contains(node, self.test)
        return hit

    def integer(self, node: ast.expr) -> int:
        v = self.value(node)
        if v is None or isinstance(v, bool):
            raise _Unknown
        return v

    def value(self, node: ast.expr) -> int | bool | None:
        out = self._value(node)
        if node is self.test:
            if out is None:
                raise _Unknown
            self.seen.append(bool(out))
        return out

    def _value(self, node: ast.expr) -> int | bool | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = dotted(node)
            return self.env.get(name) if name is not None else None
        if isinstance(node, ast.UnaryOp):
            v = self.value(node.operand)
            if v is None:
                return None
            if isinstance(node.op, ast.Not):
                return not v
            return -int(v) if isinstance(node.op, ast.USub) else None
        if isinstance(node, ast.BinOp):
            a, b = self.value(node.left), self.value(node.right)
            if a is None or b is None:
                return None
            return self.binop(type(node.op), int(a), int(b))
        if isinstance(node, ast.IfExp):
            cond = self.value(node.test)
            return None if cond is None else self.value(node.body if cond else node.orelse)
        if isinstance(node, ast.BoolOp):
            values = [self.value(v) for v in node.values]  # no short cut: every operand is read
            if any(v is None for v in values):
                return None
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Compare):
            left = self.value(node.left)
            result = True
            for op, right_node in zip(node.ops, node.comparators):
                right = self.value(right_node)
                if left is None or right is None or type(op) not in _COMPARE:
                    return None
                result = result and _COMPARE[type(op)](int(left), int(right))
                left = right
            return result
        return None

    @staticmethod
    def binop(op: type, a: int, b: int) -> int:
        if op is ast.Add:
            return a + b
        if op is ast.Sub:
            return a - b
        if op is ast.Mult:
            return a * b
        if op is ast.Mod and b:
            return a % b
        if op is ast.FloorDiv and b:
            return a // b
        raise _Unknown


_COMPARE: dict[type, Callable[[int, int], bool]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
}


def _contains(node: ast.AST, target: ast.AST) -> bool:
    return any(sub is target for sub in breadth_first(node))


def _run(body: list[ast.stmt], test: ast.expr, counter: str, window: str, start: int | str, n: int,
         memo: dict[tuple[int, str], bool], negate: bool = False) -> list[int] | None:
    """The micro-batches (from 0) on which the test holds (fails, with `negate`), over `_ITERATIONS` of them;
    None: not run."""
    machine = _Machine(test, counter, window, start, n, memo)
    trues: list[int] = []
    try:
        for k in range(_ITERATIONS):
            before = len(machine.seen)
            try:
                machine.block(body)
            except _Next:
                pass
            reads = machine.seen[before:]
            if len(reads) > 1:
                return None  # read twice in one micro-batch: not one gate per micro-batch
            if reads and reads[0] != negate:
                trues.append(k)
                if len(trues) == _WINDOWS_READ:
                    break
    except _Stop:
        return None
    except _Unknown:
        return None
    return trues
