"""A loop counter under another name: `global_step = i`, `global_step = start_step + i`, `i` handed to a
helper's `step` parameter.

Path states keep window phases by name (`PathState.phases`). A name that is a loop counter plus an
offset carries, in its value's `Counter`, the name its phases are kept under (`key`) and how far it
stands from it (`shift`), so that its tests correlate with each other, and with the counter's, however
the name was bound or handed on:

    for i, x in enumerate(loader):
        global_step = start_step + i       # key `i + start_step`, shift 0
        if global_step % n == 0:           # the phases of `i + start_step`
            optimizer.zero_grad()
        ...
        if (global_step + 1) % n == 0:     # the same phases: this path cleared at the window's first
            optimizer.step()               # micro-batch, so it is not at its last

An offset of known value (`i + 1`, a constant) shifts the counter's own phases: the key is the loop
counter. An offset of unknown value that the loop does not change (a parameter, an attribute it never
writes, `len(loader) * epoch` of an inner loop) makes a key of its own, advanced with the counter, whose
phase at the loop's first iteration is not known: the tests of that name agree with each other, and no
judgement on the first window is made from them (its `Counter.start` is unknown). A name bound to the
counter is stale once the counter moves (the next iteration, a reassignment): it then stands for itself
again, as any name does.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import replace

from . import names as N
from .syntax import code, int_value
from .values import Counter, Value
from .walk import breadth_first, child_nodes

__all__ = ["CounterAliases", "keyed_element"]

# calls an offset may make and still be the same on every iteration (`len(loader) * epoch + i`)
_PURE_CALLS = frozenset({"len", "int"})


class CounterAliases:
    """Which names are loop counters plus an offset, and the phase keys their offsets make."""

    def __init__(self, stored_in: Callable[[ast.AST], set[str]]) -> None:
        self._stored_in = stored_in
        # loop counter -> (the loop advancing it, the function it runs in), while that loop runs
        self._loops: dict[str, tuple[ast.AST, ast.AST | None]] = {}
        self._roots: dict[str, str] = {}  # key of a counter plus an unknown offset -> the loop counter
        self._derived: dict[str, dict[str, None]] = {}  # loop counter -> those keys, in the order made
        self._anchors: dict[tuple[str, str], int] = {}  # (such a key, window) -> its anchor, once chosen
        # those that go on from one run of their loop to the next (`len(loader) * epoch + i`: `continuing`)
        self._continuing: dict[str, None] = {}

    def running(self, counter: str) -> bool:
        """A loop that advances `counter` is running."""
        return counter in self._loops

    @contextlib.contextmanager
    def advancing(self, counter: str, loop: ast.AST, function: ast.AST | None) -> Iterator[None]:
        """`loop` advances `counter` while it runs (a nested loop of the same name shadows it)."""
        before = self._loops.get(counter)
        self._loops[counter] = (loop, function)
        try:
            yield
        finally:
            if before is None:
                del self._loops[counter]
            else:
                self._loops[counter] = before

    def root(self, key: str) -> str:
        """The loop counter a phase key counts with."""
        return self._roots.get(key, key)

    def derived(self, counter: str) -> tuple[str, ...]:
        """The keys of `counter` plus an unknown offset met so far."""
        return tuple(self._derived.get(counter, ()))

    def derive(self, key: str, offset: str) -> str:
        """The key of the phases of `key` plus an offset (`+ start_step`), advanced with its loop counter."""
        root = self.root(key)
        derived = f"{key} {offset}"
        self._roots[derived] = root
        self._derived.setdefault(root, {})[derived] = None
        return derived

    def continuing(self, key: str) -> bool:
        """`len(loader) * epoch + i` with `i` counting every batch of `loader` from 0 and `epoch` the counter of a
        loop around: the first value of a run of `i`'s loop follows the last of the run before it, so its
        phases go on from where that run left them (a run ends past its back edge: one step on), not from an
        unknown place."""
        return key in self._continuing

    def anchor(self, key: str, window: str, choose: Callable[[], int]) -> int:
        """The anchor of the phases of a key of unknown offset in `window`: chosen once (by the residues its
        first test reads), the same for every later test."""
        found = self._anchors.get((key, window))
        if found is None:
            found = self._anchors[(key, window)] = choose()
        return found

    def offset(self, expr: ast.BinOp, left: Value, right: Value, function: ast.AST | None,
               made: Counter | None) -> Counter | None:
        """`counter + k`, `k + counter`, `counter - k`, with `counter` a loop counter (or a name bound to one)
        and `k` the same on every iteration: the counter, shifted. `made`: the counter the sum already
        carries (`len(loader) * epoch + i` counts from `i`'s first value), whose first value it keeps."""
        if type(expr.op) not in (ast.Add, ast.Sub):
            return None
        sides = [(left, expr.right, right)]
        if type(expr.op) is ast.Add:
            sides.append((right, expr.left, left))
        sign = 1 if type(expr.op) is ast.Add else -1
        for this, other_node, other in sides:
            c = this.counter
            if c is None or c.key is None or (other.counter is not None and other.counter.key is not None):
                continue
            known = _int(other_node, other)
            if known is not None:
                start = None if c.start is None else c.start + sign * known
                return replace(c, zero_based=start == 0, start=start, shift=c.shift + sign * known, period=None)
            root = self.root(c.key)
            running = self._loops.get(root)
            if running is None or running[1] is not function or not self._invariant(other_node, running[0]):
                return None
            key = self.derive(c.key, f"{'+' if sign > 0 else '-'} {code(other_node)}")
            if sign > 0 and c.key == root and c.start == 0 and self._batches_before(other_node, running[0]):
                self._continuing[key] = None
            # `len(loader) * epoch + i`: the sum already counts from `i`'s first value (`eval_binop`)
            product = isinstance(other_node, ast.BinOp) and isinstance(other_node.op, ast.Mult)
            first = made if product and made is not None and made.source == c.source else None
            return Counter(c.source, zero_based=first.zero_based if first else False, incremented=c.incremented,
                           start=first.start if first else None, key=key, shift=c.shift)
        return None

    def _invariant(self, node: ast.expr, loop: ast.AST) -> bool:
        """`k` reads nothing the loop writes, and calls nothing but `len`: its value is the same on every
        iteration."""
        stored = self._stored_in(loop)
        for n in breadth_first(node):
            if isinstance(n, ast.Call) and N.last_name(n.func) not in _PURE_CALLS:
                return False
            if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)):
                return False
            if isinstance(n, ast.Name) and n.id in stored or isinstance(n, ast.Attribute) and n.attr in stored:
                return False
        return True

    def _batches_before(self, offset: ast.expr, loop: ast.AST) -> bool:
        """`len(loader) * epoch` (either order), where `loop` walks all of `loader` (`for i, x in
        enumerate(loader):`, no `break`) and `epoch` counts the iterations of a loop around it."""
        if not (isinstance(offset, ast.BinOp) and isinstance(offset.op, ast.Mult) and isinstance(loop, ast.For)):
            return False
        for size, count in ((offset.left, offset.right), (offset.right, offset.left)):
            if isinstance(size, ast.Call) and N.last_name(size.func) == "len" and len(size.args) == 1 \
                    and (name := N.ref_text(count)) is not None and name in self._loops \
                    and code(size.args[0]) == code(_walked(loop.iter)) and not _breaks(loop):
                return True
        return False

    def unalias(self, env: dict[str, Value], counter: str) -> None:
        """`counter` moved (the next iteration, a new value): the names bound to it hold what it was."""
        for name, value in list(env.items()):
            c = value.counter
            if c is not None and c.key is not None and name != c.key and self.root(c.key) == counter:
                env[name] = replace(value, counter=replace(c, key=None, shift=0, zero_based=False, start=None))


def keyed_element(target: ast.expr, element: Value, counter: str) -> Value:
    """The element a loop binds, its counter keyed by the name that counts the iterations (`i` of `for i,
    x in enumerate(loader)`): a name bound to it later is that counter."""
    if isinstance(target, ast.Name) and element.counter is not None:
        return replace(element, counter=replace(element.counter, key=counter))
    if isinstance(target, (ast.Tuple, ast.List)):
        for position, elt in enumerate(target.elts):
            part = element.item(str(position))
            if isinstance(elt, ast.Name) and elt.id == counter and part is not None and part.counter is not None:
                keyed = replace(part, counter=replace(part.counter, key=counter))
                items = tuple((k, keyed if k == str(position) else v) for k, v in element.items)
                return replace(element, items=items)
    return element


# wrappers a loop over a loader's batches is written through (`enumerate(tqdm(loader))`)
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter"})


def _walked(it: ast.expr) -> ast.expr:
    """The collection a loop walks, past `enumerate(...)` and a progress bar."""
    while isinstance(it, ast.Call) and N.last_name(it.func) in _WRAPPERS and it.args \
            and not isinstance(it.args[0], ast.Starred):
        it = it.args[0]
    return it


def _breaks(loop: ast.For) -> bool:
    """A `break` of this loop (not of a loop or function inside it) may end a run before its last batch."""
    todo: list[ast.AST] = list(loop.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                             ast.ClassDef)):
            continue
        todo.extend(child_nodes(node))
    return False


def _int(node: ast.expr, value: Value) -> int | None:
    """The integer an offset is: a literal, or a name known to hold one."""
    literal = int_value(node)
    if literal is not None:
        return literal
    const = value.const
    return const if isinstance(const, int) and not isinstance(const, bool) else None
