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


# A model's parameter written through `.data` (ParisaO's VQ codebook reset, lockbox 42: two certain GL008): each
# access of `weight.data` is a new detached alias; `weight` itself keeps `grad_fn` None (checked in torch 2.13).
CODEBOOK = """\
import torch
from torch import nn


class Quantizer(nn.Module):
    def __init__(self):
        super().__init__()
        self._embedding = nn.Embedding(8, 4)
{extra}
    def forward(self, x, reset):
        q = self._embedding(torch.cdist(x, self._embedding.weight).argmin(1))
        if reset:
            m = x[:2] + torch.randn(2, 4) / 100
            {store} = m
        return ((q - x) ** 2).mean()


encoder = nn.Linear(4, 4)
quantizer = Quantizer()
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(quantizer.parameters()))
for i in range(10):
    optimizer.zero_grad()
    loss = quantizer(encoder(torch.randn(16, 4)), i % 5 == 0)
    loss.backward()
    optimizer.step()
"""


def _codebook(store: str, extra: str = "") -> list[int]:
    return [d.line for d in check_source(CODEBOOK.format(store=store, extra=extra)) if d.code == "GL008"]


def test_an_item_written_into_a_parameters_data_keeps_no_graph() -> None:
    assert _codebook("self._embedding.weight.data[:2]") == []


def test_an_item_written_into_a_data_attribute_the_file_gives_a_module_keeps_the_graph() -> None:
    # `self.memory.data` is a dict the file made (`self.data = {}` in its class), not a tensor's alias: a new key on
    # every call keeps every graph
    memory = "class Memory(nn.Module):\n    def __init__(self):\n        super().__init__()\n" \
             "        self.data = {}\n        self.count = 0\n\n\n"
    source = CODEBOOK.format(store="self.memory.data[self.memory.count]", extra="        self.memory = Memory()\n")
    source = source.replace("class Quantizer", memory + "class Quantizer").replace(
        "            self.memory.data[self.memory.count] = m\n",
        "            self.memory.data[self.memory.count] = m\n            self.memory.count += 1\n")
    assert [d.line for d in check_source(source) if d.code == "GL008"] == [22]
