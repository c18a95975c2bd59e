"""A clear of an optimizer whose parameters are not known may clear the very parameters a step applies.

darts-pt's projection loop (lockbox 28 material, after reading its optimizer-building method past the budget) is
handed `model.optimizer`, then calls `model.reset_optimizer(...)`, which builds another optimizer over the same
weights; the loop goes on clearing the first (`optimizer.zero_grad()`) before `model.step(...)` steps the second.
The first was built out of sight: that its clear "clears other parameters" is an assumption, and GL001 is possible.
With the cleared optimizer built in sight over another module, the clear is read to miss the stepped weights."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

SCRIPT = """\
import torch
import torch.nn as nn


class Network(nn.Module):
    def __init__(self, optimizer_factory):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.optimizer = optimizer_factory(self)

    def reset_optimizer(self, lr):
        del self.optimizer
        self.optimizer = torch.optim.SGD(self.parameters(), lr=lr)

    def step(self, x, y):
        loss = ((self.fc(x) - y) ** 2).mean()
        loss.backward()
        self.optimizer.step()
        return loss


def project(model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        model.step(x, y)
    model.reset_optimizer(0.01)
    for x, y in loader:
        optimizer.zero_grad()
        model.step(x, y)


def main(loader, factory):
    model = Network(factory)
    project(model, {cleared}, loader)
"""


@pytest.mark.parametrize("cleared, possible", [
    ("model.optimizer", True),  # built by a factory out of sight: its parameters are not known
    ("torch.optim.SGD(nn.Linear(4, 1).parameters(), lr=0.1)", False),  # over another module: the weights stay
])
def test_a_clear_of_parameters_not_known_is_an_assumption(cleared: str, possible: bool) -> None:
    found = analyse_text(SCRIPT.format(cleared=cleared), "search.py").diagnostics
    assert [(d.line, d.possible) for d in found if d.code == "GL001"] == [(18, possible)]
