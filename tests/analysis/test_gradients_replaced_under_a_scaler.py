"""GL007: gradients replaced outright while a scaler still scales them (`p.grad.fill_(0.01)`, `p.grad.copy_(fake)`)
are values the code wrote, not the backward's gradients changed: whether they were meant in the scaled units is
what the author meant, not read (accelerate's tests/test_optimizer.py fakes gradients to see the step skipped or
taken: four certain false alarms of a sweep). Noise added to the scaled gradients, or a clamp, stays certain."""

from __future__ import annotations

import pytest

from gradcheck_lint.api import check_source

SCRIPT = """\
import torch

model = torch.nn.Linear(5, 5)
optimizer = torch.optim.SGD(model.parameters(), 0.1)
scaler = torch.cuda.amp.GradScaler()
for x in torch.randn(3, 2, 5):
    optimizer.zero_grad()
    loss = model(x).sum()
    scaler.scale(loss).backward()
    for p in model.parameters():
        WRITE
    scaler.step(optimizer)
    scaler.update()
"""


@pytest.mark.parametrize("write, certainty", [
    ("p.grad.fill_(0.01)", "possible"),
    ("p.grad.copy_(torch.ones_like(p))", "possible"),
    ("p.grad.add_(torch.randn_like(p) * 0.01)", "certain"),
    ("p.grad.clamp_(-1.0, 1.0)", "certain"),
    ("p.grad.copy_(p.grad.clamp(-1.0, 1.0))", "certain"),
])
def test_a_write_in_place_of_the_gradients_is_only_possibly_a_misuse(write: str, certainty: str) -> None:
    found = [(d.code, d.line, d.certainty.value) for d in check_source(SCRIPT.replace("WRITE", write), "train.py")]
    assert ("GL007", 11, certainty) in found, found
