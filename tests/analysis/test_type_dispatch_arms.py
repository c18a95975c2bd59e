"""`isinstance` chains that dispatch on a value's type (`analysis/type_tests.py`): the arm reached when the
value is no tensor, no dict, no list and no tuple holds no graph, whatever the analysis took the value for.
pytorch-forecasting's fix (lockbox 2) stores `detach(log)`, a helper that detaches a tensor, a dict's or a
list's items, and returns anything else unchanged (`else: return x`); with every arm run, that last arm
handed back the dict with its loss's graph, a false GL008 on the fixed version."""

from __future__ import annotations

import pytest

from gradcheck_lint.engine import analyse_text

LOOP = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def detach(x):
    if isinstance(x, torch.Tensor):
        return x.detach()
    elif isinstance(x, dict):
        return {{name: detach(xi) for name, xi in x.items()}}
    elif isinstance(x, {sequences}):
        return [detach(xi) for xi in x]
    else:
        return x


outputs = []
for x, y in loader:
    optimizer.zero_grad()
    loss = (model(x) - y).pow(2).mean()
    loss.backward()
    optimizer.step()
    outputs.append(detach({stored}))
"""


def gl008(text: str) -> list[int]:
    return [d.span.line for d in analyse_text(text, "train.py").diagnostics if d.code == "GL008"]


@pytest.mark.parametrize("stored", ["loss", "{'loss': loss, 'n': len(x)}", "[loss, loss * 2]"])
def test_a_helper_detaching_every_kind_it_lists_stores_no_graph(stored: str) -> None:
    assert gl008(LOOP.format(sequences="(list, tuple)", stored=stored)) == []


def test_a_helper_that_leaves_tuples_to_its_last_arm_passes_their_graphs_through() -> None:
    """Without `tuple` in the chain, a tuple reaches `return x` with its losses: still kept."""
    text = LOOP.format(sequences="list", stored="(loss, loss * 2)")
    assert gl008(text) == [len(text.splitlines())]


def test_a_helper_without_the_tensor_arm_passes_a_tensor_through() -> None:
    text = LOOP.format(sequences="(list, tuple)", stored="loss").replace("isinstance(x, torch.Tensor)", "x is None")
    assert gl008(text) == [len(text.splitlines())]


def test_a_test_of_the_tensor_type_alone_keeps_what_the_other_arm_reads() -> None:
    """`if not isinstance(out, Tensor): out = out[0]`: ruling out a tensor says nothing of the tuple's items."""
    text = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0.0
for x in loader:
    optimizer.zero_grad()
    out = model(x)
    if isinstance(out, torch.Tensor):
        pred = out
    else:
        pred = out[0]
    loss = pred.pow(2).mean()
    loss.backward()
    optimizer.step()
    total += pred.mean()
"""
    assert gl008(text) == [16]


AVERAGER = """\
import torch
from torch.autograd import Variable


class Averager:
    def __init__(self):
        self.sum = 0

    def add(self, v):
        if isinstance(v, {first}):
            v = v.data.sum()
        elif isinstance(v, torch.Tensor):
            v = v.sum()
        else:
            raise TypeError(type(v))
        self.sum += v


model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
average = Averager()
for x in loader:
    optimizer.zero_grad()
    loss = model(x).mean()
    loss.backward()
    optimizer.step()
    average.add(loss)
"""


def test_an_arm_whose_types_an_earlier_test_ruled_out_is_never_taken() -> None:
    """crnn.pytorch's averager (lockbox 3): `Variable` is the tensor type since PyTorch 0.4, so every tensor
    takes the first arm (`v.data.sum()`: no graph), and the `elif isinstance(v, torch.Tensor)` arm that
    would keep the graph cannot be reached."""
    assert gl008(AVERAGER.format(first="Variable")) == []
    # a test of another type leaves the tensor to the second arm, which keeps its graph
    assert gl008(AVERAGER.format(first="dict")) == [16]
