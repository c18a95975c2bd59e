"""A part of a module's result that its `forward`, read, builds from numbers holds no graph.

DI-drive's implicit-affordance criterion (lockbox 28, a certain GL008 false alarm) returns the loss and a tuple of
`.item()` numbers for logging: `return loss, (loss.item(), loss_seg.item(), ...)`. The caller keeps the numbers in
a metric's lists across iterations. Each part of a module's result was given the graphs of the module's arguments
("a memory handed in and returned"), so the numbers read as tensors whose graphs the lists keep alive."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

SCRIPT = """\
import torch
import torch.nn as nn


class Loss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l2_loss = nn.MSELoss()

    def forward(self, preds, gts):
        loss_a = self.l2_loss(preds[0], gts[0])
        loss_b = self.l2_loss(preds[1], gts[1])
        loss = loss_a + loss_b
        return loss, ({details})


class LossMetric:
    def __init__(self, keys):
        self.keys = keys
        self.metric = {{key: [] for key in keys}}

    def update(self, values):
        for i, key in enumerate(self.keys):
            self.metric[key].append(values[i])


def train(criterion, net, data, optim):
    loss_metric = LossMetric(keys=["total", "a", "b"])
    for x, ya, yb in data:
        loss, loss_details = criterion(net(x), (ya, yb))
        loss_metric.update(loss_details)
        optim.zero_grad()
        loss.backward()
        optim.step()


def main(data):
    net = nn.Linear(3, 2)
    train(Loss(), net, data, torch.optim.SGD(net.parameters(), lr=0.1))
"""


@pytest.mark.parametrize("details, kept", [
    ("loss.item(), loss_a.item(), loss_b.item()", False),
    ("float(loss), loss_a.item(), 0.0", False),
    # a tensor among them: the list keeps its graph
    ("loss.item(), loss_a.item(), loss_b", True),
])
def test_numbers_of_a_criterion_hold_no_graph(details: str, kept: bool) -> None:
    found = [(d.code, d.line) for d in analyse_text(SCRIPT.format(details=details), "train.py").diagnostics]
    assert (("GL008", 24) in found) is kept
