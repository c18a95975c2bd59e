"""An item stored into a NumPy array is converted to a number: the array keeps no graph (GL008).

FewTURE (lockbox 11, after its opening: it does not count there) records each episode's loss with
`train_loss_record = np.zeros(n)` ... `train_loss_record[i - 1] = loss`. NumPy stores the value (a tensor that
requires grad cannot be stored at all); read as a buffer that keeps the tensor, it was a certain GL008. A torch
buffer does keep the graph: the copy into it is recorded (`CopySlices`)."""

from __future__ import annotations

from gradcheck_lint.engine import analyse_text


def found(text: str) -> list[tuple[str, int]]:
    return sorted((d.code, d.span.line) for d in analyse_text(text, "train.py").diagnostics)


LOOP = """\
import numpy as np
import torch


def train(model, loader, optimizer, n):
    record = BUFFER
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record[i] = loss
    return record.mean()
"""


def test_a_numpy_array_stores_the_number() -> None:
    assert found(LOOP.replace("BUFFER", "np.zeros(n)")) == []
    assert found(LOOP.replace("BUFFER", "np.empty((n,))")) == []


def test_a_torch_buffer_keeps_the_graph() -> None:
    assert found(LOOP.replace("BUFFER", "torch.zeros(n)")) == [("GL008", 12)]


def test_a_name_also_bound_to_something_else_is_not_known_to_be_an_array() -> None:
    text = LOOP.replace("BUFFER", "np.zeros(n)").replace("    for i,", "    if n > 10:\n        record = [0.0] * n\n    for i,")
    assert found(text) == [("GL008", 14)]
