"""An argument whose value was read in code is not "of unknown origin" (`Inlining._run_inlined`): tape's
`run_train_epoch(loader, runner)` is handed a `BackwardRunner` built by its caller, and `runner.train()`
calls that class's own `train` method. Before, a parameter used like a model somewhere in the module
(`x.train()`, `x.parameters()`) was given a model of its own whatever the caller handed in, and the
runner's backward and step no longer reached the caller's optimizer (lockbox 18, after its opening:
an undivided window missed). An argument nothing is known of still becomes a model by that use."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

RUNNER = """\
import torch
from torch import nn


class BackwardRunner:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def forward(self, batch):
        return self.model(batch).mean()

    def backward(self, loss):
        loss.backward()

    def train(self):
        self.model.train()
        return self

    def step(self):
        self.optimizer.step()
        self.optimizer.zero_grad()


def run_train_epoch(loader, runner, accum):
    {switch}
    for step, batch in enumerate(loader):
        loss = runner.forward(batch){scale}
        runner.backward(loss)
        if (step + 1) % accum == 0:
            runner.step()


def main(loader, accum):
    model = nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters())
    runner = BackwardRunner(model, optimizer)
    for epoch in range(3):
        run_train_epoch(loader, runner, accum)
"""


@pytest.mark.parametrize("switch", ["runner.train()", "pass"])
@pytest.mark.parametrize(("scale", "gl003"), [("", True), (" / accum", False)])
def test_runner_of_a_read_class_keeps_its_methods(switch: str, scale: str, gl003: bool) -> None:
    found = [d for d in analyse_text(RUNNER.format(switch=switch, scale=scale), "train.py").diagnostics
             if d.code == "GL003"]
    assert bool(found) is gl003
    if found:
        assert found[0].line == 14  # `loss.backward()` in `BackwardRunner.backward`


UNKNOWN = """\
import torch


def fit(model, loader, make_batch):
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        loss = model(make_batch(x)).mean()
        loss.backward()
        opt.step()


def main(loader, build):
    fit(build(), loader, lambda x: x)
"""


def test_argument_of_unknown_origin_is_still_a_model_by_its_use() -> None:
    found = {d.code for d in analyse_text(UNKNOWN, "train.py").diagnostics}
    assert "GL001" in found
