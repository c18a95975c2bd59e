"""A statement-form type guard narrows as the conditional expression does: `if isinstance(val, torch.Tensor): val =
val.detach().item()` leaves, on the other arm, a value that is no tensor, so no graph (the fixed AverageMeter of
lockbox 8's lichpcm bug: a certain GL008 on a correct fix). A container built in sight keeps its items until its
own kinds are ruled out."""

from __future__ import annotations

import pytest

from gradcheck_lint.api import check_source

METER = '''
import torch


class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        if isinstance(val, torch.Tensor):
            val = val.detach().item()
        self.sum += val * n
        self.count += n


model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    meter = AverageMeter()
    for x in torch.randn(10, 8, 4):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        meter.update(loss, x.size(0))
'''
GUARD = """        if isinstance(val, torch.Tensor):
            val = val.detach().item()
"""


@pytest.mark.parametrize("guard", [
    GUARD,
    GUARD.replace("isinstance(val, torch.Tensor)", "torch.is_tensor(val)"),
    GUARD.replace(".detach().item()", ".item()"),
])
def test_a_guarded_detach_leaves_no_graph_on_either_arm(guard: str) -> None:
    assert [d.code for d in check_source(METER.replace(GUARD, guard))] == []


def test_the_unguarded_meter_keeps_every_graph() -> None:
    assert [d.code for d in check_source(METER.replace(GUARD, ""))] == ["GL008"]


def test_a_container_built_in_sight_is_not_narrowed_by_a_tensor_test() -> None:
    src = """
import torch
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for x in torch.randn(10, 8, 4):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    record = {"loss": loss}
    if isinstance(record, torch.Tensor):
        record = record.detach()
    history.append(record)
"""
    assert [d.code for d in check_source(src)] == ["GL008"]
