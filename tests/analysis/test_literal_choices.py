"""A value known to be one of a few string literals (`Value.choices`): a literal, or the variable of a loop
over a tuple of literals. A path that ruled out all but one of them by `x == "..."` tests knows the last
test holds (`pathcond.remaining`), so an `if`/`elif` chain over every mode, without an `else`, has no path
on which no arm runs. (apex's test_add_param_group.py: its `self.zero_grad(models, optimizer, how_to_zero)`
clears in each of the three modes the test loops over; the method's name plays no part.)"""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source
from gradcheck_lint.analysis.pathcond import EQUALS, Atom, remaining


def codes(text: str) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in check_source(text))


MODES = """\
import unittest

import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(2))

    def forward(self, x):
        return (x * self.weight).sum()


class TestAccumulation(unittest.TestCase):
    def {helper}(self, models, optimizer, how_to_zero):
        if how_to_zero == "none":
            for model in models:
                for param in model.parameters():
                    param.grad = None
        elif how_to_zero == "model":
            for model in models:
                model.zero_grad()
        elif how_to_zero == "optimizer":
            optimizer.zero_grad()

    def test_steps(self):
        x = torch.ones(2)
        for how_to_zero in {modes}:
            model = Model()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.25)
            for _ in range(3):
                self.{helper}([model], optimizer, how_to_zero)
                model(x).backward()
                optimizer.step()
"""


@pytest.mark.parametrize("helper", ["zero_grad", "clear_gradients"])
def test_a_chain_over_every_mode_the_loop_walks_clears_on_every_path(helper: str) -> None:
    assert codes(MODES.format(helper=helper, modes='"none", "model", "optimizer"')) == []


def test_a_mode_no_arm_handles_leaves_the_gradients() -> None:
    assert codes(MODES.format(helper="zero_grad", modes='("none", "model", "keep")')) == [(35, "GL001")]


def test_a_mode_of_unknown_value_leaves_both_ways_open() -> None:
    assert codes(MODES.format(helper="zero_grad", modes="self.modes")) == [(35, "GL001")]


def test_remaining_rules_out_what_the_path_knows() -> None:
    atoms = {1: Atom(EQUALS, "m", "'a'"), 2: Atom(EQUALS, "m", "'b'"), 3: Atom(EQUALS, "m", "'c'")}
    choices = frozenset({"'a'", "'b'", "'c'"})
    assert remaining(choices, atoms, {1: False, 2: False}.get) == {"'c'"}
    assert remaining(choices, atoms, {2: True}.get) == {"'b'"}
    assert remaining(choices, atoms, {}.get) == choices
