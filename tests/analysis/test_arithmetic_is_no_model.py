"""A name bound to the result of arithmetic (`loss = loss * (1 + penalty)`) is a tensor or a number, never a
module: a `loss.requires_grad_(True)` elsewhere switches a tensor, not a model's parameters
(`analysis/prescan.py`). pytorch-forecasting's `BaseModel.step` (lockbox 2) calls it on its loss on Apple
devices; taken for a model, the loss lost the graph of the forward pass that built it, and GL008 missed the
loss kept in `self.training_step_outputs`."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch
import torch.nn.functional as F

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for x, y in loader:
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    {weighting}
    if loss.device.type == "mps":
        loss.requires_grad_(True)
    (loss + 0.01 * model.weight.pow(2).sum()).backward()
    optimizer.step()
    history.append(loss)
"""


def codes(text: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in analyse_text(text, "train.py").diagnostics]


@pytest.mark.parametrize("weighting", ["loss = loss * (1 + penalty)", "loss = 2.0 * loss", "loss = loss / n + 0.1"])
def test_a_loss_rescaled_by_arithmetic_stays_a_tensor_when_switched_to_require_grad(weighting: str) -> None:
    assert codes(LOOP.format(weighting=weighting)) == [(15, "GL008")]


def test_a_list_of_modules_joined_with_plus_is_no_arithmetic() -> None:
    text = """\
import torch

layers = [torch.nn.Linear(4, 4)]
layers = layers + [torch.nn.Linear(4, 1)]
head = torch.nn.Sequential(*layers)
for p in head.parameters():
    p.requires_grad_(False)
"""
    assert codes(text) == []
