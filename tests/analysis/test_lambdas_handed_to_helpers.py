"""A lambda handed to a function that calls it runs there, seeing the names of the scope that made it (a closure):
FBNet's trainer hands its training step to a helper as `lambda x, y: self.train_w(x, y)`, the helper calls it and
puts the returned loss, graph and all, into a running meter (lockbox 28's GL008, missed: a lambda handed on was read
as nothing, and its `self` was not the method's)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

TRAINER = """\
import torch


class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.cnt = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.cnt += n


class Trainer:
    def __init__(self, network):
        self._mod = network
        self._loss_avg = AverageMeter()
        self.w_opt = torch.optim.SGD(network.parameters(), 0.1)

    def train_w(self, x, y):
        self.w_opt.zero_grad()
        loss = ((self._mod(x) - y) ** 2).mean()
        loss.backward()
        self.w_opt.step()
        return {returned}

    def _step(self, x, y, func):
        loss = func(x, y)
        self._loss_avg.update(loss)

    def search(self, batches):
        for x, y in batches:
            self._step(x, y, {handed})


Trainer(torch.nn.Linear(4, 1)).search(zip(torch.randn(6, 2, 4), torch.randn(6, 2, 1)))
"""


@pytest.mark.parametrize("handed", ["lambda a, b: self.train_w(a, b)", "self.train_w"])
def test_the_loss_a_handed_step_returns_is_kept_by_the_meter(handed: str) -> None:
    found = [(d.line, d.code) for d in check_source(TRAINER.format(handed=handed, returned="loss"))]
    assert found == [(10, "GL008")]


def test_a_handed_step_returning_a_number_keeps_nothing() -> None:
    text = TRAINER.format(handed="lambda a, b: self.train_w(a, b)", returned="loss.item()")
    assert [(d.line, d.code) for d in check_source(text)] == []


def test_the_lambda_sees_the_names_where_it_was_made_not_where_it_is_called() -> None:
    # the lambda's `scale` is the search loop's; the helper has a `scale` of its own, which the lambda does not see
    handed = "lambda a, b: self.train_w(a, b).detach() * scale"

    def variant(outer: str, inner: str) -> str:
        return TRAINER.format(handed=handed, returned="loss").replace(
            "        for x, y in batches:\n", f"        scale = {outer}\n        for x, y in batches:\n").replace(
            "        loss = func(x, y)\n", f"        scale = {inner}\n        loss = func(x, y)\n")

    # a number where the lambda was made, a graph in the helper: nothing kept
    assert [(d.line, d.code) for d in check_source(variant("0.5", "self._mod.weight.sum()"))] == []
    # a graph where the lambda was made: the meter keeps it
    assert [(d.line, d.code) for d in check_source(variant("self._mod.weight.sum()", "0.5"))] == [(10, "GL008")]
