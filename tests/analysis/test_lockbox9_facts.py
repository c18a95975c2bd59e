"""Facts of lockbox 9's false alarms, found after its opening (they do not count on it): items of a tuple handed in
are two objects (`optimizer[0]`, `optimizer[1]`), not the tuple stepped twice."""

from __future__ import annotations

from gradcheck_lint.api import check_source

TUPLE = '''
import torch


def train(model, optimizer, loader):
    for inputs, labels in loader:
        outputs = model(inputs)
        loss = torch.nn.functional.cross_entropy(outputs, labels)
        loss.backward()
        if isinstance(optimizer, tuple):
            optimizer[0].step()
            optimizer[1].step()
            optimizer[0].zero_grad()
            optimizer[1].zero_grad()
        else:
            optimizer.step()
            optimizer.zero_grad()
'''


def test_items_of_a_tuple_of_optimizers_are_two_optimizers() -> None:
    """TFC's CLOCS: each item stepped, then each cleared; the else arm steps the one optimizer."""
    assert check_source(TUPLE) == []
