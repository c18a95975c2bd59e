"""An item written into `x.data` of a tensor a torch call made (`delta.data[idx] = (delta + alpha * g)[idx]`): each
access of `.data` is a new alias detached from `x`'s graph, so the write gives that alias, dropped at once, a graph and
`x` none (CharlesJames' PGD, lockbox 32: two certain GL008). The same write into the tensor itself keeps each
iteration's graph in it."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

LOOP = """\
import torch
import torch.nn.functional as F

model = torch.nn.Linear(4, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
history = torch.zeros(10, 3)
for i, (x, y) in enumerate([(torch.randn(5, 4), torch.randint(0, 3, (5,)))] * 10):
    out = model(x)
    loss = F.cross_entropy(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    {store} = out.mean(0)
"""


def gl008(store: str) -> list[int]:
    return [d.line for d in check_source(LOOP.format(store=store)) if d.code == "GL008"]


@pytest.mark.parametrize("store", ["history.data[i]", "history.data[i, :]"])
def test_an_item_written_into_a_tensors_data_keeps_no_graph(store: str) -> None:
    assert gl008(store) == []


def test_an_item_written_into_the_tensor_keeps_each_iterations_graph() -> None:
    assert gl008("history[i]") == [13]


def test_data_of_a_container_the_code_made_is_not_a_tensor_alias() -> None:
    source = LOOP.replace("history = torch.zeros(10, 3)", "history = Record()")
    assert [d.line for d in check_source(source.format(store="history.data[i]")) if d.code == "GL008"] == [13]
