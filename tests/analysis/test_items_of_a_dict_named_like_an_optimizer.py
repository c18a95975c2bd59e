"""Items of a dict a library built, the dict named like an optimizer (CompressAI's `optimizer =
net_aux_optimizer(net, conf)`, then `return optimizer["net"], optimizer["aux"]`): the name is taken for an optimizer
by how another function of the file uses it, but an optimizer is no mapping, so the two items are two objects made
out of sight, not that optimizer twice (ParisaO's train_comp_ai.py, lockbox 42: each optimizer cleared every
iteration, read as one optimizer stepped twice after one clear, a certain GL001)."""

from __future__ import annotations

import pytest

from gradcheck_lint import check_source

SCRIPT = """\
import torch
from compressai.optimizers import net_aux_optimizer


def configure_optimizers(net, lr):
    optimizer = net_aux_optimizer(net, {{"net": {{"type": "Adam", "lr": lr}}, "aux": {{"type": "Adam", "lr": lr}}}})
    return optimizer["net"], optimizer["aux"]


def train_one_epoch(model, loader, optimizer, aux_optimizer):
    for d in loader:
        optimizer.zero_grad()
{aux_clear}
        loss = model(d).mean()
        loss.backward()
        optimizer.step()
        aux_loss = model.aux_loss()
        aux_loss.backward()
        aux_optimizer.step()


def main():
    net = torch.nn.Linear(4, 4)
    optimizer, aux_optimizer = configure_optimizers(net, 1e-3)
    for epoch in range(3):
        train_one_epoch(net, [torch.randn(2, 4)], optimizer, aux_optimizer)


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(("aux_clear", "expected"), [
    ("        aux_optimizer.zero_grad()", []),
    ("        pass", [(19, "GL001")]),  # the auxiliary optimizer never cleared: its own loss's gradients pile up
])
def test_two_items_of_a_dict_named_like_an_optimizer_are_two_objects(aux_clear: str,
                                                                     expected: list[tuple[int, str]]) -> None:
    found = check_source(SCRIPT.format(aux_clear=aux_clear), "train.py")
    assert [(d.line, d.code) for d in found] == expected
