"""Whose objective a backward pass is, when it reaches the parameters of two optimizers, only names say
(GL005): hypercl trains a task embedding on `loss_task`, then its hypernetwork on `loss_task` plus a
regulariser, as its docstring says, with the same structure as a GAN whose discriminator steps on the
generator's loss. A finding is `certain` only where the loss is named for the model whose optimizer stepped
it first (`g_loss` for the generator); otherwise the pass may be meant to train both (`possible`: lockbox 17,
two certain false alarms before)."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

TEXT = """\
import torch
from torch import nn


def train(loader):
    {first} = nn.Linear(4, 4)
    {second} = nn.Linear(4, 1)
    opt_{a} = torch.optim.Adam({first}.parameters())
    opt_{b} = torch.optim.Adam({second}.parameters())
    for x in loader:
        opt_{a}.zero_grad()
        opt_{b}.zero_grad()
        {loss_a} = {second}({first}(x)).mean()
        {loss_a}.backward()
        opt_{a}.step()
        {loss_b} = {second}(x).pow(2).mean()
        {loss_b}.backward()
        opt_{b}.step()
"""


@pytest.mark.parametrize(("names", "certainty"), [
    (dict(first="generator", second="discriminator", a="g", b="d", loss_a="g_loss", loss_b="d_loss"), "certain"),
    (dict(first="emb", second="theta", a="emb", b="theta", loss_a="loss_task", loss_b="loss_reg"), "possible"),
])
def test_certainty_of_a_leak_rests_on_whose_loss_it_is(names: dict[str, str], certainty: str) -> None:
    found = [d for d in analyse_text(TEXT.format(**names), "train.py").diagnostics if d.code == "GL005"]
    assert [(d.line, d.certainty.value) for d in found] == [(18, certainty)]
