"""`optim.step(loss)` of an optimizer class no API model describes is read as a wrapper that clears,
back-propagates the loss and steps (tianshou and other RL libraries do), but only by assumption: torchopt's
differentiable `MetaSGD.step(loss)` differentiates with `torch.autograd.grad` and writes no `.grad`. What rests on
the gradients that step wrote is not certain (lockbox 27's torchopt tutorial: three certain GL002 on the
meta-optimizer's clear, judged false)."""

from __future__ import annotations

from gradcheck_lint import check_source

TORCHOPT = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchopt

net = nn.Linear(16, 1)
x = torch.randn(64, 16)
y = torch.zeros(64, 1)
meta_parameter = nn.Parameter(torch.tensor(1.0), requires_grad=True)
optim = torchopt.MetaSGD(net, lr=1e-1)
meta_optim = torch.optim.Adam([meta_parameter], lr=1e-1)
inner_loss = F.mse_loss(net(x), y)
loss = inner_loss * meta_parameter
optim.step(loss)
outer_loss = F.mse_loss(net(x), y)
meta_optim.zero_grad()
outer_loss.backward()
meta_optim.step()
"""


def test_a_differentiable_optimizer_step_writes_no_gradient_for_sure() -> None:
    assert [(d.line, d.code) for d in check_source(TORCHOPT) if not d.possible] == []


def test_a_wrapper_step_of_a_loss_still_clears_and_steps_on_every_path() -> None:
    # tianshou-style: nothing else clears, and nothing is reported, certain or possible
    text = """\
import torch
from somelib import WrappedOptimizer

model = torch.nn.Linear(4, 1)
optim = WrappedOptimizer(model.parameters(), lr=0.1)
for x in torch.randn(10, 2, 4):
    loss = model(x).pow(2).mean()
    optim.step(loss)
"""
    assert [(d.line, d.code) for d in check_source(text)] == []
    assert [(d.line, d.code) for d in check_source(text.replace("optim.step(loss)", "loss.backward()\n    optim.step()"))] \
        == [(9, "GL001")]
