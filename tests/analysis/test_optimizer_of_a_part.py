"""An optimizer a module builds over its own parameters still updates them once the module is a part of another
(`self.a = Net(4)` in a parent module's `__init__`, `Net.__init__` building `self.optimizer`): the forward through
the parent fills the part's holder under the parent, and the optimizer's step applies it (synthcity's
TimeSeriesModel in TimeSeriesGAN, lockbox 11, after its opening: it does not count there). Before, the step
applied nothing the analysis knew, and a missing clear went unseen."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int]]:
    return sorted((d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics)


GAN = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)
        self.optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)

    def forward(self, x):
        return self.fc(x)


class GAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Net(4)

    def train_a(self, x):
        CLEAR
        loss = self.a(x).sum()
        loss.backward()
        self.a.optimizer.step()


gan = GAN()
for x in loader:
    gan.train_a(x)
"""


def test_the_parts_own_optimizer_steps_what_the_parents_forward_filled() -> None:
    assert found(GAN.replace("        CLEAR\n", "")) == [("GL001", 23)]
    assert found(GAN.replace("CLEAR", "self.a.optimizer.zero_grad()")) == []
    assert found(GAN.replace("CLEAR", "self.zero_grad()")) == []  # the parent's clear reaches its parts
