"""GL004: the accumulation step condition fires on the first micro-batch of a zero-based counter."""

from __future__ import annotations

from typing import Iterable

import libcst as cst

from .. import messages
from ..analysis import TrainingModel
from ..analysis.conditions import Condition, code, strip_parens
from ..analysis.names import dotted
from ..analysis.walk import walk
from ..fixplan import SAFE, UNSAFE, FixPlan, ReplaceNode, source
from ..registry import Finding, Rule, register


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
                    fires_first = cond.first_value is not None and cond.first_value == value
                    if not fires_first and not (cond.short_first_window and value is True):
                        continue
                    if not isinstance(cond.statement, cst.If) or not cond.moduli:
                        continue
                    accumulating = any(
                        c.fresh and (c.repeated or not any(cond.id in s for s in model.backwards[c.backward].if_stacks))
                        for _h, c in state.held(holders)
                    )
                    if not accumulating:
                        continue
                    reported.add(cond.id)
                    counter = next(iter(cond.counter_sources))
                    msg, help_ = messages.accumulation_off_by_one(
                        code(cond.test), counter, cond.counter_sources[counter], step.call_text,
                        start=cond.counter_starts.get(counter, 0), fires_first=fires_first, longer=cond.long_first_window,
                    )
                    yield Finding(cond.test, msg, help_, fix=self._fix(model, cond, counter))

    @staticmethod
    def _fix(model: TrainingModel, cond: Condition, counter: str) -> FixPlan | None:
        """Count from one in the test: `i % N == 0` -> `(i + 1) % N == 0`."""
        if not isinstance(cond.statement, cst.If) or cond.statement.test is not cond.test:
            return None  # the test is read through a name (`if sync:`): the assignment is elsewhere
        counters: list[cst.BaseExpression] = []

        class Moduli(cst.CSTVisitor):
            def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
                if isinstance(node.operator, cst.Modulo) and dotted(strip_parens(node.left)) == counter:
                    counters.append(node.left)

        walk(cond.test, Moduli())
        if not counters:
            return None
        edits = tuple(
            ReplaceNode(left, f"{source(model, left)} + 1" if getattr(left, "lpar", None) else f"({source(model, left)} + 1)")
            for left in counters
        )
        fixed: cst.CSTNode = cond.test
        for left in counters:
            fixed = fixed.deep_replace(left, cst.parse_expression(f"({source(model, left)} + 1)"))
        safe = len(counters) == 1 and _plain_window_test(strip_parens(cond.test))
        return FixPlan(f"Count from one: `if {code(fixed)}:`", edits, SAFE if safe else UNSAFE)


def _plain_window_test(test: cst.BaseExpression) -> bool:
    """`i % N == 0`, `0 == i % N`, `i % N != 0`, `not i % N` or a bare `i % N`: nothing else is tested."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = strip_parens(test.expression)
    if isinstance(test, cst.BinaryOperation):
        return isinstance(test.operator, cst.Modulo)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        sides = [strip_parens(test.left), strip_parens(comp.comparator)]
        zero = [s for s in sides if isinstance(s, cst.Integer) and s.value == "0"]
        modulo = [s for s in sides if isinstance(s, cst.BinaryOperation) and isinstance(s.operator, cst.Modulo)]
        return isinstance(comp.operator, (cst.Equal, cst.NotEqual)) and len(zero) == 1 and len(modulo) == 1
    return False
