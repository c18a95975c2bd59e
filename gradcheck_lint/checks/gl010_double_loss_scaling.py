"""GL010: the loss is divided by the accumulation window twice, or divided while nothing accumulates."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from .. import messages
from ..analysis import TrainingModel
from ..analysis.conventions import convention
from ..analysis.events import Backward
from ..analysis.walk import breadth_first
from ..codemod_plans import drop_manual_division
from ..registry import Finding, Invalid, Rule, register
from .gl003_unscaled_accumulated_loss import divides_by_window

# A divisor named for accumulation (`gradient_accumulation_steps`, `accum_iter`, `update_freq`).
_ACCUMULATION = convention("accumulation")


@register
class DoubleLossScaling(Rule):
    code = "GL010"
    name = "double-loss-scaling"
    summary = "The loss is divided by the accumulation window although the framework already divides it, or although nothing accumulates."

    VALID = (
        """
from accelerate import Accelerator
import torch
accelerator = Accelerator(gradient_accumulation_steps=4)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = accelerator.prepare(model, optimizer)
for x in torch.randn(16, 2, 4):
    with accelerator.accumulate(model):
        loss = model(x).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid(
            """
from accelerate import Accelerator
import torch
accumulation_steps = 4
accelerator = Accelerator(gradient_accumulation_steps=accumulation_steps)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = accelerator.prepare(model, optimizer)
for x in torch.randn(16, 2, 4):
    with accelerator.accumulate(model):
        loss = model(x).pow(2).mean() / accumulation_steps
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
""",
            line=12,
            fixed="""
from accelerate import Accelerator
import torch
accumulation_steps = 4
accelerator = Accelerator(gradient_accumulation_steps=accumulation_steps)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = accelerator.prepare(model, optimizer)
for x in torch.randn(16, 2, 4):
    with accelerator.accumulate(model):
        loss = model(x).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
""",
            fix="safe",
        ),
    )

    def check(self, model: TrainingModel) -> Iterable[Finding]:
        for hook in model.framework_divided_returns:
            msg, help_ = messages.hook_loss_divided_twice(hook.method, hook.loss_text, hook.divisor, hook.hook.divides_returned)
            yield Finding(hook.returned, msg, help_)
        reported: set[int] = set()
        for backward in sorted(model.backwards.values(), key=lambda b: model.order(b.node)):
            if not model.trains:
                break  # nothing in the file applies these gradients: no window to judge
            if id(backward.node) in reported:
                continue
            divisor = self._twice(backward)
            if divisor is not None:
                reported.add(id(backward.node))
                msg, help_ = messages.double_loss_scaling(backward.call_text, backward.loss_text, divisor, backward.framework_window)
                yield Finding(backward.node, msg, help_, (backward.framework, backward.loss.provenance), fix=drop_manual_division(model, backward, divisor))
        steps_of: dict[int, set[int]] = {}  # optimizer uid -> the ids of its step calls
        for s in model.steps.values():
            steps_of.setdefault(s.optimizer.uid, set()).add(id(s.node))
        for step in sorted(model.steps.values(), key=lambda s: model.order(s.node)):
            mine = steps_of.get(step.optimizer.uid, set())
            gated = any(not (_always_true(model, c) or _steps_either_way(model, c, mine))
                        for stack in step.if_stacks for c in stack)
            if gated or step.framework_gated:
                continue  # a gated step: a window may well accumulate
            holders = model.optimizer_holders(step.optimizer)
            states = step.states()
            if any(any(not c.fresh or c.repeated for _h, c in s.held(holders)) or len({c.backward for _h, c in s.held(holders)}) > 1
                   for s in states):
                continue  # on some path older gradients or several backward passes: something does accumulate
            for state in states:
                for _h, c in state.held(holders):
                    backward = model.backwards[c.backward]
                    if id(backward.node) in reported or not c.fresh or c.repeated:
                        continue
                    if model.accumulation_source(state, backward, step) is not None or not model.in_same_loop(backward.loop_stacks, step.loop_stacks):
                        continue
                    if backward.framework_scaled and backward.windowed:
                        continue  # the call runs its window's micro-batches itself (a schedule): they accumulate there
                    if backward.framework_scaled:
                        # the framework divides by its window (kohya's sdxl_train.py, `accelerator.accumulate`
                        # replaced by `if True:`): outside its accumulation context every step is too small
                        window = backward.framework_window
                        if window is None or not (_ACCUMULATION.search(window) or window.isdigit()) or backward.loss.divisors & {window}:
                            continue
                        reported.add(id(backward.node))
                        msg, help_ = messages.framework_divided_not_accumulated(backward.call_text, window, step.call_text, model.line(step.node),
                                                                              backward.framework_assumed)
                        yield Finding(backward.node, msg, help_, (step.provenance, c.provenance, backward.framework))
                        continue
                    dividing = backward.loss.divisors - backward.loss.unit_divisors  # a divisor of 1 divides nothing
                    named = sorted(d for d in dividing if _ACCUMULATION.search(d))
                    if not named or _summed_over_inner_loop(model, backward):
                        continue
                    reported.add(id(backward.node))
                    msg, help_ = messages.divided_not_accumulated(backward.call_text, backward.loss_text, named[0], step.call_text, model.line(step.node))
                    yield Finding(backward.node, msg, help_, (step.provenance, c.provenance, backward.loss.provenance))

    @staticmethod
    def _twice(backward: Backward) -> str | None:
        """The manual divisor of a loss the framework divides by its window too."""
        if not backward.framework_scaled or backward.framework_assumed or not backward.loss.divisors:
            return None
        window = backward.framework_window
        for d in sorted(backward.loss.divisors - backward.loss.unit_divisors):
            if window is not None and divides_by_window(frozenset({d}), window) and (d == window or _ACCUMULATION.search(d)):
                return d
            if window is None and _ACCUMULATION.search(d):
                return d
        return None


def _steps_either_way(model: TrainingModel, cond_id: int, steps: set[int]) -> bool:
    """`if self.amp: scaler.step(opt) else: opt.step()`: both arms of the `if` step the optimizer, so the test
    chooses how it steps, not whether: no gate."""
    cond = model.conditions.get(cond_id)
    node = cond.statement if cond is not None else None
    if not isinstance(node, ast.If) or not node.orelse:
        return False
    return all(any(id(n) in steps for s in arm for n in breadth_first(s)) for arm in (node.body, node.orelse))


def _always_true(model: TrainingModel, cond_id: int) -> bool:
    """`if True:` (kohya's sd-scripts, where `with accelerator.accumulate(...)` was): no gate. (The
    interpreter still takes both arms of such a test; deciding it there changed which paths long files
    explore within their work budget.)"""
    cond = model.conditions.get(cond_id)
    return cond is not None and isinstance(cond.test, ast.Constant) and cond.test.value is True


def _summed_over_inner_loop(model: TrainingModel, backward: Backward) -> bool:
    """The loss is a running sum over a loop that ends before its backward (`for x, y in window:
    window_loss = window_loss + criterion(model(x), y) / accum`, then `window_loss.backward()`): the
    micro-batches are summed into one backward, so dividing each by the window is the mean."""
    name = backward.loss_text
    if not name.isidentifier():
        return False
    scope = model.parent(backward.node)
    while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        scope = model.parent(scope)
    if scope is None:
        return False
    for node in breadth_first(scope):
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While)) or any(n is backward.node for n in breadth_first(node)):
            continue
        for stmt in breadth_first(node):
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add) and _is_name(stmt.target, name):
                return True
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _is_name(stmt.targets[0], name)
                    and isinstance(stmt.value, ast.BinOp) and isinstance(stmt.value.op, ast.Add)
                    and (_is_name(stmt.value.left, name) or _is_name(stmt.value.right, name))):
                return True
    return False


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
