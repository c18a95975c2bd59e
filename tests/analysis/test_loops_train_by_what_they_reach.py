"""A loop trains by what one run of it reaches, not by its text (`Counters.trains`): a backward reached
through a method of an object (`trainer.train_step(x, y)`, a class of this file or another) makes the loop
around it a training loop, so a graph summed across its iterations is kept alive (GL008)."""

from __future__ import annotations

from gradcheck_lint import check_source

SRC = """\
import torch


class Trainer:
    def __init__(self, net, optimizer):
        self.net = net
        self.optimizer = optimizer

    def train_step(self, x, y):
        self.optimizer.zero_grad()
        loss = ((self.net(x) - y) ** 2).mean()
        {backward}
        self.optimizer.step()
        return loss


def fit(data):
    total_loss = 0
    for x, y in data:
        total = util.train_step(x, y)
        total_loss += total
    return total_loss


model = torch.nn.Linear(4, 1)
util = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
fit([(torch.randn(2, 4), torch.randn(2, 1))] * 3)
"""


def codes(backward: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(SRC.format(backward=backward))]


def test_a_loop_training_through_an_object_method_keeps_the_summed_graphs() -> None:
    assert codes("loss.backward()") == [(21, "GL008")]


def test_a_loop_whose_calls_reach_no_backward_is_no_training_loop() -> None:
    # the same loop over a method that only evaluates: no backward ran in it, nothing is reported there
    assert [c for c in codes("pass") if c[1] == "GL008"] == []
