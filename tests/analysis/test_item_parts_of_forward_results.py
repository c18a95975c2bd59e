"""A module whose `forward` returns the loss beside a number `.item()` made (`return loss, loss.item()`, DARTS'
separate loss `return loss1 + w * loss2, loss1.item(), loss2.item()`): the number holds no graph. The result of
`.item()` was read as nothing known, not as an object, so the part was taken to hold the forward's graph: a certain
GL008 where the caller logs it (FairDARTS, lockbox 34 after its opening), with a `[*]` fix calling `.item()` on a
float. A function returning the same was read right; a part holding the loss still keeps the graph."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

LOOP = """\
import torch
import torch.nn as nn

history = []
model = nn.Linear(4, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


class Criterion(nn.Module):
    def forward(self, out, y):
        loss = ((out - y) ** 2).mean()
        return loss, {part}


def criterion_fn(out, y):
    loss = ((out - y) ** 2).mean()
    return loss, {part}


criterion = Criterion()
for x, y in [(torch.randn(5, 4), torch.randn(5, 3))] * 3:
    optimizer.zero_grad()
    loss, value = {call}(model(x), y)
    loss.backward()
    optimizer.step()
    history.append(value)
"""


def gl008(call: str, part: str) -> list[int]:
    return [d.line for d in check_source(LOOP.format(call=call, part=part)) if d.code == "GL008"]


@pytest.mark.parametrize("call", ["criterion", "criterion_fn"])
@pytest.mark.parametrize("part", ["loss.item()", "loss.detach()", "float(loss)"])
def test_a_number_beside_the_loss_holds_no_graph(call: str, part: str) -> None:
    assert gl008(call, part) == []


@pytest.mark.parametrize("call", ["criterion", "criterion_fn"])
def test_the_loss_itself_beside_it_keeps_the_graph(call: str) -> None:
    assert gl008(call, "loss * 2") == [26]
