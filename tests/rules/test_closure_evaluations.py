"""An optimizer step that calls its closure more than once (L-BFGS, from the catalogue) adds each
evaluation to the last unless the closure clears; an optimizer of unknown class may do so (possible)."""

import textwrap

from gradcheck_lint import check_source
from gradcheck_lint.config import Settings
from gradcheck_lint.diagnostics import Certainty

HEAD = """
import torch
from torch import nn
model = nn.Linear(4, 1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
"""


def _gl001(source: str):
    found = check_source(HEAD + textwrap.dedent(source), "train.py", settings=Settings.default())
    return [d for d in found if d.code == "GL001"]


def test_lbfgs_closure_without_its_own_clear_is_certain_gl001() -> None:
    found = _gl001("""
optimizer = torch.optim.LBFGS(model.parameters(), max_iter=5)
for epoch in range(3):
    optimizer.zero_grad()
    def closure():
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        return loss
    optimizer.step(closure)
""")
    assert len(found) == 1 and found[0].certainty is Certainty.CERTAIN
    assert "evaluates its closure again" in found[0].message and "inside the closure" in found[0].help


def test_lbfgs_imported_by_name_with_clear_after_step_is_found() -> None:
    found = _gl001("""
from torch.optim import LBFGS
optimizer = LBFGS(model.parameters())
def closure():
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    return loss
for epoch in range(3):
    optimizer.step(closure)
    optimizer.zero_grad()
""")
    assert [f.certainty for f in found] == [Certainty.CERTAIN]


def test_lbfgs_closure_that_clears_is_silent() -> None:
    assert _gl001("""
optimizer = torch.optim.LBFGS(model.parameters())
def closure():
    optimizer.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    return loss
for epoch in range(3):
    optimizer.step(closure)
""") == []


def test_sgd_closure_cleared_outside_is_silent() -> None:
    # torch's other optimizers call the closure once per step: a clear before the step is enough
    assert _gl001("""
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    optimizer.zero_grad()
    def closure():
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        return loss
    optimizer.step(closure)
""") == []


def test_optimizer_of_unknown_class_is_possible_and_says_why() -> None:
    source = """
def fit(optimizer, batches):
    for xb, yb in batches:
        def closure():
            loss = ((model(xb) - yb) ** 2).mean()
            loss.backward()
            return loss
        optimizer.step(closure)
        optimizer.zero_grad()
"""
    found = _gl001(source)
    assert len(found) == 1 and found[0].certainty is Certainty.POSSIBLE
    assert "may evaluate its closure more than once" in found[0].message
    assert any("class of an object made out of sight" in a for a in found[0].assumptions)


def test_optimizer_of_unknown_class_whose_closure_clears_is_silent() -> None:
    assert _gl001("""
def fit(optimizer, batches):
    for xb, yb in batches:
        def closure():
            optimizer.zero_grad()
            loss = ((model(xb) - yb) ** 2).mean()
            loss.backward()
            return loss
        optimizer.step(closure)
""") == []


def test_positional_arguments_that_are_no_closure_are_not_evaluated_again() -> None:
    # a wrapper's `step(config, timers)` (Megatron's optimizer in verl): the first argument is no function
    assert _gl001("""
class Worker:
    def __init__(self, optimizer, config):
        self.optimizer, self.config = optimizer, config

    def train_model(self, batch):
        self.optimizer.zero_grad()
        model(batch).mean().backward()
        self.optimizer.step(self.config, self.config.timers)
""") == []
