"""GL003: a loss divided by the count the step's gate waits for (`if self.n_backward == self.batchsize:`)
is divided by the window, whatever its name says of a per-sample count (pfrl's REINFORCE backpropagates
each episode's summed loss divided by `batchsize` and steps after `batchsize` episodes)."""

from __future__ import annotations

from gradcheck_lint import check_source

AGENT = """\
import torch


class Reinforce:
    def __init__(self, batchsize):
        self.model = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.batchsize = batchsize
        self.n_backward = 0
        self.losses = []

    def accumulate_grad(self):
        if self.n_backward == 0:
            self.optimizer.zero_grad()
        total_loss = {loss}
        total_loss.backward()
        self.losses = []
        self.n_backward += 1

    def update(self):
        self.optimizer.step()
        self.n_backward = 0

    def observe(self, obs, done):
        self.losses.append(self.model(obs).mean())
        if done:
            self.accumulate_grad()
            if self.n_backward == self.batchsize:
                self.update()
"""


def found(loss: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(AGENT.format(loss=loss))]


def test_divided_by_the_count_the_step_waits_for_is_silent() -> None:
    assert found("torch.stack(self.losses).sum() / self.batchsize") == []


def test_not_divided_is_reported() -> None:
    assert found("torch.stack(self.losses).sum()") == [(16, "GL003")]
