"""A local bound once from an attribute (`grad_scaler = self.grad_scaler`) and then tested tests the
attribute: two methods that each test their own alias of one setting take the same arm (tnt's AutoUnit:
the loss is scaled under one alias, the step goes through the scaler under the other)."""

import ast
import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.analysis.syntax import reference_aliases
from gradcheck_lint.config import Settings

UNIT = """
import torch
from torch.cuda.amp import GradScaler


class Unit:
    def __init__(self, module, optimizer, precision=None):
        self.module = module
        self.optimizer = optimizer
        self.grad_scaler = GradScaler() if precision else None

    def train_step(self, data):
        loss = self.module(data).mean()
        grad_scaler = self.grad_scaler
        if grad_scaler:
            loss = grad_scaler.scale(loss)
        loss.backward()
        self._step()

    def _step(self):
        {step}
        self.optimizer.zero_grad()
"""

THROUGH_SCALER = """scaler = self.grad_scaler
        if scaler:
            scaler.step(self.optimizer)
            scaler.update()
        else:
            self.optimizer.step()"""


def _codes(source: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(source), "unit.py", settings=Settings.default())]


def test_two_aliases_of_one_attribute_take_the_same_arm() -> None:
    assert _codes(UNIT.format(step=THROUGH_SCALER)) == []


def test_alias_against_the_full_attribute_takes_the_same_arm() -> None:
    step = THROUGH_SCALER.replace("scaler = self.grad_scaler\n        if scaler:", "if self.grad_scaler:")
    step = step.replace("scaler.step(", "self.grad_scaler.step(").replace("scaler.update()", "self.grad_scaler.update()")
    assert _codes(UNIT.format(step=step)) == []


def test_a_step_that_bypasses_the_scaler_is_still_gl007() -> None:
    assert [code for _line, code in _codes(UNIT.format(step="self.optimizer.step()"))] == ["GL007"]


def test_a_name_bound_twice_or_whose_attribute_is_assigned_is_no_alias() -> None:
    fn = ast.parse(textwrap.dedent("""
        def f(self, other):
            a = self.x
            b = self.y
            b = other.y
            c = self.z
            self.z = None
            d = self.w.v
            for e in items:
                pass
            e = self.q
        """)).body[0]
    assert reference_aliases(fn) == {"a": ("self.x", 3), "d": ("self.w.v", 8)}  # type: ignore[arg-type]
