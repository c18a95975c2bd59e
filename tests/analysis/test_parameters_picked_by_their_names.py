"""Parameters picked by their names: `{n for n, p in net.named_parameters() if n.endswith(".quantiles")}`, then an optimizer
over `params_dict[n] for n in sorted(names)` (CompressAI's `configure_optimizers`, copied by many compression
projects: unofficial-FVC of lockbox 35, a certain GL001 false alarm, read). Each optimizer updates the part its test
picks, not the whole model; that the main loss reaches the auxiliary pick at all is not read, so a staleness that
rests on it is possible only. A missing clear of the auxiliary optimizer's own loss stays certain."""

from __future__ import annotations

import pytest

from gradcheck_lint.api import check_source

SCRIPT = """\
import torch
from torch import nn, optim


class Codec(nn.Module):
    def __init__(self):
        super().__init__()
        self.g_a = nn.Linear(4, 4)
        self.quantiles = nn.Parameter(torch.zeros(4, 3))

    def forward(self, x):
        return self.g_a(x)

    def aux_loss(self):
        return self.quantiles.abs().sum()


def configure_optimizers(net):
    parameters = {n for n, p in net.named_parameters() if not n.endswith("quantiles") and p.requires_grad}
    aux_parameters = {n for n, p in net.named_parameters() if n.endswith("quantiles") and p.requires_grad}
    params_dict = dict(net.named_parameters())
    optimizer = optim.Adam((params_dict[n] for n in sorted(parameters)), lr=1e-4)
    aux_optimizer = optim.Adam((params_dict[n] for n in sorted(aux_parameters)), lr=1e-3)
    return optimizer, aux_optimizer


def train(batches):
    net = Codec()
    optimizer, aux_optimizer = configure_optimizers(net)
    for x in batches:
        optimizer.zero_grad()
        AUX_CLEAR
        loss = (net(x) - x).pow(2).mean()
        loss.backward()
        optimizer.step()
        aux_loss = net.aux_loss()
        aux_loss.backward()
        aux_optimizer.step()


train([torch.randn(2, 4) for _ in range(3)])
"""


@pytest.mark.parametrize("aux_clear, expected", [
    ("aux_optimizer.zero_grad()", []),
    ("pass", [("GL001", 38, "certain")]),
])
def test_two_optimizers_over_parts_picked_by_name(aux_clear: str, expected: list) -> None:
    found = [(d.code, d.line, d.certainty.value) for d in check_source(SCRIPT.replace("AUX_CLEAR", aux_clear), "t.py")]
    assert [f for f in found if f[2] == "certain"] == expected, found
