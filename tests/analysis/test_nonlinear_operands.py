"""A factor of an operand does not pass through a nonlinear function (`apimodels/torch_nonlinear.toml`):
`F.cross_entropy(logits / T, y)` is not the loss divided by `T`, and a temperature on the logits is no
division of the loss by the accumulation window (lockbox 17's justgrpo GL003 was missed behind
`model(x).logits / temperature` taken for "an unknown divisor that may well be N")."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

TEXT = """\
import torch
import torch.nn.functional as F

model = torch.nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum = 4
T = 2.0
for i, (x, y) in enumerate(loader):
    logits = model(x) / T
    loss = {loss}
    loss.backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
"""


@pytest.mark.parametrize(("loss", "gl003"), [
    ("F.cross_entropy(logits, y)", True),
    ("-F.log_softmax(logits, dim=-1).gather(1, y[:, None]).mean()", True),
    ("(logits.exp() - y).pow(2).mean()", True),
    ("F.mse_loss(logits, y)", True),
    # a factor that does pass: a mean, a sum, `relu`, `F.nll_loss` are linear in a positive factor
    ("logits.relu().mean()", False),
    ("F.nll_loss(logits, y)", False),
    ("F.cross_entropy(model(x), y) / T", False),  # the loss itself divided: `T` may be the window
])
def test_factor_inside_a_nonlinear_function_is_no_loss_scale(loss: str, gl003: bool) -> None:
    found = {d.code for d in analyse_text(TEXT.format(loss=loss), "train.py").diagnostics}
    assert ("GL003" in found) is gl003
