"""The flush of a window's remainder after the loop: a test that counts the loop's iterations as its gate did.

    optimizer.zero_grad()
    num_batches = 0
    for bi, batch in enumerate(loader):
        (loss_of(batch) / N).backward()
        if (bi + 1) % N == 0:                # the gate: the last micro-batch of each window
            optimizer.step()
            optimizer.zero_grad()
        num_batches += 1
    if num_batches % N != 0:                 # the flush: the gate failed on the last micro-batch
        optimizer.step()
        optimizer.zero_grad()

After the loop, `num_batches` is the number of the last micro-batch as the gate counted it (`bi + 1`), so the
flush holds exactly on the paths where the gate's last test failed: the paths that leave a partial window step
it, and those whose last micro-batch stepped have nothing left. Read as two independent tests, a path left the
loop with a partial window and skipped the flush, and the next epoch's clear was said to drop it (a certain
GL002 on Contact_GNN's trainer, lockbox 36).

The counts this reads as one (all 1-based, the number of the micro-batch):
- `i + 1` of `for i, x in enumerate(xs)` or `for i in range(n)` (`i` of `enumerate(xs, 1)`), in the loop and
  after it (the index keeps its last value);
- a name set to 0 right before the loop and incremented once per iteration at the top of its body, before
  any `break` or `continue` can skip it (after the loop: the iterations run);
- `len(xs)` of the sequence the loop walks, after a loop that cannot `break`.
The window's size must be the same text in both tests and nothing in the loop may assign it.

The flush may also be a function of its own, called after the loop (`def finalize_epoch(self): if self.step % N
!= 0: ...`), where the count is kept in state: the one window gate of another function that advances that count
(`self.step += 1` ... `if self.step % N == 0:`) and tests it modulo the same window is the gate it flushes
(`flushed_gate_elsewhere`). Nothing syntactic ties the two together there: the paths do. A path that remembers how
the gate's last test went, and has not seen the count or the window assigned since (an assignment forgets it), reads
the flush's test on the same values, whatever calls lie between.

A flush whose count the reading above cannot tie to the gate's (`n_months % N != 0` with `n_months = len(data)`,
the loop walking a permutation of `data.months`) still says what its author meant: the window's remainder is stepped
after the loop. That its count differs from the gate's, so that a path leaves the loop with a partial window and skips
the flush, is not read: `untied_flush` tells a finding that rests on it (a step of the flush taken as skipped).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from .syntax import code
from .walk import iter_tree, own_nodes

__all__ = ["flush_sense", "flushed_gate", "flushed_gate_elsewhere", "untied_flush"]

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _modulo(expr: ast.expr) -> tuple[ast.expr, str] | None:
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
        return expr.left, code(expr.right)
    return None


def _is_zero(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and type(expr.value) is int and expr.value == 0


def _residue_test(test: ast.expr) -> tuple[ast.expr, str, bool] | None:
    """`E % W == 0` (True: holds on the window's last micro-batch) or `E % W != 0`, `E % W > 0`, `E % W` (False:
    holds where a remainder is left), also under `not`: (E, W, the sense)."""
    sense = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, sense = test.operand, not sense
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right, op = test.left, test.comparators[0], test.ops[0]
        if _is_zero(left) and isinstance(op, (ast.Eq, ast.NotEq)):
            left, right = right, left
        mod = _modulo(left)
        if mod is None or not _is_zero(right):
            return None
        if isinstance(op, ast.Eq):
            return mod[0], mod[1], sense
        if isinstance(op, (ast.NotEq, ast.Gt)):
            return mod[0], mod[1], not sense
        return None
    mod = _modulo(test)
    return (mod[0], mod[1], not sense) if mod is not None else None


def flush_sense(test: ast.expr) -> bool | None:
    """Whether `test` holds where the window's last test failed (a remainder is left: `n % N != 0`), False where
    it held (`n % N == 0`); None for a test of no residue."""
    found = _residue_test(test)
    return None if found is None else not found[2]


def _block_of(stmt: ast.stmt, parent: ast.AST | None) -> list[ast.stmt] | None:
    if parent is None:
        return None
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None


def _assigned(node: ast.AST) -> set[str]:
    names: set[str] = set()
    for n in iter_tree(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            names.add(n.target.id)
    return names


def _own_jumps(stmts: list[ast.stmt], kinds: tuple[type, ...]) -> bool:
    """A `break` / `continue` (of `kinds`) of the loop whose body `stmts` are, not of a loop nested in it."""
    todo: list[ast.AST] = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, kinds):
            return True
        if isinstance(node, _LOOPS):
            todo.extend(node.orelse)  # a nested loop's own body jumps in that loop
            continue
        if isinstance(node, _SCOPES):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


class _Loop:
    """What a `for` loop counts: its index and the index's start, the sequence it walks."""

    def __init__(self, loop: ast.For) -> None:
        self.loop = loop
        self.index: str | None = None
        self.start = 0
        self.sequence: str | None = None
        it, target = loop.iter, loop.target
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args \
                and isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
            start = it.args[1] if len(it.args) > 1 else next((k.value for k in it.keywords if k.arg == "start"), None)
            first = 0 if start is None else start.value if isinstance(start, ast.Constant) else None
            if type(first) is int:
                self.index, self.start, self.sequence = target.elts[0].id, first, code(it.args[0])
        elif isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" \
                and isinstance(target, ast.Name) and not it.keywords \
                and (len(it.args) == 1 or len(it.args) == 2 and _is_zero(it.args[0])):
            self.index = target.id
        elif isinstance(target, (ast.Name, ast.Tuple)):
            self.sequence = code(it)

    def index_number(self, expr: ast.expr) -> bool:
        """`expr` is the 1-based number of the current iteration by the index (`i + 1`, `i` from 1)."""
        if self.index is None:
            return False
        if self.start == 1:
            return isinstance(expr, ast.Name) and expr.id == self.index
        if self.start != 0 or not (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add)):
            return False
        pair = (expr.left, expr.right)
        return any(isinstance(a, ast.Name) and a.id == self.index and isinstance(b, ast.Constant) and b.value == 1
                   for a, b in (pair, pair[::-1]))

    def counted_by(self, name: str, block: list[ast.stmt], breaks_before: int = 0) -> int | None:
        """The place in the loop's body of the one `name += 1` that counts every iteration, when `name` is set to
        0 in `block` right before the loop and nothing else in the loop assigns it; None otherwise. A `break` in the
        first `breaks_before` statements of the body (before the gate: `if batch_index >= max_batches: break`) leaves
        the loop before that iteration counts or tests anything."""
        body = self.loop.body
        places = [k for k, s in enumerate(body) if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add)
                  and isinstance(s.target, ast.Name) and s.target.id == name
                  and isinstance(s.value, ast.Constant) and s.value.value == 1]
        if len(places) != 1 or _own_jumps(body[:places[0]], (ast.Continue,)) \
                or _own_jumps(body[min(breaks_before, places[0]):places[0]], (ast.Break,)):
            return None
        if sum(name in _assigned(s) for s in body) != 1:
            return None
        at = next(k for k, s in enumerate(block) if s is self.loop)
        for before in reversed(block[:at]):
            if name in _assigned(before):
                return places[0] if _sets_zero(before, name) else None
        return None


def _sets_zero(stmt: ast.stmt, name: str) -> bool:
    """`stmt` sets `name` to 0: `n = 0`, or as one of a tuple of names set to a tuple of values (`a, b, n = 0.0, 0.0,
    0`)."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return False
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, ast.Name):
        return target.id == name and _is_zero(value)
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
        return any(isinstance(t, ast.Name) and t.id == name and _is_zero(v) for t, v in zip(target.elts, value.elts))
    return False


def _gates(loop: _Loop, block: list[ast.stmt], window: str) -> list[ast.If]:
    """The tests in the loop's body (not in a loop nested in it) of its iteration number modulo `window`."""
    found: list[ast.If] = []
    for k, stmt in enumerate(loop.loop.body):
        for node in _own_nodes(stmt):
            if not isinstance(node, ast.If):
                continue
            residue = _residue_test(node.test)
            if residue is None or residue[1] != window:
                continue
            number = residue[0]
            if loop.index_number(number) or isinstance(number, ast.Name) \
                    and (place := loop.counted_by(number.id, block)) is not None and place < k:
                found.append(node)
    return found


def _own_nodes(stmt: ast.stmt) -> list[ast.AST]:
    """The nodes of a statement of a loop's body that run once per iteration of that loop: none of a loop or a
    definition nested in it."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, (*_LOOPS, *_SCOPES)):
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def flushed_gate(stmt: ast.If, parent: ast.AST | None,
                 passed_through: Callable[[ast.Call], ast.expr | None] | None = None) -> ast.If | None:
    """The gate whose remainder the `if` after a loop flushes (see the module's text), or None. `passed_through`: the
    argument a call walks as it is (`tqdm(loader)`, by the catalogue), so that `len(loader)` counts a loop over
    `enumerate(tqdm(loader))`, or over `pbar` set to it before the loop."""
    found = _flush_of(stmt, parent, passed_through)
    return found[0] if found is not None and found[1] == _TIED else None


_TIED, _DIFFERS, _UNKNOWN = "tied", "differs", "unknown"  # how a flush's count stands to its gate's


def _flush_of(stmt: ast.If, parent: ast.AST | None, passed_through: Callable[[ast.Call], ast.expr | None] | None,
              test: ast.expr | None = None) -> tuple[ast.If, str] | None:
    """The one gate of the loop before the `if` of the same window, and how the flush's count (in `test`, the `if`'s
    own test unless given) stands to the gate's: the same (`_TIED`), read to differ on some run (`_DIFFERS`: a counter
    the loop skips or never resets, a walk the loop may `break` out of), or not read (`_UNKNOWN`: `len(data)` of
    something else than what the loop walks, a count set before the loop)."""
    residue = _residue_test(stmt.test if test is None else test)
    block = _block_of(stmt, parent)
    if residue is None or block is None:
        return None
    number, window, _sense = residue
    read = {n.id for n in iter_tree(stmt.test) if isinstance(n, ast.Name)}
    at = next(k for k, s in enumerate(block) if s is stmt)
    for before in reversed(block[:at]):
        if isinstance(before, ast.For):
            loop = before
            break
        if read & _assigned(before):
            return None
    else:
        return None
    info = _Loop(loop)
    if any(n.id in _window_names(window) for s in loop.body for n in iter_tree(s)
           if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)):
        return None
    gates = _gates(info, block, window)
    if len(gates) != 1:
        return None
    gate = gates[0]
    first = next(k for k, s in enumerate(loop.body) if any(n is gate for n in iter_tree(s)))
    relation = _UNKNOWN
    if info.index_number(number):
        relation = _TIED
    elif isinstance(number, ast.Name):
        if info.counted_by(number.id, block) is not None:
            relation = _TIED
        elif info.counted_by(number.id, block, breaks_before=first) is not None:
            # the same count, but a path that leaves by the `break` is not followed knowing how the gate's last test
            # went (the iteration before): not read as the gate's complement
            relation = _UNKNOWN
        elif any(number.id in _assigned(s) for s in loop.body):
            relation = _DIFFERS
    elif isinstance(number, ast.Call) and isinstance(number.func, ast.Name) and number.func.id == "len" \
            and len(number.args) == 1 and info.sequence is not None \
            and code(number.args[0]) in _walked(info, block, passed_through):
        relation = _DIFFERS if _own_jumps(loop.body, (ast.Break,)) else _TIED
    return gate, relation


def _walked(info: _Loop, block: list[ast.stmt], passed_through: Callable[[ast.Call], ast.expr | None] | None
            ) -> set[str]:
    """The texts of what the loop walks, item for item: its sequence, and what that hands through (`tqdm(loader)`, or
    `pbar` when `pbar = tqdm(loader)` is the last thing to set it before the loop)."""
    assert info.sequence is not None
    found = {info.sequence}
    try:
        seq: ast.expr | None = ast.parse(info.sequence, mode="eval").body
    except SyntaxError:
        return found
    at = next(k for k, s in enumerate(block) if s is info.loop)
    for _ in range(3):
        if isinstance(seq, ast.Name):
            setter = next((s for s in reversed(block[:at]) if seq.id in _assigned(s)), None)
            seq = setter.value if isinstance(setter, ast.Assign) and len(setter.targets) == 1 \
                and isinstance(setter.targets[0], ast.Name) else None
        elif isinstance(seq, ast.Call) and passed_through is not None:
            seq = passed_through(seq)
        else:
            break
        if seq is None:
            break
        found.add(code(seq))
    return found


def flushed_gate_elsewhere(stmt: ast.If, function: ast.AST | None, parent: Callable[[ast.AST], ast.AST | None],
                           functions: Iterable[ast.AST]) -> ast.If | None:
    """The gate this `if` flushes when it is a function's own test of a count kept in state (see the module's text):
    `stmt` sits in `function` outside any loop of it, tests `obj.count % W` (an attribute: the count outlives the
    calls), and `function` assigns neither the count nor the window; the gate is the one `if` of the other
    `functions` that tests the same count modulo the same window after the same function advanced the count."""
    residue = _residue_test(stmt.test)
    if residue is None or function is None or not isinstance(residue[0], ast.Attribute):
        return None
    number, window = code(residue[0]), residue[1]
    up = parent(stmt)
    while up is not None and up is not function:
        if isinstance(up, _LOOPS):
            return None  # run on every iteration of a loop of its own: a gate, not a flush
        up = parent(up)
    if up is None or _assigns(function, number, window):
        return None
    found: list[ast.If] = []
    for other in functions:
        if other is function:
            continue
        for node in own_nodes(other):
            if isinstance(node, ast.If) and (r := _residue_test(node.test)) is not None \
                    and code(r[0]) == number and r[1] == window and _assigns(other, number, ""):
                found.append(node)
    return found[0] if len(found) == 1 else None


def _assigns(function: ast.AST, number: str, window: str) -> bool:
    """`function` assigns the count (or the window): `self.step += 1`, `self.step = 0`."""
    for node in own_nodes(function):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if any(code(t) in (number, window) for t in targets):
            return True
    return False


def _window_names(window: str) -> set[str]:
    try:
        tree = ast.parse(window, mode="eval")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def untied_flush(stmt: ast.AST, parent: ast.AST | None) -> bool:
    """`stmt` is an `if` that steps a window's remainder after the loop of its gate (`if n % N != 0:`, alone or as a
    part of an `and`), by a count whose relation to the gate's is not read (`_UNKNOWN`), or that is the gate's but
    tested together with something else (`if training and batches % N:`): see the module's text."""
    if not isinstance(stmt, ast.If):
        return False
    test = stmt.test
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    part = next((p for p in parts if (r := _residue_test(p)) is not None and not r[2]), None)
    found = _flush_of(stmt, parent, None, part) if part is not None else None
    return found is not None and (found[1] == _UNKNOWN or found[1] == _TIED and part is not test)
