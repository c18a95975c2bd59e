"""A clear in a loop over the parameters under a test that chooses among them is a per-parameter freeze,
not a clear of the step's gradients (GL002 stays silent): GPM zeroes its norm parameters' gradients by
index and shape, Cream drops gradients that are all zero. A test that only asks whether a parameter has a
gradient chooses nothing: that clear, between backward and step, is GL002."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

LOOP = """\
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, task_id in batches:
    optimizer.zero_grad()
    loss = model(x).mean()
    loss.backward()
    for k, p in enumerate(model.parameters()):
        if {test}:
            {clear}
    optimizer.step()
"""


@pytest.mark.parametrize(("test", "clear"), [
    ("k < 4 and p.dim() == 1 and task_id != 0", "p.grad.data.fill_(0)"),
    ("p.grad is not None and p.grad.sum() == 0", "p.grad = None"),
    ("not (p.grad is None or p.grad.abs().sum() > 0)", "p.grad.zero_()"),
])
def test_a_clear_that_chooses_parameters_is_a_freeze(test: str, clear: str) -> None:
    assert [d.code for d in check_source(LOOP.format(test=test, clear=clear), "train.py")] == []


@pytest.mark.parametrize(("test", "clear"), [
    ("p.grad is not None", "p.grad.zero_()"),
    ("p.grad is not None", "p.grad = None"),
    ("p.requires_grad and p.grad is not None", "p.grad.zero_()"),
])
def test_a_clear_that_only_asks_for_a_gradient_is_gl002(test: str, clear: str) -> None:
    assert [(d.code, d.span.line) for d in check_source(LOOP.format(test=test, clear=clear), "train.py")] == [("GL002", 12)]
