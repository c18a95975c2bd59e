"""Periods of counters: whether a counter still stands at the value it was last reset to.

A counter's reset point is part of its value. `enumerate(loader)` restarts at 0 each time its loop
starts (each epoch); `task_step = 0` at the top of a task's loop restarts it per task. A test of the
counter against its reset value is true exactly on the first micro-batch of that period:

    global_step = 0
    for epoch in range(epochs):
        for i, (x, y) in enumerate(loader):
            if i == 0:                       # once per epoch: before any backward of this epoch
                optimizer.zero_grad()
            (loss / accum).backward()
            if (global_step + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
            global_step += 1

Read as an unknown test, `if i == 0:` could clear on any micro-batch, inside an accumulation window
(a false GL002). Each path state instead carries, for such a counter, whether it is *at* its reset
value or *past* it (a phase keyed `@start:<function>:<counter>`, its window the reset value): set at the reset (a
loop's start, an assignment of an int literal), moved past at an increment (`+= k` with k >= 1, the
loop's back edge), forgotten at any other assignment. A test of the counter alone is then decided on
each path. Only counters some test compares with an int literal where the branch can touch gradients
are followed: other counters would only multiply the paths.

A counter whose resets and increments are out of sight (kept by a base class in another file and
advanced by the loop that calls this step method: `self.epoch_iteration`, `self.task_iteration`) has no
phase on the path, so the test is not decided. Its true arm still says something: a test that holds at
the reset value 0 and at no value past it (`starts_period`) holds on the first micro-batch of a period,
so the gradients a path holds there come from micro-batches of an earlier period. When the counter is
also the one a gate of the module counts the window with (`step % accum == 0`), a clear there drops at
most the unfinished window the last period left, not micro-batches of the window that is starting:

    if self.epoch_iteration == 0:               # the first micro-batch of an epoch
        self.opt.zero_grad()
    (loss / self.args.virtual_bs_n).backward()
    if self.epoch_iteration > 0 and self.epoch_iteration % self.args.virtual_bs_n == 0:
        self.opt.step()
        self.opt.zero_grad()

The same holds where the path knows the counter is at its reset value because the step method restarted it
(`if self.old_epoch != epoch: self.iteration = 0`). The interpreter marks those gradients as carried over
(`PathState.enter_loop`'s mark) on that arm: a clear
of carried gradients discards nothing of a window. Only gradients of backward passes that come after the
test in the same function are marked (they can only be an earlier call's); a backward before the test
is this micro-batch's own, and clearing it under the test is still a discard.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .gradstate import PathState
from .names import dotted
from .walk import breadth_first
from .window_arithmetic import concrete

PREFIX = "@start:"
AT, PAST = frozenset({"at"}), frozenset({"past"})
_SAMPLES = 8  # values past the reset value a test is evaluated at


def tested_counters(module: ast.Module, matters: Callable[[ast.If], bool]) -> frozenset[str]:
    """Names, and attributes of `self`, that an `if` whose branch `matters` compares with an int literal
    (`if i == 0:`, `if not task_step:`, `if self.epoch_iteration == 0:`) or tests for truth (`if i:`, a part of an
    `and`: vq-draw's `if not i % N: if i: optimizer.step()`, whose step skips the first micro-batch)."""
    out: set[str] = set()
    for node in breadth_first(module):
        if isinstance(node, ast.If) and matters(node):
            operands = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
            out.update(name for operand in operands
                       if isinstance(operand, (ast.Name, ast.Attribute)) and (name := _counter(operand)) is not None)
            for sub in breadth_first(node.test):
                if isinstance(sub, ast.Compare) and len(sub.ops) == 1 \
                        and isinstance(sub.comparators[0], ast.Constant) and type(sub.comparators[0].value) is int:
                    name = _counter(sub.left)
                elif isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.Not):
                    name = _counter(sub.operand)
                else:
                    continue
                if name is not None:
                    out.add(name)
    return frozenset(out)


def _counter(node: ast.expr) -> str | None:
    """A name, an attribute of `self`, or an attribute path a framework's loop counts by (Ignite's
    `engine.state.iteration`, reset and advanced by the loop that calls the process function)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    if isinstance(node, ast.Attribute):
        return dotted(node)
    return None


def key(scope: int, counter: str) -> str:
    """The phase key of a counter of one function (`scope`: the id of its node, 0 for a module's top level):
    a callee's own `i` is not its caller's. An attribute (`self.epoch_iteration`, reset in a base class's
    epoch loop and tested in the step method it calls) belongs to no function."""
    return f"{PREFIX}{0 if '.' in counter else scope}:{counter}"


def reset(state: PathState, k: str, value: int) -> PathState:
    """The counter was set to `value`: its period starts."""
    return forget(state, k).with_phase(k, str(value), AT)


def advance(state: PathState, k: str) -> PathState:
    """The counter moved on (an increment, the next iteration of its loop): past its reset value."""
    for c, w, p in state.phases:
        if c == k:
            return state if p == PAST else state.with_phase(c, w, PAST)
    return state


def forget(state: PathState, k: str) -> PathState:
    """The counter was assigned something else: where it stands is not known."""
    if not any(c == k for c, _w, _p in state.phases):
        return state
    return state._with(phases=frozenset(x for x in state.phases if x[0] != k))


def starts_period(test: ast.expr, counter: str) -> bool:
    """The test holds at the counter's reset value 0 and at none of the values past it (`i == 0`,
    `not self.task_iteration`, `step < 1`)."""
    at = concrete(test, {counter: 0})
    if at is None or not at:
        return False
    return all((v := concrete(test, {counter: n})) is not None and not v for n in range(1, 1 + _SAMPLES))


def truth(state: PathState, test: ast.expr, scope: int, names: frozenset[str]) -> bool | None:
    """The truth of `test` on this path from where its counters stand (None: not decided). Only a
    test that reads nothing but one followed counter and literals is decided."""
    for c, w, p in state.phases:
        if not c.startswith(PREFIX):
            continue
        counter = c.split(":", 2)[2]
        if counter not in names or c != key(scope, counter):
            continue
        start = int(w)
        values = [start] if p == AT else range(start + 1, start + 1 + _SAMPLES)
        seen = {None if (v := concrete(test, {counter: n})) is None else bool(v) for n in values}
        if len(seen) == 1:
            found = seen.pop()
            if found is not None:
                return found
    return None
