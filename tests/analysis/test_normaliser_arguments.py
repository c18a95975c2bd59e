"""An argument named like a count divides a loss only in a call handed that loss: `torch.zeros(n, n,
dtype=accumulator_dtype)` makes a buffer and divides nothing, and a tensor's options (`dtype=`, `device=`) are no count.
AQLM's engine registered such a buffer and its MSE went through it: a false certain GL010 "divided by
`accumulator_dtype` for accumulation" (lockbox 22, after its opening). A helper handed the loss and a count
(`normalise(loss, grad_accum)`) still divides it."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text

ENGINE = '''
import torch
from torch import nn


class Engine(nn.Module):
    def __init__(self, layer, accumulator_dtype=torch.float64):
        super().__init__()
        self.layer = layer
        self.register_buffer("XTX", torch.zeros((4, 4), dtype=accumulator_dtype))
        self.q = nn.Linear(4, 4)

    def fit(self, steps):
        opt = torch.optim.Adam(self.q.parameters(), lr=1e-3)
        for step in range(steps):
            loss = self.mse()
            opt.zero_grad()
            loss.backward()
            opt.step()

    def mse(self):
        delta = (self.q.weight - self.layer.weight.detach()).to(self.XTX.dtype)
        return (delta @ self.XTX).flatten() @ delta.flatten() / 4
'''

HELPER = '''
import torch
from torch import nn

from losses import normalise


def train(loader, grad_accum):
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = normalise(nn.functional.mse_loss(model(x), y), grad_accum)
        loss.backward()
        opt.step()
        opt.zero_grad()
'''


def codes(text: str) -> list[str]:
    return [d.code for d in analyse_text(text, "train.py").diagnostics]


def test_a_buffer_made_with_a_dtype_named_like_accumulation_divides_no_loss() -> None:
    assert codes(ENGINE) == []
    assert codes(ENGINE.replace("dtype=accumulator_dtype", "device=accum_device")) == []


def test_a_helper_handed_the_loss_and_a_count_divides_it() -> None:
    assert codes(HELPER) == ["GL010"]
