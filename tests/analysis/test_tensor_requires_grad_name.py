"""`x.requires_grad_()` is a method of tensors as well as of modules: a name switched so is a model only when
nothing in the file uses it as a tensor. ai-toolkit re-flags a detached loss (`loss = loss.detach();
loss.requires_grad_(True)`) in one method, and every `loss` of the file whose value the analysis could not
follow became a model, so `loss.backward()` was no training event anywhere (lockbox 2, a miss)."""

from __future__ import annotations

import ast

import pytest

from gradcheck_lint.analysis.apimodels import catalogue_for
from gradcheck_lint.analysis.prescan import Prescan
from gradcheck_lint.engine import analyse_text


def model_refs(text: str) -> frozenset[str]:
    return Prescan(ast.parse(text), catalogue_for()).evidence()[0]


def gl002(text: str) -> set[int]:
    return {d.span.line for d in analyse_text(text, "trainer.py").diagnostics if d.code == "GL002"}


TRAINER = """\
import torch


class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def guided_loss(self, batch):
        loss = self.model(batch).pow(2).mean()
        loss.backward()
        loss = loss.detach()
        loss.requires_grad_(True)
        return loss

    def micro_batch(self, batch):
        loss = self.model(batch).pow(2).mean()
        loss.backward()
        return loss.detach()

    def train_step(self, batch_list):
        for batch in batch_list:
            self.optimizer.zero_grad()
            self.micro_batch(batch)
{step}
"""


@pytest.mark.parametrize(("step", "expected"), [
    ("        self.optimizer.step()", {23}),  # only the last micro-batch reaches the step
    ("            self.optimizer.step()", set()),  # a step for each micro-batch: right
])
def test_a_loss_made_to_require_grad_elsewhere_is_still_a_loss(step: str, expected: set[int]) -> None:
    assert gl002(TRAINER.format(step=step)) == expected


def test_a_name_switched_and_used_as_a_tensor_is_no_model() -> None:
    assert "loss" not in model_refs("loss = f(x)\nloss.backward()\nloss = loss.detach()\nloss.requires_grad_(True)\n")
    assert "x" not in model_refs("x = y.clone()\nx.requires_grad_()\nprint(x.item())\n")


def test_a_module_switched_is_still_a_model() -> None:
    """`netD.requires_grad_(False)` on a module handed in is what says it is one (a GAN freezing D)."""
    assert "netD" in model_refs("def train(netD, fake):\n    netD.requires_grad_(False)\n    out = netD(fake)\n")
    assert "self.disc" in model_refs("self.disc.requires_grad_(False)\n")
