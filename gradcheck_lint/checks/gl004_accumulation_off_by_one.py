"""GL004: the accumulation step condition fires on the first micro-batch of a zero-based counter."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.bound_tests import as_written
from ..analysis.conditions import Condition, code
from ..analysis.events import Step
from ..analysis.gradstate import PathState
from ..analysis.names import dotted
from ..analysis.provenance import Assumption, assumed
from ..analysis.syntax import is_int, starts_with_paren
from ..analysis.values import Holder
from ..analysis.walk import breadth_first
from ..analysis.window_arithmetic import modulo_operations, truth_at_zero
from ..fixplan import SAFE, UNSAFE, FixPlan, ReplaceNode, scope_of, source
from ..registry import Finding, Invalid, Rule, register


@register
class AccumulationOffByOne(Rule):
    code = "GL004"
    name = "accumulation-off-by-one"
    summary = "The step condition fires on the first micro-batch of a zero-based counter."

    VALID = (
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 4).split(2)):
    (model(x).sum() / 4).backward()
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
""",
        """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 4).split(2), start=1):
    (model(x).sum() / 4).backward()
    if i % 4 == 0:
        opt.step()
        opt.zero_grad()
""",
    )
    INVALID = (
        Invalid(
            """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 4).split(2)):
    (model(x).sum() / 4).backward()
    if i % 4 == 0:
        opt.step()
        opt.zero_grad()
""",
            line=7,
            fixed="""
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(torch.randn(16, 4).split(2)):
    (model(x).sum() / 4).backward()
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
""",
            fix="safe",
        ),
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        reported: set[int] = set()
        for step in sorted(model.steps.values(), key=lambda s: model.order(s.node)):
            holders = model.optimizer_holders(step.optimizer)
            for state in step.states():
                for cond in model.guards(step, state):
                    value = state.assumption(cond.akey)
                    if cond.id in reported:
                        continue
                    if cond.reset is not None:
                        finding = _reset_finding(model, step, cond, value, state, holders)
                        if finding is not None:
                            reported.add(cond.id)
                            yield finding
                        continue
                    fires_first = cond.first_value is not None and cond.first_value == value
                    # the step is in the `else` branch of a test true once per window, or in the body of
                    # a test false once per window (`if i % N:`)
                    most = (cond.false_on_most and value is False) or (cond.true_on_most and value is True)
                    if most and _narrowed_by_another_gate(model, step, state, cond):
                        continue  # `if i % N == 0: ... elif i % N == N - 1: step()`: the elif's own test picks the end
                    if most:
                        fires_first = False
                    elif not fires_first and not (cond.short_first_window and value is True):
                        continue
                    if not isinstance(cond.statement, ast.If) or not cond.moduli:
                        continue
                    if any(model.micro_batch_stride(cond, model.backwards[c.backward])
                           for _h, c in state.held(holders)):
                        continue  # its counter counts iterations, a micro-batch every few: no phase of micro-batches
                    longer, taken_over = cond.long_first_window, False
                    if fires_first and value is True and _taken_over_at_zero(model, cond):
                        # `if i == 0: update = False` / `elif i % N == 0:`: never reached on the first micro-batch,
                        # it first holds at N: the first window is N + 1 micro-batches (VL-T5), when the earlier
                        # test holds at 0 only; another (`if i < warmup:`) leaves the windows unknown
                        if not _taken_over_at_zero_only(model, cond):
                            continue
                        fires_first, longer, taken_over = False, True, True
                    if _steps_either_way(model, step, cond, value, holders):
                        continue  # the optimizer steps on both branches: the test is no window of it
                    if _flushes_after_loop(model, cond) \
                            or _flushes_after_micro_batches(model, step, state, holders, cond):
                        continue  # `if i % N != 0: step()` after the loop steps the last, partial window
                    if _window_set_in_loop(model, cond):
                        continue  # `accumulate = max(1, interp(ni, ...))`: a warm-up grows the window from 1
                    accumulating = any(
                        c.fresh and (c.repeated or not any(cond.id in s for s in model.backwards[c.backward].if_stacks))
                        for _h, c in state.held(holders)
                    )
                    if not accumulating:
                        continue
                    if not most and _steps_before_its_backward_passes(model, step, state, holders, cond):
                        continue  # `if i % N == 0: opt.step(); opt.zero_grad()` at the top of the iteration
                    counter = next(iter(cond.counter_sources))
                    if _index_of_an_outer_loop(model, cond, counter):
                        continue  # `if epoch % every == 0:` inside the batch loop: whole epochs, not micro-batches
                    reported.add(cond.id)
                    test, start = code(cond.test), cond.counter_starts.get(counter, 0)
                    written = as_written(cond.test)
                    if written is not None and written[1] == counter:
                        # a test bound to a name before the counter moved: shown as written, with the value it read
                        test, start = code(written[0]), start - written[2]
                        # the test as written, on the first micro-batch of a counter from 0: lets the step run then
                        fires_first = fires_first or (start == 0 and truth_at_zero(written[0], counter) is True)
                    msg, help_ = messages.accumulation_off_by_one(
                        test, counter, cond.counter_sources[counter], step.call_text,
                        start=start, fires_first=fires_first, longer=longer,
                        most=most, most_when=bool(value),
                    )
                    facts = (step.provenance, *(c.provenance for _h, c in state.held(holders) if c.fresh))
                    fix = None if most else self._fix(model, cond, counter)
                    if fix is not None and taken_over:
                        # after `if step_i == 0: update = False`, `(step_i + 1) % N` still skips the first micro-batch
                        # when N is 1: the window setting decides whether the rewrite is right
                        fix = dataclasses.replace(fix, applicability=UNSAFE)
                    yield Finding(cond.test, msg, help_, facts, fix=fix)

    @staticmethod
    def _fix(model: TrainingModel, cond: Condition, counter: str) -> FixPlan | None:
        """Count from one in the test: `i % N == 0` -> `(i + 1) % N == 0`."""
        if not isinstance(cond.statement, ast.If) or cond.statement.test is not cond.test:
            return None  # the test is read through a name (`if sync:`): the assignment is elsewhere
        moduli = [node for node in modulo_operations(cond.test) if dotted(node.left) == counter]
        if not moduli:
            return None
        # `(i) % N`: the counter's own parentheses stay, and `+ 1` goes inside them
        replacements = [
            (m.left, f"{source(model, m.left)} + 1" if starts_with_paren(m, m.left) else f"({source(model, m.left)} + 1)")
            for m in moduli
        ]
        edits = tuple(ReplaceNode(node, text) for node, text in replacements)
        fixed = _spliced(model, cond.test, replacements)
        # a counter assigned more than once (`global_step = checkpoint["global_step"]` on resume) may start
        # elsewhere than 0: the fix is right for a fresh run, and the author should check the resumed one
        safe = len(moduli) == 1 and _plain_window_test(cond.test) and _assigned_once(model, cond, counter)
        return FixPlan(f"Count from one: `if {fixed}:`", edits, SAFE if safe else UNSAFE)


def _reset_finding(model: TrainingModel, step: Step, cond: Condition, value: bool | None, state: PathState,
                   holders: frozenset[Holder]) -> Finding | None:
    """A gate on a counter the loop resets or counts down whose windows are not N micro-batches (`resets`):
    the step runs where the test holds, and the gradients it applies were accumulated over the window."""
    reset = cond.reset
    if reset is None or reset.regular or value is not True:
        return None
    if _steps_either_way(model, step, cond, value, holders):
        return None
    if not any(c.fresh for _h, c in state.held(holders)):
        return None
    statement = cond.statement
    if isinstance(statement, ast.If) and isinstance(statement.test, ast.Name) and cond.key.isidentifier() \
            and cond.key in cond.names:
        # `update = count == 0`, tested as `if update:` (or, handed over, as `if update_grad:`)
        gate = f"{cond.key} = {code(cond.test)}"
    else:
        gate = f"if {code(statement.test if isinstance(statement, ast.If) and cond.caller is not None else cond.test)}:"
    msg, help_ = messages.reset_window_off(gate, reset.counter, reset.window, reset.start,
                                           reset.size(reset.first), reset.size(reset.later), step.call_text)
    facts = (step.provenance, *(c.provenance for _h, c in state.held(holders) if c.fresh))
    if cond.caller is not None:
        msg += f" (The gate is the caller's, handed over at {cond.caller}.)"
        facts = (*facts, assumed(Assumption.NAME))
    return Finding(cond.test if cond.caller is None else step.node, msg, help_, facts)


def _steps_before_its_backward_passes(model: TrainingModel, step: Step, state: PathState, holders: frozenset[Holder],
                                      cond: Condition) -> bool:
    """The gate's loop runs the step before the backward passes whose gradients it applies (each backward, or the call
    of the loop's body that runs it, comes after the step in the loop): `for i, b in enumerate(loader): if not i % N:
    opt.step(); opt.zero_grad()`, then the forward and `loss.backward()` (vq-draw, lockbox 31). A window ends at the top
    of the iteration after its last micro-batch, so on a counter from 0 `i % N == 0` is right: the first step, at 0,
    applies nothing, the next, at N, the N micro-batches before it (and `and i > 0` only skips the empty one)."""
    loop = model.parent(cond.statement)
    while loop is not None and not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        loop = model.parent(loop)
    held = [c for _h, c in state.held(holders) if c.fresh]
    if loop is None or not held or not _within(model, step.node, loop):
        return False
    at = model.order(step.node)
    for c in held:
        backward = model.backwards.get(c.backward)
        if backward is None:
            return False
        places = [n for n in (backward.node, *(call for chain in backward.callers for call in chain))
                  if _within(model, n, loop)]
        if not places or any(model.order(n) <= at for n in places):
            return False
    return True


def _within(model: TrainingModel, node: ast.AST, outer: ast.AST) -> bool:
    current: ast.AST | None = node
    while current is not None:
        if current is outer:
            return True
        current = model.parent(current)
    return False


def _narrowed_by_another_gate(model: TrainingModel, step, state, cond) -> bool:
    """The step sits in the `else` of a test true once per window, and also under another window test of the same
    counter that this path takes true: an `elif i % N == N - 1:` (SQLova's accumulation: clear and backward at the
    window's start, step at its end). The step runs where that test holds, not on the other N - 1 micro-batches."""
    for other in model.guards(step, state):
        if other.id == cond.id or not other.moduli or not set(other.counters) & set(cond.counters):
            continue
        if state.assumption(other.akey) is True and not other.true_on_most:
            return True
    return False


def _taken_over_at_zero(model: TrainingModel, cond: Condition) -> bool:
    """The test is an `elif` after one that holds when its counter starts from 0 (VL-T5's `if step_i == 0:
    update = False` / `elif step_i % N == 0 ...: update = True`, lockbox 11): on the first micro-batch the earlier
    branch runs, and this test is not even evaluated."""
    statement = cond.statement
    counters = [c for c in cond.counter_sources if cond.counter_starts.get(c, 0) == 0]
    if not counters:
        return False
    parent = model.parent(statement)
    while isinstance(parent, ast.If) and len(parent.orelse) == 1 and parent.orelse[0] is statement:
        if any(truth_at_zero(parent.test, c) is True for c in counters):
            return True
        statement, parent = parent, model.parent(parent)
    return False


def _taken_over_at_zero_only(model: TrainingModel, cond: Condition) -> bool:
    """The earlier test that takes the first micro-batch over (`_taken_over_at_zero`) is `counter == 0` (or `not
    counter`): true there only, so this test decides every later micro-batch."""
    counters = [c for c in cond.counter_sources if cond.counter_starts.get(c, 0) == 0]
    parent = model.parent(cond.statement)
    if not (isinstance(parent, ast.If) and len(parent.orelse) == 1 and parent.orelse[0] is cond.statement):
        return False
    test = parent.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return isinstance(test.operand, ast.Name) and test.operand.id in counters
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and any(dotted(side) in counters for side in (test.left, test.comparators[0]))
            and any(is_int(side, 0) for side in (test.left, test.comparators[0])))


def _spliced(model: TrainingModel, node: ast.expr, replacements: list[tuple[ast.expr, str]]) -> str:
    """The node's source with some of its sub-expressions replaced, whitespace-normalised."""
    text = source(model, node)
    lines = text.split("\n")
    start = model.span(node)

    def offset(line: int, column: int) -> int:  # an offset into `text` from a 1-based position
        rel = line - start.line
        col = column - (start.column if rel == 0 else 1)
        return sum(len(x) + 1 for x in lines[:rel]) + col

    for sub, new in sorted(replacements, key=lambda r: (r[0].lineno, r[0].col_offset), reverse=True):
        span = model.span(sub)
        text = text[: offset(span.line, span.column)] + new + text[offset(span.end_line, span.end_column):]
    return " ".join(text.split())


def _flushes_after_loop(model: TrainingModel, cond: Condition) -> bool:
    """The test follows, in the same function, a loop that advances its counter: it flushes the
    window the loop left (`for ...: i += 1; if i % N == 0: step()` then `if i % N != 0: step()`)."""
    counters = {c.rsplit(".", 1)[-1] for c in cond.counters}
    node: ast.AST = cond.statement
    while True:
        parent = model.parent(node)
        if parent is None or isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = getattr(parent, "body", [])
        else:
            body = next((b for b in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody")) if isinstance(b, list) and node in b), [])
        if node in body:
            for earlier in body[: body.index(node)]:
                if isinstance(earlier, (ast.For, ast.AsyncFor, ast.While)) and _advances(earlier, counters):
                    return True
        if parent is None or isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            return False
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.While)):
            return False  # inside a loop: a gate of that loop's micro-batches
        node = parent


def _flushes_after_micro_batches(model: TrainingModel, step: Step, state: PathState, holders: frozenset[Holder],
                                 cond: Condition) -> bool:
    """The test flushes a window gate's remainder (`remainder_flush`: here one in a function of its own, called after
    the loop, `def finalize_epoch(self): if self.step % N != 0: step()`), and the step runs outside the loop of the
    micro-batches whose gradients it applies: every backward pass it applies ran in a loop the step is not in. Called
    on every micro-batch instead, the same flush steps on N - 1 of every N: that is still reported."""
    if model.flushed_gate(cond.statement) is None:
        return False
    passes = [model.backwards[c.backward] for _h, c in state.held(holders) if c.fresh]
    return bool(passes) and all(len(b) > len(s) and b[:len(s)] == s
                                for p in passes for b in p.loop_stacks for s in step.loop_stacks)


def _window_set_in_loop(model: TrainingModel, cond: Condition) -> bool:
    """The loop around the test assigns the window size itself (yolov7's warm-up grows `accumulate` from
    1 as `ni` grows): with a window of 1 on the first micro-batches, stepping on the first one is right,
    and where windows start is not the fixed phase the rule judges."""
    window = cond.moduli[0]
    node: ast.AST | None = cond.statement
    while node is not None and not isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)):
        node = model.parent(node)
    if not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        return False
    for n in breadth_first(node):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else []
        if any(code(t) == window for t in targets):
            return True
    return False


def _index_of_an_outer_loop(model: TrainingModel, cond: Condition, counter: str) -> bool:
    """The counter is the variable of a `for` loop around the loop that holds the test, which that inner loop never
    rebinds (`for epoch in range(n): for i, data in enumerate(loader): if epoch % k == 0: ...`): the test has one
    value for every micro-batch of an epoch, so it picks epochs, not the micro-batches of a window."""
    inner: ast.AST | None = None
    up = model.parent(cond.statement)
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(up, (ast.For, ast.AsyncFor, ast.While)):
            binds = isinstance(up, (ast.For, ast.AsyncFor)) and any(
                isinstance(n, ast.Name) and n.id == counter for n in breadth_first(up.target))
            if inner is None:
                if binds:
                    return False
                inner = up
            elif binds:
                return not _advances(inner, {counter})
        up = model.parent(up)
    return False


def _advances(loop: ast.AST, counters: set[str]) -> bool:
    for n in breadth_first(loop):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.For, ast.AsyncFor)) else []
        for t in targets:
            for leaf in breadth_first(t):
                name = leaf.id if isinstance(leaf, ast.Name) else leaf.attr if isinstance(leaf, ast.Attribute) else None
                if name in counters:
                    return True
    return False


def _plain_window_test(test: ast.expr) -> bool:
    """`i % N == 0`, `0 == i % N`, `i % N != 0`, `not i % N` or a bare `i % N`: nothing else is tested."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.BinOp):
        return isinstance(test.op, ast.Mod)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        sides = [test.left, test.comparators[0]]
        zero = [s for s in sides if is_int(s, 0)]
        modulo = [s for s in sides if isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mod)]
        return isinstance(test.ops[0], (ast.Eq, ast.NotEq)) and len(zero) == 1 and len(modulo) == 1
    return False


def _steps_either_way(model: TrainingModel, step: Step, cond: Condition, value: bool | None, holders) -> bool:
    """Another step of the same parameters runs when the test goes the other way (`if step % 2 == 0:
    muon.step() else: for opt in optimizers: opt.step()`): those parameters step on every micro-batch."""
    for other in model.steps.values():
        if other is step or not any(h.overlaps(x) for h in model.optimizer_holders(other.optimizer) for x in holders):
            continue
        for state in other.states():
            if state.assumption(cond.akey) is (not value) and cond in model.guards(other, state):
                return True
    return False


def _assigned_once(model: TrainingModel, cond: Condition, counter: str) -> bool:
    """The counter is bound by at most one plain assignment in the test's function (its loop target or an
    increment aside)."""
    scope = scope_of(model, cond.statement)
    if scope is None or not counter.isidentifier():
        return True
    bound = [n for n in breadth_first(scope) if isinstance(n, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == counter for t in n.targets)]
    return len(bound) <= 1
